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
