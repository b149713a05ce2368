"""A replica's life cycle: readiness, and a graceful stop (SIGTERM) that lets a short turn finish
and hands a long one back to another replica at once — long before its lease would lapse."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import fresh_database
from tests.servers import ServerProcess, get_session, wait_status, wait_until

from .cluster import Cluster, RedisServer

pytestmark = [pytest.mark.slow]


def test_ready_checks_the_database_and_health_only_the_process(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, {"TETHER_PACKS": "tether.packs.finance_cs.pack", "TETHER_REPLICA_ID": "solo"})
    server.start()
    try:
        r = httpx.get(server.url + "/api/ready", timeout=10)
        assert r.status_code == 200 and r.json() == {"ready": True, "replica": "solo"}
    finally:
        server.stop()
    # a Redis that cannot be reached: alive, but not ready, and it says why
    server.env["TETHER_REDIS_URL"] = "redis://127.0.0.1:1/0"
    server.start()
    try:
        r = httpx.get(server.url + "/api/ready", timeout=10)
        assert r.status_code == 503 and r.json()["ready"] is False
        assert "Redis is not reachable" in r.json()["reason"]
        assert httpx.get(server.url + "/api/health", timeout=10).status_code == 200
    finally:
        server.stop()
    server.assert_no_server_errors()


@pytest.fixture
def pair(tmp_path: Path, postgres_url: str) -> Iterator[Cluster]:
    finance = fresh_database("postgres", tmp_path / "finance")
    finance_url = next(finance)
    (tmp_path / "redis").mkdir()
    redis = RedisServer(tmp_path / "redis").start()
    # a long lease: only the hand-back can explain a quick recovery
    c = Cluster(
        tmp_path, postgres_url, finance_url, redis.url, replicas=2, workers=0,
        TETHER_LEASE_S="60", TETHER_SHUTDOWN_GRACE_S="2",
    )  # fmt: skip
    try:
        yield c.start()
    finally:
        c.stop()
        redis.stop()
        finance.close()


@pytest.mark.postgres
def test_sigterm_finishes_a_short_turn_and_hands_a_long_one_to_another_replica(pair: Cluster) -> None:
    keep, leaving = pair.replicas
    with leaving.client() as client:
        short = client.post(
            "/api/agent/sessions", params={"wait": "false"}, json={"message": "slowly label=short sleep=1,0,0"}
        ).json()["sessionId"]
        long = client.post(
            "/api/agent/sessions", params={"wait": "false"}, json={"message": "slowly label=long sleep=30,0,0"}
        ).json()["sessionId"]
        wait_until(lambda: pair.counter_starts("long-1") == 1, what="the long call to start")
    assert leaving.proc is not None
    stopped = time.monotonic()
    leaving.proc.send_signal(signal.SIGTERM)
    leaving.proc.wait(timeout=30)
    with keep.client() as client:
        done = wait_status(client, long, "SUCCEEDED", timeout=20)
        assert time.monotonic() - stopped < 20  # the 60 s lease did not have to lapse
        failed = [st for st in done["executedSteps"] if st["status"] == "FAILED"]
        assert len(failed) == 1 and "interrupted" in failed[0]["result"]["error"]
        assert pair.counter_starts("long-1") == 1  # the call in flight was not run again
        finished = get_session(client, short)
        assert finished["status"] == "SUCCEEDED"
        assert all(st["status"] == "SUCCEEDED" for st in finished["executedSteps"])  # it finished in the grace
    assert "lease(s) handed back" in leaving.log_text()
    keep.assert_no_server_errors()
