"""Session leases and sweep claims between replicas: two (or more) ``SqlStore`` instances on one
database stand for replicas, each with its own writer connection, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from tether.core.ports import Commit
from tether.core.session import Status
from tether.store import SqlStore
from tether.store.database import normalize_url

from .builders import FakeClock, job, new_session

pytestmark = pytest.mark.anyio
LEASE = 10.0
DB = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mariadb", marks=pytest.mark.mariadb),
]


@pytest.fixture(params=DB)
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


class Replicas:
    """Opens stores on one database, each a replica with its own name and writer connection."""

    def __init__(self, url: str, clock: FakeClock) -> None:
        self.url, self.clock = url, clock
        self.opened: list[SqlStore] = []

    async def open(self, n: int) -> list[SqlStore]:
        for _ in range(n):
            name = f"replica-{len(self.opened)}"
            store = SqlStore(self.url, lease_seconds=LEASE, clock=self.clock, replica_id=name)
            await store.open()
            self.opened.append(store)
        return self.opened[-n:]


@pytest.fixture
async def replicas(url: str, clock: FakeClock) -> AsyncIterator[Replicas]:
    r = Replicas(url, clock)
    yield r
    for store in r.opened:
        await store.close()


def _lease(url: str, session_id: str) -> tuple[str | None, float | None]:
    engine = sa.create_engine(normalize_url(url))
    try:
        with engine.connect() as c:
            row = c.execute(
                sa.text("SELECT lease_owner, lease_until FROM agent_session WHERE id = :id"), {"id": session_id}
            ).one()
        return row[0], row[1]
    finally:
        engine.dispose()


async def test_a_commit_leases_a_running_session_to_its_replica_and_leaving_running_frees_it(
    replicas: Replicas, url: str, clock: FakeClock
) -> None:
    (a,) = await replicas.open(1)
    s = new_session()
    await a.create(Commit(s))
    assert _lease(url, s.session_id) == (a.replica_id, clock.now() + LEASE)
    s.transition(Status.WAITING_USER_INPUT)
    await a.commit(Commit(s))
    assert _lease(url, s.session_id) == (None, None)


async def test_a_lapsed_lease_is_stolen_once_and_the_old_holder_can_no_longer_renew_it(
    replicas: Replicas, url: str, clock: FakeClock
) -> None:
    a, b = await replicas.open(2)
    s = new_session()
    await a.create(Commit(s))
    assert await b.claim_expired() == []  # A's lease is live
    assert await a.renew_lease(s.session_id, s.version) is True
    clock.advance(LEASE + 1)  # A stopped renewing (it died, or stalled)
    assert await b.claim_expired() == [s.session_id]
    assert _lease(url, s.session_id)[0] == b.replica_id
    assert await a.claim_expired() == []  # B's claim is a live lease now: nobody else gets it
    assert await a.renew_lease(s.session_id, s.version) is False  # A lost it
    assert await b.renew_lease(s.session_id, s.version) is True
    clock.advance(LEASE + 1)  # B dies too: the lease lapses again, and A may take it back
    assert await a.claim_expired() == [s.session_id]


async def test_concurrent_recovery_sweeps_claim_every_lapsed_session_exactly_once(
    replicas: Replicas, clock: FakeClock
) -> None:
    stores = await replicas.open(3)
    ids = []
    for _ in range(30):
        s = new_session()
        await stores[0].create(Commit(s))
        ids.append(s.session_id)
    clock.advance(LEASE + 1)
    rounds = await asyncio.gather(*(st.claim_expired(limit=12) for st in stores for _ in range(3)))
    claimed = [sid for r in rounds for sid in r]
    assert sorted(claimed) == sorted(ids)  # all of them, none twice


async def test_a_waiting_session_is_claimed_by_one_replica_until_released(
    replicas: Replicas, url: str, clock: FakeClock
) -> None:
    a, b = await replicas.open(2)
    s = new_session()
    await a.create(Commit(s))
    assert await b.claim_session(s.session_id) is False  # RUNNING on A
    s.transition(Status.WAITING_ASYNC_CALLBACK)
    await a.commit(Commit(s))
    wins = await asyncio.gather(a.claim_session(s.session_id), b.claim_session(s.session_id))
    assert sorted(wins) == [False, True]
    holder, other = (a, b) if wins[0] else (b, a)
    assert await other.release_session(s.session_id) is False  # not its claim
    assert await other.claim_session(s.session_id) is False
    assert await holder.release_session(s.session_id) is True
    assert await other.claim_session(s.session_id) is True
    clock.advance(LEASE + 1)  # a claim whose replica died lapses like any lease
    assert await holder.claim_session(s.session_id) is True
    assert _lease(url, s.session_id)[0] == holder.replica_id


async def test_overdue_jobs_are_failed_by_exactly_one_sweep(replicas: Replicas, clock: FakeClock) -> None:
    stores = await replicas.open(3)
    s = new_session()
    jobs = [job(s, f"j-{i}", deadline=clock.now() + 5, call=f"call-{i}") for i in range(20)]
    await stores[0].create(Commit(s, new_jobs=[*jobs, job(s, "j-later", deadline=clock.now() + 500, call="c")]))
    clock.advance(6)
    rounds = await asyncio.gather(*(st.claim_overdue_jobs("too late", limit=7) for st in stores for _ in range(2)))
    failed = [j.job_id for r in rounds for j in r]
    assert sorted(failed) == sorted(j.job_id for j in jobs)
    stored = await stores[1].get_job("j-3")
    assert stored is not None and (stored.status, stored.error) == ("FAILED", "too late")
    later = await stores[1].get_job("j-later")
    assert later is not None and later.status == "PENDING"


async def test_a_replica_shutting_down_hands_its_leases_back_at_once(replicas: Replicas, url: str) -> None:
    a, b = await replicas.open(2)
    mine, theirs = new_session(), new_session()
    await a.create(Commit(mine))
    await b.create(Commit(theirs))
    assert await b.claim_expired() == []
    assert await a.hand_back_leases() == 1
    assert await b.claim_expired() == [mine.session_id]  # no waiting for the lease to lapse
    assert _lease(url, theirs.session_id)[0] == b.replica_id
