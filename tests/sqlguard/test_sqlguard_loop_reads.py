"""The second wall on the event loop's paths, with the guard bypassed: ``run_briefly`` (SQLite, on
the caller's thread within a few milliseconds of work) and ``run_async`` (PostgreSQL, psycopg's
async connections, statements prepared once per connection) refuse writes, hold the timeout and
answer as ``execute`` does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.sqlguard.sqlguard_support import seed
from tests.sqlguard.test_sqlguard_executor import REOPEN, SLOW, WRITES, _counts
from tether.errors import ConfigError
from tether.sqlguard import GuardedQuery
from tether.sqlguard.readonly import Failure, QueryFailed, ReadOnlyExecutor

READ = "SELECT sBrandsId, COUNT(*) FROM viw_sales_order GROUP BY sBrandsId ORDER BY sBrandsId"


def bypass(sql: str, dialect: str) -> GuardedQuery:
    """A statement that never went through guard(): the wall alone must hold."""
    return GuardedQuery(sql=sql, tables=(), limit=500, dialect=dialect)


@pytest.fixture
def sqlite_ex(sqlite_url: str) -> Iterator[ReadOnlyExecutor]:
    seed(sqlite_url)
    ex = ReadOnlyExecutor(sqlite_url, timeout_s=0.5)
    yield ex
    ex.close()


@pytest.fixture
def pg_ex(postgres_url: str) -> Iterator[ReadOnlyExecutor]:
    seed(postgres_url)
    ex = ReadOnlyExecutor(postgres_url, timeout_s=0.5)
    yield ex
    asyncio.run(ex.aclose())


def test_a_brief_run_answers_as_execute_does(sqlite_ex: ReadOnlyExecutor) -> None:
    assert sqlite_ex.runs_briefly and not sqlite_ex.runs_async
    brief = sqlite_ex.run_briefly(bypass(READ, "sqlite"))
    assert brief is not None and brief == sqlite_ex.execute(READ)


@pytest.mark.parametrize("write", [*WRITES, "SELECT 1; DELETE FROM viw_sales_order"])
def test_a_brief_run_refuses_writes(sqlite_ex: ReadOnlyExecutor, sqlite_url: str, write: str) -> None:
    before = _counts(sqlite_url)
    with pytest.raises(QueryFailed) as info:
        sqlite_ex.run_briefly(bypass(REOPEN["sqlite"], "sqlite"))  # then the write, on the same connection
        sqlite_ex.run_briefly(bypass(write, "sqlite"))
    assert info.value.code in (Failure.READ_ONLY, Failure.DATABASE)
    assert _counts(sqlite_url) == before


def test_a_long_statement_gives_up_within_its_budget_and_runs_the_ordinary_way(sqlite_ex: ReadOnlyExecutor) -> None:
    started = time.perf_counter()
    assert sqlite_ex.run_briefly(bypass(SLOW["sqlite"], "sqlite"), budget_s=0.005) is None
    assert time.perf_counter() - started < 0.25  # the caller's thread was held for the budget, not the timeout
    with pytest.raises(QueryFailed) as info:  # the ordinary way: the full timeout
        sqlite_ex.run(bypass(SLOW["sqlite"], "sqlite"))
    assert info.value.code is Failure.TIMEOUT
    assert sqlite_ex.run_briefly(bypass("SELECT 1", "sqlite")) is not None  # the brief connection is fine


def test_only_postgres_through_psycopg_reads_on_the_loop(sqlite_ex: ReadOnlyExecutor) -> None:
    with pytest.raises(ConfigError):
        asyncio.run(sqlite_ex.run_async(bypass("SELECT 1", "sqlite")))


def test_postgres_on_the_loop_answers_as_execute_does_and_prepares_once(pg_ex: ReadOnlyExecutor) -> None:
    assert pg_ex.runs_async and not pg_ex.runs_briefly

    async def twice() -> list[object]:
        first = await pg_ex.run_async(bypass(READ, "postgres"))
        second = await pg_ex.run_async(bypass(READ, "postgres"))
        prepared = await pg_ex.run_async(bypass("SELECT statement FROM pg_prepared_statements", "postgres"))
        return [first, second, prepared]

    first, second, prepared = asyncio.run(twice())
    assert first == second == pg_ex.execute(READ)
    statements = [str(r[0]) for r in prepared.rows]  # type: ignore[attr-defined]
    assert sum(READ in s for s in statements) == 1  # prepared once, reused


@pytest.mark.parametrize(
    "write",
    [
        *WRITES,
        "SELECT 1; DELETE FROM viw_sales_order",  # smuggled behind a SELECT
        "SELECT 1; COMMIT; DELETE FROM viw_sales_order",  # out of the read-only transaction
        "SELECT 1; ROLLBACK; SET default_transaction_read_only = off; DELETE FROM viw_sales_order",
    ],
)
def test_postgres_on_the_loop_refuses_writes(pg_ex: ReadOnlyExecutor, postgres_url: str, write: str) -> None:
    before = _counts(postgres_url)

    async def attempt() -> None:
        with pytest.raises(QueryFailed):
            await pg_ex.run_async(bypass(write, "postgres"))
        for reopen in (REOPEN["postgres"], "SELECT 1; COMMIT; " + REOPEN["postgres"]):
            with pytest.raises(QueryFailed):  # not even preparable: a SET, or a second statement
                await pg_ex.run_async(bypass(reopen, "postgres"))
        with pytest.raises(QueryFailed):
            await pg_ex.run_async(bypass("DELETE FROM viw_sales_order", "postgres"))
        assert (await pg_ex.run_async(bypass("SELECT 1", "postgres"))).rows == [(1,)]

    asyncio.run(attempt())
    assert _counts(postgres_url) == before
    with sa.create_engine(postgres_url).connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM viw_sales_order").scalar_one() > 0


def test_postgres_on_the_loop_holds_the_statement_timeout(pg_ex: ReadOnlyExecutor) -> None:
    async def slow_then_fast() -> None:
        with pytest.raises(QueryFailed) as info:
            await pg_ex.run_async(bypass(SLOW["postgres"], "postgres"))
        assert info.value.code is Failure.TIMEOUT
        assert (await pg_ex.run_async(bypass("SELECT 2", "postgres"))).rows == [(2,)]

    started = time.perf_counter()
    asyncio.run(slow_then_fast())
    assert time.perf_counter() - started < 4  # 0.5 s timeout, not pg_sleep(5)
