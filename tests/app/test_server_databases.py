"""``tether serve`` pointed at PostgreSQL and MariaDB with TETHER_DATABASE_URL: it migrates the empty
database by itself and runs the whole example flow — async wait, authenticated callback, DSL,
replay — and survives a SIGKILL with a session waiting for its callback."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.app.conftest import (
    EXAMPLES,
    TetherServer,
    assert_contiguous,
    post_callback,
    runtime_events,
    wait_status,
    wait_until,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "kind", [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mariadb", marks=pytest.mark.mariadb)]
)
def test_the_example_flow_on_a_server_database(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = request.getfixturevalue(f"{kind}_url")
    server = TetherServer(tmp_path, [EXAMPLES], TETHER_DATABASE_URL=url).start()
    try:
        with server.client() as alice:
            r = alice.post("/api/agent/sessions", json={"message": "What does order A-1001 cost in EUR, and shipping?"})
            assert r.status_code == 200, r.text
            s = r.json()
            assert s["status"] == "WAITING_ASYNC_CALLBACK"
            job = s["waitingExternalJobId"]
            server.kill()
            server.start()
            ticket = server.ticket(job)
            assert post_callback(
                alice, job, ticket["callbackToken"], payload={"carrier": "DHL", "price": 7, "currency": "EUR"}
            ).json() == {"ok": True}
            done = wait_status(alice, s["sessionId"], "SUCCEEDED")
            assert "7 EUR by DHL" in done["transcript"][-1]["content"]
            assert_contiguous(runtime_events(alice, s["sessionId"]))
            with server.client("dev-bob") as bob:
                assert bob.get(f"/api/agent/sessions/{s['sessionId']}").status_code == 404
            with ThreadPoolExecutor(1) as pool:  # the replay waits for its own quote job: answer it
                replay = pool.submit(
                    alice.post, f"/api/agent/dsl/{done['lastDslId']}/execute", json={"order_id": "A-1002"}
                )
                again = wait_until(lambda: [j for j in server.outbox() if j != job], what="the replay's job")[0]
                post_callback(alice, again, server.outbox()[again]["callbackToken"], payload={"price": 3})
                result = replay.result(timeout=30).json()
            assert result["status"] == "SUCCEEDED", result
            assert result["steps"][0]["output"]["customer"] == "Northwind"
    finally:
        server.stop()
    server.assert_no_server_errors()
