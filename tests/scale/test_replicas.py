"""Scale-out under failure, for real: 3 ``tether serve`` replicas on one PostgreSQL (or MariaDB)
database and a private Redis, 2 ``tether worker`` processes, sessions sent round-robin (the finance example, which
waits for an analysis job, and a three-step tool loop), each followed over SSE on a replica other
than the one that created it. Part-way, one replica and one worker are SIGKILLed — or Redis is.

Then: every session ends SUCCEEDED; none is RUNNING without a live lease; what every reader saw is
exactly the session's stored event sequence (gapless, no duplicate, in order); a tool call that
finished is never run again; every analysis job's callback is applied exactly once; the audit
chain the replicas appended to together is one unbroken chain.

``TETHER_TEST_SCALE_SESSIONS`` sets the number of sessions (default 45: the run stays near two
minutes on two cores; the issue's 300 work too, given the time).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import fresh_database
from tests.servers import wait_until
from tether.store.audit import SqlAuditLog
from tether.store.database import normalize_url

from .cluster import Cluster, Reading, RedisServer, follow

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
SESSIONS = int(os.environ.get("TETHER_TEST_SCALE_SESSIONS", "45"))
FINANCE_QUESTION = "请分析最近30天贵金属规则调整相关的客服问题并生成报告"
TOKEN = "dev-alice"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """tether's database and the finance pack's, both fresh, on the server ``request.param`` names."""
    kind = request.param
    tether = fresh_database(kind, tmp_path / "tether")
    finance = fresh_database(kind, tmp_path / "finance")
    try:
        yield next(tether), next(finance)
    finally:
        finance.close()
        tether.close()


@pytest.fixture
def cluster(tmp_path: Path, databases: tuple[str, str], redis_server: RedisServer) -> Iterator[Cluster]:
    from tether.packs.finance_cs.data import create_schema
    from tether.packs.finance_cs.generator import generate

    tether_url, finance_url = databases
    engine = sa.create_engine(normalize_url(finance_url))
    create_schema(engine)
    generate(engine, rows=1500, days=120, seed=7)
    engine.dispose()
    c = Cluster(tmp_path, tether_url, finance_url, redis_server.url)
    try:
        yield c.start()
    finally:
        c.stop()


def _message(i: int) -> str:
    if i % 3 == 0:
        return FINANCE_QUESTION
    return f"please do this slowly label=s{i} sleep=0.3,0.3,0.3"


class Load:
    """Creates sessions round-robin on the live replicas and starts one reader per session on
    another replica, all on one event loop in a thread."""

    def __init__(self, cluster: Cluster, deadline_s: float) -> None:
        self.cluster = cluster
        self.deadline = time.monotonic() + deadline_s
        self.created: dict[str, int] = {}  # session id -> index of the message
        self.readings: list[Reading] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.futures: list[Any] = []
        self.sent = 0

    def send(self, count: int) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            for _ in range(count):
                i = self.sent
                self.sent += 1
                for attempt in range(len(self.cluster.replicas)):
                    index = (i + attempt) % len(self.cluster.replicas)
                    replica = self.cluster.replicas[index]
                    if replica not in self.cluster.alive():
                        continue
                    try:
                        r = client.post(
                            f"{replica.url}/api/agent/sessions", params={"wait": "false"}, json={"message": _message(i)}
                        )
                    except httpx.TransportError:
                        continue
                    assert r.status_code == 200, r.text
                    self._read(r.json()["sessionId"], i, index)
                    break
                else:
                    raise AssertionError("no replica took the session")

    def _read(self, session_id: str, i: int, created_on: int) -> None:
        self.created[session_id] = i
        reading = Reading(session_id)
        self.readings.append(reading)

        def pick(attempt: int) -> str:
            return self.cluster.other((created_on + attempt) % len(self.cluster.replicas)).url

        coro = follow(reading, pick, TOKEN, self.deadline)
        self.futures.append(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def wait(self) -> list[Reading]:
        for f in self.futures:
            f.result(timeout=max(self.deadline - time.monotonic(), 1) + 30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        return self.readings


def _db_rows(url: str, sql: str) -> list[Any]:
    engine = sa.create_engine(normalize_url(url))
    try:
        with engine.connect() as c:
            return list(c.execute(sa.text(sql)).all())
    finally:
        engine.dispose()


def _held_by(url: str, replica: str) -> list[str]:
    sql = f"SELECT id FROM agent_session WHERE status = 'RUNNING' AND lease_owner = '{replica}'"
    return [r[0] for r in _db_rows(url, sql)]


@pytest.mark.parametrize(
    ("databases", "failure"),
    [
        pytest.param("postgres", "replica-and-worker", marks=pytest.mark.postgres),
        pytest.param("postgres", "redis", marks=pytest.mark.postgres),
        pytest.param("mariadb", "replica-and-worker", marks=pytest.mark.mariadb),
    ],
    indirect=["databases"],
)
def test_sessions_survive_the_loss_of_a_replica_a_worker_or_redis(
    cluster: Cluster, redis_server: RedisServer, databases: tuple[str, str], failure: str
) -> None:
    tether_url, finance_url = databases  # PostgreSQL or MariaDB: the same checks hold on both
    load = Load(cluster, deadline_s=180)
    first = max(SESSIONS // 3, 3)
    load.send(first)
    killed: list[str] = []
    if failure == "replica-and-worker":
        # kill the replica while it runs turns, and a worker while an analysis runs
        held = wait_until(
            lambda: _held_by(tether_url, "replica-2"), timeout=60, interval=0.02, what="a turn on replica-2"
        )
        wait_until(
            lambda: _db_rows(finance_url, "SELECT id FROM cs_analysis_job WHERE status = 'running'"),
            timeout=60,
            interval=0.02,
            what="an analysis to run",
        )
        cluster.replicas[2].kill()
        cluster.workers[0].kill()
        killed = held
    else:
        redis_server.kill()
        r = httpx.get(cluster.replicas[1].url + "/api/ready", timeout=10)
        assert r.status_code == 503 and "Redis" in r.json()["reason"], r.text
        assert httpx.get(cluster.replicas[1].url + "/api/health", timeout=10).status_code == 200
    load.send(SESSIONS - first)
    readings = load.wait()

    with httpx.Client(base_url=cluster.replicas[0].url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for reading in readings:
            session = client.get(f"/api/agent/sessions/{reading.session_id}").json()
            assert session["status"] == "SUCCEEDED", (reading, session.get("lastError"))
            assert reading.final == "SUCCEEDED", reading
            stored = client.get(f"/api/agent/sessions/{reading.session_id}/runtime").json()["events"]
            assert reading.seqs == [e["id"] for e in stored], f"reader of {reading.session_id} saw {reading.seqs}"
            assert reading.seqs == list(range(1, len(reading.seqs) + 1))  # gapless, no duplicate
            i = load.created[reading.session_id]
            if i % 3:  # the tool loop: a call that finished was never run again
                for n in (1, 2, 3):
                    assert cluster.counter_starts(f"s{i}-{n}") <= 1, (reading.session_id, n)
            else:  # the finance example: its analysis callback was applied exactly once
                assert reading.types.count("TOOL_CALLBACK_RECEIVED") == 1, reading.types

    running = _db_rows(tether_url, "SELECT id, lease_until FROM agent_session WHERE status = 'RUNNING'")
    assert all(until is not None and until > time.time() for _, until in running), running
    assert _db_rows(tether_url, "SELECT count(*) FROM agent_session")[0][0] == SESSIONS
    jobs = _db_rows(finance_url, "SELECT status, count(*) FROM cs_analysis_job GROUP BY status")
    assert dict(jobs) == {"done": len([i for i in load.created.values() if i % 3 == 0])}, jobs
    pending = _db_rows(tether_url, "SELECT count(*) FROM async_job WHERE status = 'PENDING' OR NOT applied")
    assert pending[0][0] == 0
    audit = SqlAuditLog(tether_url)
    try:
        assert audit.rows() and audit.verify() is None
    finally:
        audit.close()
    if killed:  # the sessions the dead replica was running were recovered elsewhere, and finished
        recovered = [r for r in readings if r.session_id in killed]
        assert recovered and all(r.final == "SUCCEEDED" for r in recovered)
    if failure == "redis":  # Redis back on its port: the replicas reconnect by themselves
        redis_server.start()
        wait_until(
            lambda: httpx.get(cluster.replicas[1].url + "/api/ready", timeout=10).status_code == 200,
            timeout=30,
            what="readiness once Redis is back",
        )
    for replica in cluster.alive():
        replica.assert_no_server_errors()
