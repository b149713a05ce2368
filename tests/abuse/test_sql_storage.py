"""The abuse counters in tether's database (``SqlStorage``), on the real PostgreSQL and MariaDB:
fixed windows count and expire, moving windows admit ``limit`` entries per window, ``limits``'
rate limiters read them as they read Redis, namespaces stay apart, expired rows are cleaned up,
and two storages (two replicas' engines) hitting one key at once lose no count and grant no
more than the limit. A database that does not answer turns the limits off, loudly."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from limits import RateLimitItemPerMinute, RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage, RedisStorage
from limits.aio.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from limits.errors import StorageError

from tests.conftest import fresh_database
from tether.abuse.login import LoginGuard
from tether.abuse.refusal import LimitReached
from tether.abuse.sql_storage import SqlStorage
from tether.abuse.storage import StorageDown, open_storage
from tether.settings import create_settings
from tether.store import upgrade
from tether.store.database import normalize_url

pytestmark = pytest.mark.anyio
SERVERS = [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mariadb", marks=pytest.mark.mariadb)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=SERVERS)
def server_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh PostgreSQL or MariaDB database at tether's schema head."""
    for url in fresh_database(request.param, tmp_path):
        upgrade(url)
        yield url


@pytest.fixture
async def storage(server_url: str) -> AsyncIterator[SqlStorage]:
    s = SqlStorage(normalize_url(server_url), f"test-{uuid.uuid4().hex[:8]}")
    try:
        yield s
    finally:
        s.close()


def rows(s: SqlStorage, table: str) -> int:
    with s.engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one())


async def test_a_fixed_window_counts_expires_and_starts_again(storage: SqlStorage) -> None:
    assert await storage.get("k") == 0
    assert [await storage.incr("k", 1) for _ in range(3)] == [1, 2, 3]
    assert await storage.incr("k", 1, amount=5) == 8
    assert await storage.incr("k", 1, amount=-1) == 7  # an attempt no longer in flight
    assert await storage.get("k") == 7
    assert time.time() < await storage.get_expiry("k") <= time.time() + 1
    assert await storage.get("other") == 0
    time.sleep(1.1)
    assert await storage.get("k") == 0  # expired: reads as absent
    assert await storage.incr("k", 60) == 1  # and starts again with a new expiry
    assert await storage.get_expiry("k") > time.time() + 58
    await storage.clear("k")
    assert await storage.get("k") == 0


async def test_a_moving_window_admits_its_limit_per_window(storage: SqlStorage) -> None:
    assert [await storage.acquire_entry("w", 3, 1) for _ in range(4)] == [True, True, True, False]
    start, count = await storage.get_moving_window("w", 3, 1)
    assert count == 3 and time.time() - 1 < start <= time.time()
    assert not await storage.acquire_entry("w", 3, 1, amount=4)  # more than the limit at once: never
    time.sleep(1.1)
    assert (await storage.get_moving_window("w", 3, 1))[1] == 0
    assert await storage.acquire_entry("w", 3, 1, amount=2)
    assert not await storage.acquire_entry("w", 3, 1, amount=2)  # 2 + 2 > 3
    assert await storage.acquire_entry("w", 3, 1)
    assert (await storage.get_moving_window("w", 3, 1))[1] == 3
    await storage.clear("w")
    assert (await storage.get_moving_window("w", 3, 1))[1] == 0
    assert await storage.acquire_entry("w", 3, 1)


async def test_the_rate_limiters_read_it_as_they_read_redis(storage: SqlStorage) -> None:
    moving, fixed = MovingWindowRateLimiter(storage), FixedWindowRateLimiter(storage)
    per_minute = RateLimitItemPerMinute(2)
    assert await moving.hit(per_minute, "login-failures", "user", "alice")
    assert await moving.test(per_minute, "login-failures", "user", "alice")
    assert await moving.hit(per_minute, "login-failures", "user", "alice")
    assert not await moving.test(per_minute, "login-failures", "user", "alice")
    assert not await moving.hit(per_minute, "login-failures", "user", "alice")
    stats = await moving.get_window_stats(per_minute, "login-failures", "user", "alice")
    assert stats.remaining == 0 and time.time() + 58 < stats.reset_time <= time.time() + 60
    assert (await moving.get_window_stats(per_minute, "login-failures", "user", "bob")).remaining == 2

    daily = RateLimitItemPerSecond(100, 86_400)
    assert await fixed.hit(daily, "daily_tokens", "t|alice", cost=60)
    assert not await fixed.hit(daily, "daily_tokens", "t|alice", cost=60)  # 120 > 100: the turn after is refused
    assert not await fixed.test(daily, "daily_tokens", "t|alice")
    stats = await fixed.get_window_stats(daily, "daily_tokens", "t|alice")
    assert stats.remaining == 0 and stats.reset_time > time.time() + 86_000
    await moving.clear(per_minute, "login-failures", "user", "alice")
    assert await moving.test(per_minute, "login-failures", "user", "alice")


async def test_namespaces_stay_apart_and_reset_forgets_only_its_own(storage: SqlStorage, server_url: str) -> None:
    other = SqlStorage(normalize_url(server_url), storage.namespace + "-other")
    try:
        long_key = "login-failures/user/" + "名" * 2000  # keys are digested: any length fits
        await storage.incr(long_key, 60)
        await storage.acquire_entry(long_key, 5, 60)
        await other.incr(long_key, 60, amount=7)
        assert await storage.get(long_key) == 1 and await other.get(long_key) == 7
        assert (await other.get_moving_window(long_key, 5, 60))[1] == 0
        assert await storage.reset() == 2
        assert await storage.get(long_key) == 0 and await other.get(long_key) == 7
        assert await storage.check()
    finally:
        other.close()


async def test_expired_rows_are_deleted_lazily(storage: SqlStorage) -> None:
    await storage.incr("short", 1)
    await storage.acquire_entry("short", 1, 1)
    await storage.incr("long", 60)
    assert rows(storage, "abuse_counter") == 2 and rows(storage, "abuse_window") == 1
    time.sleep(1.1)
    storage._cleaned_at = 0.0  # the once-a-minute clean-up is due
    await storage.incr("long", 60)
    assert rows(storage, "abuse_counter") == 1 and rows(storage, "abuse_window") == 0
    assert await storage.get("long") == 2


async def test_two_replicas_hitting_one_key_at_once_lose_no_count_and_grant_no_more_than_the_limit(
    server_url: str,
) -> None:
    namespace = f"test-{uuid.uuid4().hex[:8]}"
    a = SqlStorage(normalize_url(server_url), namespace)
    b = SqlStorage(normalize_url(server_url), namespace)
    try:
        granted = await asyncio.gather(*(s.acquire_entry("burst", 10, 60) for s in [a, b] * 25))
        assert granted.count(True) == 10, granted
        assert (await a.get_moving_window("burst", 10, 60))[1] == 10

        counts = await asyncio.gather(*(s.incr("in-flight", 60) for s in [a, b] * 25))
        assert sorted(counts) == list(range(1, 51))  # each increment saw every one before it
        assert await b.get("in-flight") == 50
        await asyncio.gather(*(s.incr("in-flight", 60, amount=-1) for s in [a, b] * 25))
        assert await a.get("in-flight") == 0
    finally:
        a.close()
        b.close()


async def test_failed_logins_spread_over_two_replicas_lock_out_at_the_limit_in_total(server_url: str) -> None:
    settings = create_settings(database_url=server_url, packs="", login_max_failures=3, login_lockout_s=30)
    a, b = SqlStorage(normalize_url(server_url), "t-login"), SqlStorage(normalize_url(server_url), "t-login")
    try:
        refused: list[str] = []
        guards = [LoginGuard(s, settings, refused.append, StorageDown()) for s in (a, b)]
        for guard in (guards[0], guards[1], guards[0]):
            attempt = await guard.admit("alice", "10.0.0.1")
            await attempt.failed()
        for guard in guards:
            with pytest.raises(LimitReached) as locked:
                await guard.admit("Alice ", "10.0.0.2")  # the same username, another address
            assert "too many failed logins for this username" in locked.value.detail
            assert 25 <= locked.value.retry_after_s <= 30
        assert refused == ["login_user", "login_user"]
        await (await guards[1].admit("bob", "10.0.0.1")).succeeded()  # another user is not held up
    finally:
        a.close()
        b.close()


async def test_fifty_guesses_at_once_over_two_replicas_get_no_more_than_the_limit_through(server_url: str) -> None:
    """The last failure locks out and forgets the failures; an attempt that another replica
    reserved meanwhile must still see the lock (it used to slip through as a sixth guess)."""
    settings = create_settings(database_url=server_url, packs="", login_max_failures=5, login_lockout_s=30)
    a, b = SqlStorage(normalize_url(server_url), "t-burst"), SqlStorage(normalize_url(server_url), "t-burst")
    guards = [LoginGuard(s, settings, lambda _: None, StorageDown()) for s in (a, b)]

    async def guess(i: int) -> bool:
        await asyncio.sleep(i * 0.004)  # a guesser's stream, not one instant
        try:
            attempt = await guards[i % 2].admit("carol", "10.0.0.3")
        except LimitReached:
            return False
        await asyncio.sleep(0.02)  # the ERP checks the password
        await attempt.failed()  # and says no
        return True

    try:
        for _ in range(3):
            await a.reset()
            through = await asyncio.gather(*(guess(i) for i in range(50)))
            assert 1 <= through.count(True) <= 5, through
    finally:
        a.close()
        b.close()


async def test_a_database_that_does_not_answer_turns_the_limits_off_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As with Redis down: the login goes on (no lock-out of everyone), the log says why."""
    settings = create_settings(
        database_url="postgresql://tether@127.0.0.1:1/tether", packs="", login_max_failures=1
    )  # nothing listens there
    storage = open_storage(settings)
    assert isinstance(storage, SqlStorage)
    try:
        with pytest.raises(StorageError):
            await storage.incr("k", 60)
        refused: list[str] = []
        guard = LoginGuard(storage, settings, refused.append, StorageDown())
        with caplog.at_level(logging.WARNING, logger="tether.abuse"):
            for _ in range(3):
                attempt = await guard.admit("alice", "127.0.0.1")
                await attempt.failed()
        assert refused == []
        assert any("abuse limits are not applied" in r.getMessage() for r in caplog.records)
    finally:
        storage.close()


def test_the_storage_follows_the_deployment(tmp_path: Path) -> None:
    """Redis when configured; else the database when it is a server; memory on the embedded SQLite."""
    sqlite = create_settings(database_url=f"sqlite:///{tmp_path / 't.db'}", packs="")
    assert isinstance(open_storage(sqlite), MemoryStorage)
    redis = create_settings(database_url="postgresql://h/db", redis_url="redis://127.0.0.1:6379/0", packs="")
    assert isinstance(open_storage(redis), RedisStorage)
    for url in ("postgresql://h/db", "mariadb://h/db"):
        s = open_storage(create_settings(database_url=url, packs="", limits_namespace="ns"))
        assert isinstance(s, SqlStorage) and s.namespace == "ns"
        s.close()
