"""Every way the three dialects spell a literal passes the guard and means the same value after it.

The guard regenerates the query from its tree, so a literal's spelling changes on the way (``$$x$$``
becomes ``'x'``, ``0x41`` becomes ``x'41'``). Each case runs on the real server twice — as written,
and as the guard regenerated it — and both must give the same value: a spelling the regeneration
got wrong would be a value change at best and a way out of the literal at worst.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.sqlguard.sqlguard_support import policy
from tether.sqlguard import Reason, SqlRejected, guard
from tether.sqlguard.readonly import ReadOnlyExecutor

logging.getLogger("sqlglot").setLevel(logging.ERROR)

SPELLINGS: dict[str, list[str]] = {
    "postgres": [
        "$$acme$$",
        "$tag$it's; DROP TABLE viw_customer; --$tag$",
        "$outer$ $$ nested $$ $outer$",
        "$$a\\'b$$",
        "$$/* not a comment */ -- nor this$$",
        "$$$$",
        "$q$x'; SELECT pg_sleep(5); --$q$",
        "E'it\\'s\\n'",
        "e'\\\\'",
        "E'\\x41\\101\\u0041'",
        "U&'d\\0061t\\+000061'",
        "U&'d!0061t' UESCAPE '!'",
        "N'acme'",
        "B'0101'",
        "X'1F'",
        "'back\\slash'",
        "'it''s'",
    ],
    "mysql": [
        "N'acme'",
        "n'it\\'s'",
        "X'41'",
        "x'4142'",
        "0x41",
        "b'1000001'",
        "0b101",
        "'it\\'s'",
        "'line\\nbreak\\ttab\\\\'",
        "'\\%\\_'",
        "'a\\0b'",
        "'\\Z'",
        "_utf8mb4'acme'",
        "_binary'abc'",
        "_utf8mb4 X'41'",
        "'x\\'; DROP TABLE viw_customer; -- '",
        '"double \\" quoted"',
        "'it''s'",
    ],
    "sqlite": ["X'41'", "x'4142'", "'back\\slash'", "'it''s'", "0x41", "'x''; DROP TABLE viw_customer; --'"],
}


@pytest.fixture
def executor(seeded_url: str) -> Iterator[ReadOnlyExecutor]:
    ex = ReadOnlyExecutor(seeded_url, timeout_s=10)
    yield ex
    ex.close()


def _value(ex: ReadOnlyExecutor, sql: str) -> object:
    rows = ex.execute(sql).rows
    assert len(rows) == 1, (sql, rows)
    return rows[0][0]


def test_every_literal_spelling_passes_and_keeps_its_value(executor: ReadOnlyExecutor) -> None:
    for literal in SPELLINGS[executor.dialect]:
        sql = f"SELECT {literal} AS v"
        try:
            q = guard(sql, dialect=executor.dialect, policy=policy())
        except SqlRejected as e:
            pytest.fail(f"{executor.dialect}: {literal} was refused: {e.code} {e.message}")
        assert _value(executor, q.sql) == _value(executor, sql), (literal, q.sql)
        # and inside a query over a tenant table, as a model would write it
        guard(f"SELECT sName FROM viw_customer WHERE sName <> {literal}", dialect=executor.dialect, policy=policy())
    assert _value(executor, "SELECT COUNT(*) FROM viw_customer") == 12, "a literal's contents ran"


def test_postgres_literals_keep_their_value_when_the_server_reads_backslashes_as_escapes(postgres_url: str) -> None:
    """With standard_conforming_strings off (a legacy server or role default), '\\' would escape
    the next quote in the regenerated '...'; the executor pins the setting on."""
    from tests.sqlguard.sqlguard_support import seed

    seed(postgres_url)
    engine = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        name = c.exec_driver_sql("SELECT current_database()").scalar_one()
        c.exec_driver_sql(f'ALTER DATABASE "{name}" SET standard_conforming_strings = off')
    engine.dispose()
    ex = ReadOnlyExecutor(postgres_url)
    try:
        for literal, value in (("$$a\\'b$$", "a\\'b"), ("$q$x\\'; SELECT 1; --$q$", "x\\'; SELECT 1; --")):
            q = guard(f"SELECT {literal} AS v", dialect="postgres", policy=policy())
            assert _value(ex, q.sql) == value, q.sql
    finally:
        ex.close()


@pytest.mark.parametrize(
    ("dialect", "literal", "code"),
    [
        ("sqlite", "N'acme'", Reason.UNEXPECTED_NODE),  # SQLite has no N'...'
        ("sqlite", "B'0101'", Reason.PARSE_ERROR),
        ("sqlite", "$$x$$", Reason.PLACEHOLDER),  # SQLite binds $name
        ("sqlite", "E'x'", Reason.PARSE_ERROR),
    ],
)
def test_a_spelling_the_dialect_does_not_have_is_refused(dialect: str, literal: str, code: Reason) -> None:
    with pytest.raises(SqlRejected) as info:
        guard(f"SELECT {literal} AS v", dialect=dialect, policy=policy())
    assert info.value.code == code, info.value
    if code is Reason.UNEXPECTED_NODE:
        assert "plain '...' string" in info.value.message
