"""``GET /metrics`` scraped from a real server as Prometheus would, and parsed with
prometheus-client's own parser: turns by outcome, model and tool latencies, tool errors, async
jobs waiting and SSE clients move with what the server does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.app.conftest import TetherServer, make_server, post_callback, sse_frames, wait_status, wait_until

pytestmark = pytest.mark.slow

ORDER_QUESTION = "What is order A-1001 in EUR, and can I get a shipping quote?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TetherServer]:
    s = make_server(Path(tmp_path_factory.mktemp("metrics"))).start()
    try:
        yield s
    finally:
        s.stop()
    s.assert_no_server_errors()


def scrape(server: TetherServer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample as (name, sorted labels) -> value; no token needed, as for a scraper."""
    r = httpx.get(server.url + "/metrics", timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


def test_scrape_follows_turns_tools_jobs_and_streams(server: TetherServer) -> None:
    before = scrape(server)
    assert value(before, "tether_async_jobs_waiting") == 0
    assert value(before, "tether_sse_clients") == 0

    with server.client("dev-alice") as alice:
        r = alice.post("/api/agent/sessions", json={"message": ORDER_QUESTION})
        assert r.status_code == 200, r.text
        session = r.json()
        assert session["status"] == "WAITING_ASYNC_CALLBACK"
        waiting = scrape(server)
        assert value(waiting, "tether_turns_total", outcome="WAITING_ASYNC_CALLBACK") == 1
        assert value(waiting, "tether_async_jobs_waiting") == 1
        assert value(waiting, "tether_model_call_seconds_count", model="planner") >= 1
        assert value(waiting, "tether_tool_call_seconds_count", tool="lookup_order", outcome="ok") == 1
        assert value(waiting, "tether_tool_call_seconds_sum", tool="lookup_order") > 0

        # a bad call is a tool error, by tool name (and nothing about who made it)
        bad = alice.post("/tools/lookup-order", json={"no_such_argument": 1})
        assert bad.status_code == 200 and bad.json()["kind"] == "error"
        errors = scrape(server)
        assert value(errors, "tether_tool_errors_total", tool="lookup_order") == 1
        assert value(errors, "tether_tool_call_seconds_count", tool="lookup_order", outcome="error") == 1
        assert "alice" not in httpx.get(server.url + "/metrics").text

        # an open event stream is one SSE client while it is open
        opened, release = threading.Event(), threading.Event()

        def stream() -> None:
            with alice.stream("GET", f"/api/agent/sessions/{session['sessionId']}/events") as resp:
                for _ in sse_frames(resp):
                    opened.set()
                    if release.wait(0.01):
                        break

        reader = threading.Thread(target=stream)
        reader.start()
        assert opened.wait(10)
        assert value(scrape(server), "tether_sse_clients") == 1
        release.set()

        job_id = session["waitingExternalJobId"]
        ticket = server.ticket(job_id)
        reply = post_callback(alice, job_id, ticket["callbackToken"], payload={"carrier": "SF", "price": 36})
        assert reply.status_code == 200, reply.text
        wait_status(alice, session["sessionId"], "SUCCEEDED")
        reader.join(10)

    def settled() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        now = scrape(server)
        return now if value(now, "tether_sse_clients") == 0 else None

    done = wait_until(settled, what="the SSE stream to close")
    assert value(done, "tether_turns_total", outcome="SUCCEEDED") == 1
    assert value(done, "tether_async_jobs_waiting") == 0
