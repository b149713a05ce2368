"""Input an attacker or a broken client sends: never a 500, never a changed store."""

from __future__ import annotations

import httpx

from tests.app.conftest import TetherServer


def test_nul_in_ids_is_not_found_not_a_server_error(alice: httpx.Client, api_server: TetherServer) -> None:
    for path in (
        "/api/agent/sessions/ses-%00x",
        "/api/agent/dsl/dsl-%00",
        "/api/reports/rpt-%00.html",
        "/api/agent/sessions/a%00b/events",
    ):
        r = alice.get(path)
        assert r.status_code == 404, (path, r.status_code, r.text)
    r = alice.post("/api/agent/tool-callback", json={"externalJobId": "job-\u0000", "status": "SUCCEEDED"})
    assert r.status_code == 422 and r.json()["field"] == "externalJobId"


def test_non_finite_numbers_in_global_context_are_refused(alice: httpx.Client) -> None:
    body = '{"message": "hello", "globalContext": {"budget": NaN}}'
    r = alice.post("/api/agent/sessions", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "globalContext"


def test_an_unpaired_surrogate_in_a_json_body_is_refused_before_any_route(alice: httpx.Client) -> None:
    """JSON can escape a lone UTF-16 surrogate, and Python decodes it (and its raw UTF-8 bytes): it
    used to travel until a stored body or an audit hash encoded it — a 500."""
    sent = {
        '{"message": "hi", "globalContext": {"k": "\\ud800"}}': "globalContext.k",
        '{"message": "hi", "globalContext": {"\\udc00": 1}}': "globalContext.\\udc00",
        '{"message": "hi \\ud83d"}': "message",
        '{"messages": [{"id": "m", "content": "\\ude00\\ud83d"}]}': "messages.0.content",
    }
    for body, field in sent.items():
        for path in ("/api/agent/sessions", "/tools/find-forms", "/api/agui", "/api/agent/dsl/dsl-x/execute"):
            r = alice.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 422 and "unpaired UTF-16 surrogate" in r.json()["error"], (path, body, r.text)
            assert r.json()["field"] == field, (body, r.text)
    raw = b'{"message": "hi \xed\xa0\x80"}'
    r = alice.post("/api/agent/sessions", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    # a real pair, an escaped backslash before "ud800", and text that only mentions \\ud800 are fine
    for body in ('{"message": "hi \\ud83d\\ude00"}', '{"message": "C:\\\\ud800"}'):
        r = alice.post("/api/agent/sessions", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 200, (body, r.text)


def test_agui_input_nested_past_the_decoder_is_a_422(alice: httpx.Client) -> None:
    body = "[" * 5000 + "]" * 5000
    r = alice.post("/api/agui", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "nests too deeply" in r.text, r.text
