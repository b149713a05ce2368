"""The HTTP contract over a real ``tether serve`` process: sessions, callbacks, DSL, ownership,
bad input, and the one-turn-per-session rule. The planner model drives the example pack."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.app.conftest import (
    TetherServer,
    assert_contiguous,
    get_session,
    post_callback,
    runtime_events,
    tool_messages,
    wait_status,
    wait_until,
)

pytestmark = pytest.mark.slow

SESSION_KEYS = {
    "sessionId",
    "status",
    "title",
    "archived",
    "query",
    "globalContext",
    "transcript",
    "executedSteps",
    "selectedSkillIds",
    "pendingInteraction",
    "waitingExternalJobId",
    "createdAt",
    "updatedAt",
}
ORDER_QUESTION = "What is order A-1001 in EUR, and can I get a shipping quote?"


def create(client: httpx.Client, message: str, **body: Any) -> dict[str, Any]:
    r = client.post("/api/agent/sessions", json={"message": message, **body})
    assert r.status_code == 200, r.text
    session: dict[str, Any] = r.json()
    return session


def waiting_order_session(client: httpx.Client) -> dict[str, Any]:
    s = create(client, ORDER_QUESTION)
    assert s["status"] == "WAITING_ASYNC_CALLBACK", s.get("lastError")
    return s


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def stays(fn: Any, value: Any, seconds: float = 0.5) -> None:
    """``fn()`` keeps returning ``value`` for ``seconds`` (for 'nothing else happens' checks)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert fn() == value
        time.sleep(0.05)


# ---- the meta endpoints ---------------------------------------------------------------------------


def test_openapi_and_docs(api_server: TetherServer) -> None:
    with api_server.client(None) as anon:
        spec = anon.get("/openapi.json")
        assert spec.status_code == 200
        paths = spec.json()["paths"]
        for path in (
            "/api/agent/sessions",
            "/api/agent/sessions/{session_id}",
            "/api/agent/sessions/{session_id}/messages",
            "/api/agent/sessions/{session_id}/resume",
            "/api/agent/sessions/{session_id}/events",
            "/api/agent/sessions/{session_id}/runtime",
            "/api/agent/tool-callback",
            "/api/agent/dsl/{dsl_id}",
            "/api/agent/dsl/{dsl_id}/execute",
            "/api/agent/dsl/{dsl_id}/executions",
        ):
            assert path in paths, path
        docs = anon.get("/docs")
        assert docs.status_code == 200
        assert "swagger" in docs.text.lower()


# ---- the example pack end to end ------------------------------------------------------------------


def test_order_desk_session_callback_dsl_and_replay(api_server: TetherServer, alice: httpx.Client) -> None:
    s = create(alice, ORDER_QUESTION, globalContext={"region": "east"})
    assert s.keys() >= SESSION_KEYS
    assert s["sessionId"].startswith("ses-")
    assert s["status"] == "WAITING_ASYNC_CALLBACK"
    assert s["query"] == ORDER_QUESTION and s["title"]
    assert s["globalContext"] == {"region": "east"}
    assert s["selectedSkillIds"] == ["order-desk"]
    assert s["pendingInteraction"] is None
    assert parse_ts(s["createdAt"]) <= parse_ts(s["updatedAt"])
    assert [st["toolId"] for st in s["executedSteps"]] == ["lookup_order", "convert_currency", "start_shipping_quote"]
    assert [st["status"] for st in s["executedSteps"]] == ["SUCCEEDED", "SUCCEEDED", "PENDING"]
    assert [m["role"] for m in s["transcript"]] == ["system", "user"] + ["assistant", "tool"] * 3
    job_id = s["waitingExternalJobId"]
    assert job_id and job_id.startswith("job-")
    assert get_session(alice, s["sessionId"]) == s  # what the POST returned is what is stored

    ticket = api_server.ticket(job_id)
    assert ticket["callbackUrl"] == api_server.url + "/api/agent/tool-callback"
    quote = {"price": 12.5, "currency": "USD", "carrier": "SF"}
    r = post_callback(alice, job_id, ticket["callbackToken"], payload=quote)
    assert r.status_code == 200 and r.json() == {"ok": True}

    done = wait_status(alice, s["sessionId"], "SUCCEEDED")
    assert done["waitingExternalJobId"] is None
    final = done["transcript"][-1]
    assert final["role"] == "assistant"
    assert "166.4 EUR" in final["content"] and "12.5 USD by SF" in final["content"]
    assert [st["status"] for st in done["executedSteps"]] == ["SUCCEEDED"] * 3
    dsl_id = done["lastDslId"]
    assert dsl_id

    events = runtime_events(alice, s["sessionId"])
    assert_contiguous(events)
    types = [e["type"] for e in events]
    assert types.count("TOOL_CALLBACK_RECEIVED") == 1
    compiled = [e for e in events if e["type"] == "DSL_COMPILED"]
    assert [e["data"]["dslId"] for e in compiled] == [dsl_id]

    # a repeated callback is acknowledged and changes nothing
    again = post_callback(alice, job_id, ticket["callbackToken"], payload={"price": 1})
    assert again.status_code == 200 and again.json() == {"ok": True, "duplicate": True}
    stays(lambda: len(runtime_events(alice, s["sessionId"])), len(events))
    assert get_session(alice, s["sessionId"])["transcript"] == done["transcript"]

    # the compiled DSL: parameters with defaults from the request, step references
    r = alice.get(f"/api/agent/dsl/{dsl_id}")
    assert r.status_code == 200, r.text
    dsl = r.json()
    assert dsl["dslId"] == dsl_id and dsl["sourceSessionId"] == s["sessionId"]
    assert dsl["params"] == {"order_id": "A-1001", "to": "EUR"}
    assert [st["toolId"] for st in dsl["steps"]] == ["lookup_order", "convert_currency", "start_shipping_quote"]
    assert dsl["steps"][1]["args"]["amount"] == "${steps.s1.total}"

    # replay with overrides: the async step waits for its own callback
    seen = set(api_server.outbox())
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(alice.post, f"/api/agent/dsl/{dsl_id}/execute", json={"order_id": "A-1002", "to": "USD"})
        new = wait_until(lambda: set(api_server.outbox()) - seen, what="the replay's async job ticket")
        (replay_job,) = new
        replay_quote = {"price": 7, "currency": "USD", "carrier": "UPS"}
        r = post_callback(alice, replay_job, api_server.outbox()[replay_job]["callbackToken"], payload=replay_quote)
        assert r.status_code == 200 and r.json() == {"ok": True}
        result = future.result(timeout=30)
    assert result.status_code == 200, result.text
    run = result.json()
    assert run["status"] == "SUCCEEDED" and run["error"] is None
    assert run["params"] == {"order_id": "A-1002", "to": "USD"}
    outputs = {st["stepId"]: st["output"] for st in run["steps"]}
    assert outputs["s1"]["customer"] == "Northwind"
    assert outputs["s2"] == {"amount": 455.5, "to": "USD", "converted": 63.77}
    assert outputs["s3"] == replay_quote

    log = alice.get(f"/api/agent/dsl/{dsl_id}/executions")
    assert log.status_code == 200
    entry = next(e for e in log.json()["items"] if e["executionId"] == run["executionId"])
    assert entry["status"] == "SUCCEEDED" and entry["params"] == {"order_id": "A-1002", "to": "USD"}
    assert len(entry["steps"]) == 3
    replay_session = get_session(alice, run["executionId"])  # the replay is an observable session
    assert replay_session["status"] == "SUCCEEDED" and replay_session["replayOf"] == dsl_id


def test_failed_callback_reaches_the_tool_message(api_server: TetherServer, alice: httpx.Client) -> None:
    s = waiting_order_session(alice)
    job_id = s["waitingExternalJobId"]
    r = post_callback(
        alice, job_id, api_server.ticket(job_id)["callbackToken"], status="FAILED", error="carrier is down"
    )
    assert r.status_code == 200 and r.json() == {"ok": True}
    done = wait_status(alice, s["sessionId"], {"SUCCEEDED", "FAILED"})
    quote = next(m for m in tool_messages(done) if '"start_shipping_quote"' in m["content"])
    assert '"kind": "error"' in quote["content"] and "carrier is down" in quote["content"]
    assert done["executedSteps"][-1]["status"] == "FAILED"
    # the model saw the error and answered (the planner reports it)
    assert "carrier is down" in done["transcript"][-1]["content"]
    events = runtime_events(alice, s["sessionId"])
    assert_contiguous(events)
    failed = [e for e in events if e["type"] == "TOOL_EXECUTION_FAILED"]
    assert failed and failed[-1]["data"]["error"] == "carrier is down"


def test_callback_authentication(api_server: TetherServer, alice: httpx.Client) -> None:
    s = waiting_order_session(alice)
    job_id = s["waitingExternalJobId"]
    token = api_server.ticket(job_id)["callbackToken"]
    before = len(runtime_events(alice, s["sessionId"]))

    with api_server.client(None) as anon:  # the callback needs no bearer token, only the job's proof
        for bad in (None, "", "wrong-token", token[:-1]):
            r = post_callback(anon, job_id, bad, payload={"price": 666})
            assert r.status_code == 401, (bad, r.text)
            assert "error" in r.json()
        unknown = post_callback(anon, "job-does-not-exist", token)
        assert unknown.status_code == 404 and unknown.json() == {"error": "async job not found"}

        after = get_session(alice, s["sessionId"])
        assert after["status"] == "WAITING_ASYNC_CALLBACK" and after["transcript"] == s["transcript"]
        assert len(runtime_events(alice, s["sessionId"])) == before

        r = post_callback(anon, job_id, token, payload={"price": 3, "currency": "USD", "carrier": "DHL"})
        assert r.status_code == 200 and r.json() == {"ok": True}
    done = wait_status(alice, s["sessionId"], "SUCCEEDED")
    assert "3 USD by DHL" in done["transcript"][-1]["content"]


def test_callback_bad_bodies(alice: httpx.Client) -> None:
    cases = [
        ({"status": "SUCCEEDED"}, "externalJobId"),
        ({"externalJobId": "job-x"}, "status"),
        ({"externalJobId": "job-x", "status": "DONE"}, "status"),
        ({"externalJobId": "", "status": "SUCCEEDED"}, "externalJobId"),
    ]
    for body, field in cases:
        r = alice.post("/api/agent/tool-callback", json=body, headers={"X-Tether-Callback-Token": "t"})
        assert r.status_code == 422, (body, r.text)
        assert r.json()["field"] == field
    r = alice.post("/api/agent/tool-callback", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "body"


# ---- ownership ------------------------------------------------------------------------------------


def test_another_user_gets_404_on_everything(api_server: TetherServer, alice: httpx.Client, bob: httpx.Client) -> None:
    finished = create(alice, "slowly label=own")
    assert finished["status"] == "SUCCEEDED", finished.get("lastError")
    dsl_id = finished["lastDslId"]
    assert dsl_id
    waiting = waiting_order_session(alice)
    for s in (finished, waiting):
        sid = s["sessionId"]
        before = get_session(alice, sid)
        for method, path, body in (
            ("GET", f"/api/agent/sessions/{sid}", None),
            ("GET", f"/api/agent/sessions/{sid}/events", None),
            ("GET", f"/api/agent/sessions/{sid}/runtime", None),
            ("POST", f"/api/agent/sessions/{sid}/messages", {"message": "slowly label=bob"}),
            ("POST", f"/api/agent/sessions/{sid}/resume", None),
            ("POST", f"/api/agent/sessions/{sid}/interactions/int-1", {"answer": "yes"}),
            ("POST", f"/api/agent/sessions/{sid}/cancel", None),
        ):
            r = bob.request(method, path, json=body)
            assert r.status_code == 404, (method, path, r.status_code, r.text)
            assert "error" in r.json()
        assert get_session(alice, sid) == before
    for method, path in (
        ("GET", f"/api/agent/dsl/{dsl_id}"),
        ("POST", f"/api/agent/dsl/{dsl_id}/execute"),
        ("GET", f"/api/agent/dsl/{dsl_id}/executions"),
    ):
        r = bob.request(method, path, json={} if method == "POST" else None)
        assert r.status_code == 404, (method, path, r.text)
    assert api_server.counter("bob-1") == []
    listed = bob.get("/api/agent/sessions", params={"limit": 200}).json()["items"]
    assert not {finished["sessionId"], waiting["sessionId"]} & {i["sessionId"] for i in listed}


def test_list_sessions_newest_first_and_paged(api_server: TetherServer) -> None:
    with api_server.client("dev-carol") as carol:
        ids = [create(carol, f"slowly label=carol{i}")["sessionId"] for i in range(3)]
        first = carol.get("/api/agent/sessions", params={"limit": 2})
        assert first.status_code == 200
        page = first.json()
        assert [i["sessionId"] for i in page["items"]] == ids[::-1][:2]
        assert page["limit"] == 2 and page["offset"] == 0
        assert set(page["items"][0]) >= {"sessionId", "status", "title", "archived", "createdAt", "updatedAt"}
        second = carol.get("/api/agent/sessions", params={"limit": 2, "offset": 2}).json()
        assert [i["sessionId"] for i in second["items"]] == ids[:1]
        assert carol.get("/api/agent/sessions", params={"offset": 3}).json()["items"] == []
        everything = carol.get("/api/agent/sessions").json()["items"]
        assert [i["sessionId"] for i in everything] == ids[::-1]
        for params, field in (({"limit": 0}, "limit"), ({"limit": "x"}, "limit"), ({"offset": -1}, "offset")):
            r = carol.get("/api/agent/sessions", params=params)
            assert r.status_code == 422 and r.json()["field"] == field, r.text


# ---- bad input ------------------------------------------------------------------------------------


def test_authentication_is_required(api_server: TetherServer) -> None:
    for headers in (
        {},
        {"Authorization": "Bearer nobody"},
        {"Authorization": "Basic ZGV2LWFsaWNl"},
        {"Authorization": "Bearer"},
    ):
        with httpx.Client(base_url=api_server.url, headers=headers, timeout=10) as c:
            for method, path in (
                ("POST", "/api/agent/sessions"),
                ("GET", "/api/agent/sessions"),
                ("GET", "/api/agent/sessions/ses-x"),
                ("GET", "/api/agent/sessions/ses-x/events"),
                ("GET", "/api/agent/dsl/dsl-x"),
            ):
                r = c.request(method, path, json={"message": "hi"} if method == "POST" else None)
                assert r.status_code == 401, (headers, method, path, r.text)
                assert "error" in r.json()


def test_bad_input_is_422_naming_the_field(api_server: TetherServer, alice: httpx.Client) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "message"),
        ({"message": 5}, "message"),
        ({"message": None}, "message"),
        ({"message": ""}, "message"),
        ({"message": "   "}, "message"),
        ({"message": "x" * 32_001}, "message"),
        ({"message": "nul \x00 inside"}, "message"),
        ({"message": "hi", "globalContext": "not an object"}, "globalContext"),
        ({"message": "hi", "globalContext": {"_secret": 1}}, "globalContext"),
        ({"message": "hi", "unexpected": 1}, "unexpected"),
    ]
    for body, field in cases:
        r = alice.post("/api/agent/sessions", json=body)
        assert r.status_code == 422, (body, r.text[:200])
        assert r.json()["field"] == field, (body, r.json())
        assert field in r.json()["error"] or r.json()["error"]
    for raw in (b"{not json", b"[1, 2]", b"", b'"message"', b'{"message": "caf\xe9"}'):
        r = alice.post("/api/agent/sessions", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422, (raw, r.text)
        assert r.json()["field"] == "body"
    r = alice.post("/api/agent/sessions", params={"wait": "perhaps"}, json={"message": "hi"})
    assert r.status_code == 422 and r.json()["field"] == "wait"

    # the limit is inclusive: 32,000 characters are accepted
    ok = alice.post("/api/agent/sessions", json={"message": "y" * 32_000})
    assert ok.status_code == 200, ok.text[:200]
    sid = ok.json()["sessionId"]
    for body in ({"message": ""}, {"message": "z" * 32_001}, {}, {"text": "hi"}):
        r = alice.post(f"/api/agent/sessions/{sid}/messages", json=body)
        assert r.status_code == 422, (body, r.text[:200])
    r = alice.post(f"/api/agent/sessions/{sid}/messages", content=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "body"
    huge = str(2**64)
    bad_streams: list[tuple[dict[str, Any], dict[str, Any]]] = [  # (headers, query)
        ({"Last-Event-ID": "abc"}, {}),
        ({"Last-Event-ID": huge}, {}),
        ({"Last-Event-ID": b"\xb2"}, {}),  # a digit to str.isdigit(), not to int()
        ({}, {"after": -1}),
        ({}, {"after": "x"}),
        ({}, {"after": huge}),
    ]
    for headers, params in bad_streams:
        r = alice.get(f"/api/agent/sessions/{sid}/events", headers=headers, params=params)
        assert r.status_code == 422, (headers, params, r.text)
    r = alice.get("/api/agent/sessions", params={"offset": huge})
    assert r.status_code == 422 and r.json()["field"] == "offset"


def test_unknown_ids_are_404(alice: httpx.Client) -> None:
    for method, path, body in (
        ("GET", "/api/agent/sessions/ses-nope", None),
        ("GET", "/api/agent/sessions/ses-nope/events", None),
        ("GET", "/api/agent/sessions/ses-nope/runtime", None),
        ("POST", "/api/agent/sessions/ses-nope/messages", {"message": "hi"}),
        ("POST", "/api/agent/sessions/ses-nope/resume", None),
        ("POST", "/api/agent/sessions/ses-nope/interactions/int-1", {"answer": "yes"}),
        ("GET", "/api/agent/dsl/dsl-nope", None),
        ("POST", "/api/agent/dsl/dsl-nope/execute", {}),
        ("GET", "/api/agent/dsl/dsl-nope/executions", None),
        ("GET", "/api/agent/no-such-endpoint", None),
    ):
        r = alice.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert "error" in r.json()


def test_dsl_execute_bad_overrides(alice: httpx.Client) -> None:
    s = create(alice, "slowly label=dslbad")
    dsl_id = s["lastDslId"]
    assert dsl_id
    r = alice.post(f"/api/agent/dsl/{dsl_id}/execute", json={"nope": 1})
    assert r.status_code == 422 and r.json()["field"] == "nope"
    before = alice.get(f"/api/agent/dsl/{dsl_id}/executions").json()["items"]
    r = alice.post(f"/api/agent/dsl/{dsl_id}/execute", json={"label": ["not", "a", "string"]})
    assert r.status_code == 422 and r.json()["field"] == "label", r.text
    assert "expected string" in r.json()["error"]
    assert alice.get(f"/api/agent/dsl/{dsl_id}/executions").json()["items"] == before, "nothing ran"
    for raw in (b"[1]", b"{bad"):
        r = alice.post(f"/api/agent/dsl/{dsl_id}/execute", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["field"] == "body", r.text


def test_busy_sessions_refuse_messages_and_resume(alice: httpx.Client) -> None:
    s = waiting_order_session(alice)
    r = alice.post(f"/api/agent/sessions/{s['sessionId']}/messages", json={"message": "slowly label=busy"})
    assert r.status_code == 409 and "callback" in r.json()["error"]
    r = alice.post(f"/api/agent/sessions/{s['sessionId']}/resume")
    assert r.status_code == 409
    assert get_session(alice, s["sessionId"])["transcript"] == s["transcript"]


# ---- one turn per session -------------------------------------------------------------------------


def test_concurrent_messages_one_wins_and_the_transcript_is_not_interleaved(
    api_server: TetherServer, alice: httpx.Client
) -> None:
    s = create(alice, "slowly label=race0")
    assert s["status"] == "SUCCEEDED"
    sid = s["sessionId"]
    barrier = threading.Barrier(2)
    messages = ["slowly label=raceA sleep=0,1,0", "slowly label=raceB sleep=0,1,0"]

    def post(message: str) -> httpx.Response:
        with api_server.client("dev-alice") as c:
            barrier.wait()
            return c.post(f"/api/agent/sessions/{sid}/messages", json={"message": message})

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(post, messages))
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 409], [r.text[:200] for r in results]
    winner = messages[[r.status_code for r in results].index(200)]
    loser_label = "raceB" if "raceA" in winner else "raceA"
    assert "running" in next(r for r in results if r.status_code == 409).json()["error"]

    done = get_session(alice, sid)
    assert done["status"] == "SUCCEEDED"
    new = done["transcript"][len(s["transcript"]) :]
    assert [m["role"] for m in new] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert new[0]["content"] == winner
    for assistant, tool in zip(new[1:7:2], new[2:7:2], strict=True):
        assert tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert all(loser_label not in str(m.get("content")) for m in done["transcript"])
    assert api_server.counter(f"{loser_label}-1") == []
    events = runtime_events(alice, sid)
    assert_contiguous(events)
    assert [e["type"] for e in events].count("TURN_FINISHED") == 2


def test_tools_endpoint_runs_a_tool_and_serves_async_tools_only_with_a_poll_url(alice: httpx.Client) -> None:
    r = alice.post("/tools/lookup-order", json={"order_id": "A-1001"})
    assert r.status_code == 200 and r.json()["kind"] == "value" and r.json()["data"]["order_id"] == "A-1001"
    # the example's shipping quote is async and declares no poll URL: its outcome goes to a session only
    r = alice.post("/tools/start-shipping-quote", json={"order_id": "A-1001"})
    assert r.status_code == 404 and "inside a session" in r.json()["error"]
    assert alice.post("/tools/load-skill", json={"name": "order-desk"}).status_code == 404


# ---- stopping a turn ------------------------------------------------------------------------------


def test_cancel_stops_the_running_tool_and_the_conversation_goes_on(
    api_server: TetherServer, alice: httpx.Client, bob: httpx.Client
) -> None:
    r = alice.post("/api/agent/sessions?wait=false", json={"message": "slowly label=stopme sleep=30,0,0"})
    assert r.status_code == 200, r.text
    sid = r.json()["sessionId"]
    wait_until(lambda: api_server.counter("stopme-1") == ["start"], what="the slow step to start")
    assert bob.post(f"/api/agent/sessions/{sid}/cancel").status_code == 404
    assert api_server.counter("stopme-1") == ["start"]

    started = time.monotonic()
    r = alice.post(f"/api/agent/sessions/{sid}/cancel")
    assert r.status_code == 200, r.text
    assert time.monotonic() - started < 5
    assert r.json()["status"] == "CANCELLED"
    stays(lambda: api_server.counter("stopme-1"), ["start"])  # the tool was cut off, never ended
    assert api_server.counter("stopme-2") == []  # and nothing after it ran

    events = runtime_events(alice, sid)
    assert_contiguous(events)
    assert events[-1]["type"] == "TURN_FINISHED" and events[-1]["data"]["status"] == "CANCELLED"
    r = alice.post(f"/api/agent/sessions/{sid}/cancel")
    assert r.status_code == 409 and "CANCELLED" in r.json()["error"]

    r = alice.post(f"/api/agent/sessions/{sid}/messages", json={"message": "slowly label=again"})
    assert r.status_code == 200 and r.json()["status"] == "SUCCEEDED", r.text
    r = alice.post(f"/api/agent/sessions/{sid}/cancel")
    assert r.status_code == 409 and "SUCCEEDED" in r.json()["error"]


def test_cancel_a_waiting_session_and_a_waiting_caller_gets_the_cancelled_session(
    api_server: TetherServer, alice: httpx.Client
) -> None:
    s = waiting_order_session(alice)
    r = alice.post(f"/api/agent/sessions/{s['sessionId']}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "CANCELLED", r.text
    job = s["waitingExternalJobId"]
    ticket = api_server.ticket(job)
    late = post_callback(alice, job, ticket["callbackToken"], payload={"carrier": "SF", "price": 1})
    assert late.json() == {"ok": True, "duplicate": True}
    assert get_session(alice, s["sessionId"])["status"] == "CANCELLED"

    with ThreadPoolExecutor(1) as pool:  # a caller waiting for its turn (wait=true) gets the stop
        waiting = pool.submit(create, alice, "slowly label=waitstop sleep=30,0,0")
        wait_until(lambda: api_server.counter("waitstop-1") == ["start"], what="the slow step to start")
        [item] = [
            i
            for i in alice.get("/api/agent/sessions", params={"limit": 5}).json()["items"]
            if i["title"] == "slowly label=waitstop sleep=30,0,0"
        ]
        assert alice.post(f"/api/agent/sessions/{item['sessionId']}/cancel").status_code == 200
        assert waiting.result(timeout=10)["status"] == "CANCELLED"
