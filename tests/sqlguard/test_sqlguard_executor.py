"""The second wall alone: with the guard bypassed, each database refuses writes and long statements."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.sqlguard.sqlguard_support import rows, url_dialect
from tether.sqlguard.readonly import Failure, QueryFailed, ReadOnlyExecutor

WRITES = [
    "INSERT INTO viw_customer (sBrandsId, sCustomerId, sName) VALUES ('B001', 'X', 'x')",
    "UPDATE viw_sales_order SET fAmount = 0",
    "DELETE FROM viw_sales_order",
    "CREATE TABLE stolen (x INTEGER)",
    "DROP TABLE payroll",
    "ALTER TABLE viw_customer ADD COLUMN y INTEGER",
]

SLOW = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
    "postgres": "SELECT pg_sleep(5)",
    "mysql": "SELECT SLEEP(5)",
}

# A bypassing statement that tries to switch the session back to read-write for the next call.
REOPEN = {
    "sqlite": "PRAGMA query_only = 0",
    "postgres": "SET default_transaction_read_only = off",
    "mysql": "SET SESSION TRANSACTION READ WRITE",
}


@pytest.fixture
def executor(seeded_url: str) -> Iterator[ReadOnlyExecutor]:
    ex = ReadOnlyExecutor(seeded_url, timeout_s=0.5)
    yield ex
    ex.close()


def _counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            names = sa.inspect(conn).get_table_names()
            return {t: conn.exec_driver_sql(f"SELECT COUNT(*) FROM {t}").scalar_one() for t in sorted(names)}
    finally:
        engine.dispose()


@pytest.mark.parametrize("write", WRITES)
def test_database_refuses_writes_without_the_guard(executor: ReadOnlyExecutor, seeded_url: str, write: str) -> None:
    before = _counts(seeded_url)
    with pytest.raises(QueryFailed) as info:
        executor.execute(write)
    assert info.value.code is Failure.READ_ONLY
    assert _counts(seeded_url) == before
    assert sa.inspect(sa.create_engine(seeded_url)).get_columns("viw_customer").__len__() == 4


def test_session_cannot_be_reopened_for_writing(executor: ReadOnlyExecutor, seeded_url: str) -> None:
    before = _counts(seeded_url)
    for _ in range(2):  # same pooled connection: the second write must still be refused
        executor.execute(REOPEN[executor.dialect])
        with pytest.raises(QueryFailed) as info:
            executor.execute("DELETE FROM viw_sales_order")
        assert info.value.code is Failure.READ_ONLY
    assert _counts(seeded_url) == before


def test_statement_timeout(executor: ReadOnlyExecutor) -> None:
    with pytest.raises(QueryFailed) as info:
        executor.execute(SLOW[executor.dialect])
    assert info.value.code is Failure.TIMEOUT
    # The connection is usable afterwards.
    assert executor.execute("SELECT 1").rows == [(1,)]


def test_reads_work_and_percent_signs_are_literal(executor: ReadOnlyExecutor) -> None:
    result = executor.execute("SELECT COUNT(*) FROM customer_session WHERE content LIKE '%refund%'")
    assert result.rows == [(len(rows()["customer_session"]),)]
    assert executor.dialect == url_dialect(str(executor._engine.url)) or executor.dialect == "sqlite"


def test_rows_are_capped_even_without_the_guard(seeded_url: str) -> None:
    ex = ReadOnlyExecutor(seeded_url, max_rows=2)
    try:
        result = ex.execute("SELECT * FROM viw_sales_order")
        assert len(result.rows) == 2 and result.truncated
    finally:
        ex.close()


def test_errors_are_translated(executor: ReadOnlyExecutor) -> None:
    with pytest.raises(QueryFailed) as info:
        executor.execute("SELECT * FROM no_such_table")
    assert info.value.code is Failure.DATABASE and info.value.retryable
