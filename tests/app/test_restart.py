"""Restart safety with real process kills: ``tether serve`` is SIGKILLed in the middle of a tool
call, of a model call and while a session waits for a callback, then started again on the same
SQLite file. Every session must resume from its last persisted state: finished tool calls are not
re-run, a call cut off mid-flight gets an error result and the model decides, nothing stays
RUNNING, a waiting session still takes its callback, and event ids stay contiguous."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.conftest import (
    EXAMPLES,
    SLOWPACK,
    TetherServer,
    assert_contiguous,
    get_session,
    make_server,
    post_callback,
    runtime_events,
    sse_frames,
    tool_messages,
    wait_status,
    wait_until,
)
from tests.models.chat_server import ChatServer, Reply, completion

pytestmark = pytest.mark.slow

FAST_RECOVERY = {"TETHER_LEASE_S": "1", "TETHER_SWEEP_S": "0.5"}


def create(client: httpx.Client, message: str, wait: bool = True) -> dict[str, Any]:
    r = client.post("/api/agent/sessions", params={"wait": str(wait).lower()}, json={"message": message})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def assert_survived(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    """Every event persisted before the kill is still there, unchanged, and ids stay 1..N."""
    assert_contiguous(after)
    assert after[: len(before)] == before


class LiveStream:
    """An SSE client in a thread that follows a session until its connection breaks."""

    def __init__(self, server: TetherServer, session_id: str) -> None:
        self.ids: list[int] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(server, session_id), daemon=True)
        self._thread.start()

    def _run(self, server: TetherServer, session_id: str) -> None:
        try:
            with (
                server.client() as c,
                c.stream("GET", f"/api/agent/sessions/{session_id}/events", timeout=httpx.Timeout(10, read=30)) as r,
            ):
                for frame in sse_frames(r):
                    self.ids.append(frame.seq)
        except httpx.HTTPError as exc:  # the server died under it
            self.error = exc

    def join(self) -> None:
        self._thread.join(timeout=15)
        assert not self._thread.is_alive(), "the event stream did not notice the server died"


def sse_after(client: httpx.Client, session_id: str, last_id: int, until_id: int) -> list[int]:
    """Reconnect to the event stream with Last-Event-ID and collect ids up to ``until_id``."""
    ids: list[int] = []
    with client.stream(
        "GET",
        f"/api/agent/sessions/{session_id}/events",
        headers={"Last-Event-ID": str(last_id)},
        timeout=httpx.Timeout(10.0, read=5.0),
    ) as r:
        assert r.status_code == 200
        for frame in sse_frames(r):
            ids.append(frame.seq)
            if frame.seq >= until_id:
                break
    return ids


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TetherServer]:
    srv = make_server(tmp_path, [EXAMPLES, SLOWPACK], **FAST_RECOVERY)
    try:
        yield srv
    finally:
        srv.stop()


def test_kill_during_a_tool_call_and_while_waiting_for_a_callback(server: TetherServer) -> None:
    server.start()
    with server.client() as alice:
        waiting = create(alice, "Order A-1001 in USD, and a shipping quote")
        assert waiting["status"] == "WAITING_ASYNC_CALLBACK"
        job_id = waiting["waitingExternalJobId"]
        done = create(alice, "slowly label=done")
        assert done["status"] == "SUCCEEDED"
        mid = create(alice, "slowly label=mid sleep=0,60,0", wait=False)
        wait_until(lambda: server.counter("mid-2") == ["start"], what="the slow tool call to start")
        before = {s["sessionId"]: runtime_events(alice, s["sessionId"]) for s in (waiting, done, mid)}
        snapshots = {s["sessionId"]: get_session(alice, s["sessionId"]) for s in (waiting, done)}
        assert get_session(alice, mid["sessionId"])["status"] == "RUNNING"
        live = LiveStream(server, mid["sessionId"])
        wait_until(lambda: len(live.ids) >= len(before[mid["sessionId"]]), what="the live stream to catch up")

    server.kill()
    live.join()
    server.start()

    with server.client() as alice:
        # the session cut off in a tool call: resumed, the call gets an error, the model decides
        s = wait_status(alice, mid["sessionId"], {"SUCCEEDED", "FAILED"})
        assert server.counter("mid-1") == ["start", "end"]  # finished before the kill: not re-run
        assert server.counter("mid-2") == ["start"]  # cut off: not retried
        assert server.counter("mid-3") == []  # the model chose to stop
        calls = [c for m in s["transcript"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        answered = [m["tool_call_id"] for m in tool_messages(s)]
        assert answered == [c["id"] for c in calls]  # every call answered exactly once, in order
        cut = tool_messages(s)[1]
        body = json.loads(cut["content"])
        assert body["kind"] == "error" and "interrupted" in body["data"]["error"]
        assert [st["status"] for st in s["executedSteps"]] == ["SUCCEEDED", "FAILED"]
        assert "interrupted" in s["transcript"][-1]["content"]
        events = runtime_events(alice, mid["sessionId"])
        assert_survived(before[mid["sessionId"]], events)
        assert any(e["type"] == "ERROR" and e["data"].get("recovered") for e in events)
        failed = [e for e in events if e["type"] == "TOOL_EXECUTION_FAILED"]
        assert len(failed) == 1 and "interrupted" in failed[0]["data"]["error"]
        assert [e["type"] for e in events][-1] == "TURN_FINISHED"
        # the client that was following the stream reconnects with the last id it got
        resumed = sse_after(alice, mid["sessionId"], live.ids[-1], events[-1]["id"])
        assert live.ids + resumed == [e["id"] for e in events]

        # the finished session is untouched
        assert get_session(alice, done["sessionId"]) == snapshots[done["sessionId"]]
        assert runtime_events(alice, done["sessionId"]) == before[done["sessionId"]]
        assert [server.counter(f"done-{i}") for i in (1, 2, 3)] == [["start", "end"]] * 3

        # the waiting session still waits, and takes its callback
        assert get_session(alice, waiting["sessionId"]) == snapshots[waiting["sessionId"]]
        assert all(s["status"] != "RUNNING" for s in alice.get("/api/agent/sessions").json()["items"])
        token = server.ticket(job_id)["callbackToken"]
        payload = {"price": 4.2, "currency": "USD", "carrier": "SF"}
        r = post_callback(alice, job_id, "not-the-token", payload=payload)
        assert r.status_code == 401
        r = post_callback(alice, job_id, token, payload=payload)
        assert r.status_code == 200 and r.json() == {"ok": True}
        finished = wait_status(alice, waiting["sessionId"], "SUCCEEDED")
        assert "4.2 USD by SF" in finished["transcript"][-1]["content"]
        assert finished["lastDslId"]
        events = runtime_events(alice, waiting["sessionId"])
        assert_survived(before[waiting["sessionId"]], events)
        assert [e["type"] for e in events].count("TOOL_CALLBACK_RECEIVED") == 1
        r = post_callback(alice, job_id, token, payload=payload)
        assert r.json() == {"ok": True, "duplicate": True}

        statuses = {s["sessionId"]: s["status"] for s in alice.get("/api/agent/sessions").json()["items"]}
        assert "RUNNING" not in statuses.values()
    server.stop()
    server.assert_no_server_errors()


def model_server(workdir: Path, chat: ChatServer, packs: list[Path]) -> TetherServer:
    """A server whose model is the local Chat Completions endpoint ``chat``."""
    return make_server(
        workdir,
        packs,
        TETHER_MODEL="openai",
        TETHER_MODEL_PROVIDER="custom",
        TETHER_MODEL_BASE_URL=chat.base_url,
        TETHER_MODEL_NAME="test-model",
        TETHER_MODEL_API_KEY="sk-test",
        TETHER_MODEL_STREAM="false",
        TETHER_SKILL_ROUTING="rules",
        **FAST_RECOVERY,
    )


def test_kill_during_a_model_call(tmp_path: Path) -> None:
    slow = completion("too late")
    slow.delay_s = 60
    script: list[Reply] = [
        completion(tool_calls=[("call_m1", "slow_step", '{"label": "model-1"}')]),
        slow,  # the server is killed while it waits for this one
        completion(tool_calls=[("call_m2", "slow_step", '{"label": "model-2"}')]),
        completion("all done"),
    ]
    with ChatServer(script) as chat:
        server = model_server(tmp_path, chat, [SLOWPACK])
        try:
            server.start()
            with server.client() as alice:
                s = create(alice, "slowly, with a model", wait=False)
                sid = s["sessionId"]
                wait_until(lambda: len(chat.requests) == 2, what="the second model call")
                before = runtime_events(alice, sid)
                assert server.counter("model-1") == ["start", "end"]

            server.kill()
            server.start()

            with server.client() as alice:
                done = wait_status(alice, sid, {"SUCCEEDED", "FAILED"})
                assert done["status"] == "SUCCEEDED", done.get("lastError")
                assert done["transcript"][-1] == {"role": "assistant", "content": "all done"}
                assert server.counter("model-1") == ["start", "end"]  # not re-run on resume
                assert server.counter("model-2") == ["start", "end"]
                assert [m["tool_call_id"] for m in tool_messages(done)] == ["call_m1", "call_m2"]
                assert all("interrupted" not in m["content"] for m in tool_messages(done))
                events = runtime_events(alice, sid)
                assert_survived(before, events)
                assert any(e["type"] == "ERROR" and e["data"].get("recovered") for e in events)
                assert [e["type"] for e in events][-1] == "TURN_FINISHED"
            # the model call after the restart saw the finished call's result once, and no reply
            # from the call that was cut off
            assert len(chat.requests) == 4
            resumed = chat.requests[2].body["messages"]
            assert [m.get("tool_call_id") for m in resumed if m["role"] == "tool"] == ["call_m1"]
            assert all(m.get("content") != "too late" for m in resumed)
            server.stop()
            server.assert_no_server_errors()
        finally:
            server.stop()


def test_kill_in_a_multi_call_message_after_a_callback_was_accepted(tmp_path: Path) -> None:
    """One assistant message with three calls: an async job (whose callback arrives while the turn
    is still busy), a quick call, and a slow call that the kill cuts off."""
    script: list[Reply] = [
        completion(
            tool_calls=[
                ("c_quote", "start_shipping_quote", '{"order_id": "A-1001"}'),
                ("c_fast", "slow_step", '{"label": "multi-1"}'),
                ("c_slow", "slow_step", '{"label": "multi-2", "seconds": 60}'),
            ]
        ),
        completion("multi done"),
    ]
    with ChatServer(script) as chat:
        server = model_server(tmp_path, chat, [EXAMPLES, SLOWPACK])
        try:
            server.start()
            with server.client() as alice:
                s = create(alice, "slowly: order A-1001 and its shipping", wait=False)
                sid = s["sessionId"]
                wait_until(lambda: server.counter("multi-2") == ["start"], what="the slow call to start")
                (job_id,) = server.outbox()
                payload = {"price": 8, "currency": "USD", "carrier": "EMS"}
                r = post_callback(alice, job_id, server.ticket(job_id)["callbackToken"], payload=payload)
                assert r.status_code == 200 and r.json() == {"ok": True}
                assert get_session(alice, sid)["status"] == "RUNNING"  # the result waits for the turn
                before = runtime_events(alice, sid)

            server.kill()
            server.start()

            with server.client() as alice:
                done = wait_status(alice, sid, {"SUCCEEDED", "FAILED"})
                assert done["status"] == "SUCCEEDED", done.get("lastError")
                assert done["transcript"][-1]["content"] == "multi done"
                results = {m["tool_call_id"]: json.loads(m["content"]) for m in tool_messages(done)}
                assert list(results) == ["c_quote", "c_fast", "c_slow"]
                assert results["c_quote"]["kind"] == "value" and results["c_quote"]["data"] == payload
                assert results["c_fast"]["kind"] == "value"
                assert results["c_slow"]["kind"] == "error" and "interrupted" in results["c_slow"]["data"]["error"]
                assert server.counter("multi-1") == ["start", "end"]
                assert server.counter("multi-2") == ["start"]
                events = runtime_events(alice, sid)
                assert_survived(before, events)
                assert [e["type"] for e in events].count("TOOL_CALLBACK_RECEIVED") == 1
                r = post_callback(alice, job_id, server.ticket(job_id)["callbackToken"], payload=payload)
                assert r.json() == {"ok": True, "duplicate": True}
                assert len(runtime_events(alice, sid)) == len(events)
            assert len(chat.requests) == 2
            seen = chat.requests[1].body["messages"]
            assert [m["tool_call_id"] for m in seen if m["role"] == "tool"] == ["c_quote", "c_fast", "c_slow"]
            server.stop()
            server.assert_no_server_errors()
        finally:
            server.stop()


def test_a_callback_stored_just_before_the_kill_is_not_lost(server: TetherServer) -> None:
    """The window between storing a callback's result and applying it to the session: the process
    dies after the job row says SUCCEEDED but before the session saw it. (The kill is real; the
    job rows are written as the callback's own write leaves them, since that window is too short
    to hit with a signal.) On restart the recovery sweep applies the stored results and resumes;
    the caller's retry is then a duplicate and a /resume is refused: nothing runs twice."""
    server.start()
    with server.client() as alice:
        retried, resumed = (create(alice, f"Order A-100{i} in EUR, and a shipping quote") for i in (1, 2))
        jobs = {s["sessionId"]: s["waitingExternalJobId"] for s in (retried, resumed)}
        tokens = {sid: server.ticket(job)["callbackToken"] for sid, job in jobs.items()}
    server.kill()
    payload = {"price": 5, "currency": "EUR", "carrier": "DPD"}
    with sqlite3.connect(server.workdir / "tether.db") as db:
        for job_id in jobs.values():
            changed = db.execute(
                "UPDATE async_job SET status = 'SUCCEEDED', result = ? WHERE job_id = ? AND status = 'PENDING'",
                (json.dumps(payload), job_id),
            ).rowcount
            assert changed == 1
    server.start()
    with server.client() as alice:
        # recovery at start-up finds the finished-but-unapplied jobs and resumes both sessions
        for sid in jobs:
            done = wait_status(alice, sid, "SUCCEEDED")
            assert "5 EUR by DPD" in done["transcript"][-1]["content"]

        for sid, job_id in jobs.items():
            events = runtime_events(alice, sid)
            assert_contiguous(events)
            assert [e["type"] for e in events].count("TOOL_CALLBACK_RECEIVED") == 1
            r = post_callback(alice, job_id, tokens[sid], payload=payload)
            assert r.json() == {"ok": True, "duplicate": True}
            assert len(runtime_events(alice, sid)) == len(events)
            r = alice.post(f"/api/agent/sessions/{sid}/resume")
            assert r.status_code == 409
    server.stop()
    server.assert_no_server_errors()
