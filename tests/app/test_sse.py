"""``GET /api/agent/sessions/{id}/events`` over a real server with a real streaming client: the
frame format, replay from ``Last-Event-ID`` / ``?after=``, live tailing, heartbeats, and a
reconnect that neither loses nor repeats an event."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.app.conftest import (
    SseFrame,
    TetherServer,
    assert_contiguous,
    post_callback,
    runtime_events,
    sse_frames,
    wait_status,
    wait_until,
)

pytestmark = pytest.mark.slow

STREAM_TIMEOUT = httpx.Timeout(10.0, read=5.0)  # heartbeats come every second


def create(client: httpx.Client, message: str, wait: bool = True) -> dict[str, Any]:
    r = client.post("/api/agent/sessions", params={"wait": str(wait).lower()}, json={"message": message})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def read_until(
    client: httpx.Client,
    session_id: str,
    stop: Any,
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
    comments: bool = False,
) -> list[SseFrame]:
    """Stream events until ``stop(frame)`` is true, then drop the connection (``comments``: the
    heartbeat comments are passed to ``stop`` and returned too)."""
    frames: list[SseFrame] = []
    with client.stream(
        "GET", f"/api/agent/sessions/{session_id}/events", headers=headers, params=params, timeout=STREAM_TIMEOUT
    ) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for frame in sse_frames(r, comments):
            frames.append(frame)
            if stop(frame):
                break
    return frames


def got_events(frames: list[SseFrame]) -> list[SseFrame]:
    return [f for f in frames if f.comment is None]


def finished(status: str = "SUCCEEDED") -> Any:
    return lambda f: f.event == "TURN_FINISHED" and f.json()["data"]["status"] == status


def test_frames_replay_and_heartbeat(alice: httpx.Client) -> None:
    s = create(alice, "slowly label=sse-frames")
    assert s["status"] == "SUCCEEDED"
    sid = s["sessionId"]
    stored = runtime_events(alice, sid)
    assert_contiguous(stored)
    n = len(stored)

    # everything is replayed, then the stream stays open and sends heartbeats
    seen: list[SseFrame] = []

    def replayed_then_heartbeat(f: SseFrame) -> bool:
        seen.append(f)
        return f.comment is not None and len(got_events(seen)) >= n

    got = read_until(alice, sid, replayed_then_heartbeat, comments=True)
    frames = got_events(got)
    comments = [f.comment for f in got if f.comment is not None]
    assert [f.seq for f in frames] == list(range(1, n + 1))
    for frame, event in zip(frames, stored, strict=True):
        assert [line.split(":", 1)[0] for line in frame.raw] == ["id", "event", "data"], frame.raw
        assert frame.raw[0] == f"id: {event['id']}" and frame.raw[1] == f"event: {event['type']}"
        assert frame.json() == event
        assert frame.json()["sessionId"] == sid
    assert [f.event for f in frames][:3] == ["SESSION_STARTED", "SKILLS_SELECTED", "TURN_STARTED"]
    compiled = next(f for f in frames if f.event == "DSL_COMPILED")
    assert compiled.json()["data"]["dslId"] == s["lastDslId"]
    assert comments, "no heartbeat arrived"

    last = lambda f: f.seq == n  # noqa: E731
    replay = read_until(alice, sid, last, headers={"Last-Event-ID": "5"})
    assert [f.seq for f in replay] == list(range(6, n + 1))
    after = read_until(alice, sid, last, params={"after": 7})
    assert [f.seq for f in after] == list(range(8, n + 1))
    both = read_until(alice, sid, last, headers={"Last-Event-ID": "3"}, params={"after": 9})
    assert [f.seq for f in both] == list(range(10, n + 1))
    assert [f.json() for f in replay] == stored[5:]


def test_tails_live_events(alice: httpx.Client) -> None:
    s = create(alice, "slowly label=sse-live sleep=0.3,0.3,0.3", wait=False)
    assert s["status"] == "RUNNING"
    frames = read_until(alice, s["sessionId"], finished())
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    stored = runtime_events(alice, s["sessionId"])
    assert [f.json() for f in frames] == stored


def test_reconnect_with_last_event_id_gets_every_event_exactly_once(
    api_server: TetherServer, alice: httpx.Client
) -> None:
    s = create(alice, "slowly label=sse-reconnect sleep=0.2,0.8,0.2", wait=False)
    sid = s["sessionId"]
    first = read_until(alice, sid, lambda f: f.event == "TOOL_EXECUTION_FINISHED")
    # events keep coming while nobody listens
    wait_until(lambda: len(runtime_events(alice, sid)) > first[-1].seq + 1, what="events while disconnected")
    second = read_until(alice, sid, finished(), headers={"Last-Event-ID": first[-1].id or ""})
    frames = first + second
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    assert [f.json() for f in frames] == runtime_events(alice, sid)
    assert api_server.counter("sse-reconnect-2") == ["start", "end"]


def test_reconnect_across_an_async_callback(api_server: TetherServer, alice: httpx.Client) -> None:
    s = create(alice, "Order A-1002 in USD with a shipping quote please", wait=False)
    sid = s["sessionId"]
    first = read_until(alice, sid, finished("WAITING_ASYNC_CALLBACK"))
    waiting = next(f for f in first if f.event == "WAITING_ASYNC_CALLBACK").json()["data"]
    job_id = waiting["externalJobId"]
    r = post_callback(alice, job_id, api_server.ticket(job_id)["callbackToken"], payload={"price": 1, "carrier": "X"})
    assert r.status_code == 200
    wait_status(alice, sid, "SUCCEEDED")
    second = read_until(alice, sid, finished(), params={"after": first[-1].seq})
    frames = first + second
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    assert [f.json() for f in frames] == runtime_events(alice, sid)
    assert "TOOL_CALLBACK_RECEIVED" in [f.event for f in second]
    assert json.loads(second[-1].data or "{}")["data"]["status"] == "SUCCEEDED"
