"""The attack corpus is refused with the expected reason; the analytic corpus passes the guard."""

from __future__ import annotations

import logging

import pytest
import sqlglot

from tests.sqlguard.sqlguard_support import (
    DIALECTS,
    TENANT_TABLES,
    allowed,
    assert_tenant_filtered,
    attacks,
    policy,
)
from tether.sqlguard import Reason, SqlRejected, guard

logging.getLogger("sqlglot").setLevel(logging.ERROR)

ATTACKS = [case for dialect in DIALECTS for case in attacks(dialect)]
ALLOWED = [case for dialect in DIALECTS for case in allowed(dialect)]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_corpus_sizes(dialect: str) -> None:
    assert len(attacks(dialect)) >= 150
    assert len(allowed(dialect)) >= 40


def test_corpus_covers_every_reason() -> None:
    # column_not_allowed and invalid_offset need a non-default policy or query shape: tested below.
    assert {c.code for c in ATTACKS} == {r.value for r in Reason} - {"column_not_allowed", "invalid_offset"}


@pytest.mark.parametrize("case", ATTACKS, ids=[c.id for c in ATTACKS])
def test_attack_is_rejected_with_its_reason(case) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SqlRejected) as info:
        guard(case.sql, dialect=case.dialect, policy=policy())
    assert info.value.code == case.code, info.value.message
    assert info.value.message and info.value.retryable


@pytest.mark.parametrize("case", ALLOWED, ids=[c.id for c in ALLOWED])
def test_analytic_query_is_allowed(case) -> None:  # type: ignore[no-untyped-def]
    q = guard(case.sql, dialect=case.dialect, policy=policy(max_rows=200))
    tree = sqlglot.parse_one(q.sql, read=case.dialect)
    assert set(q.tables) <= {*TENANT_TABLES, "customer_session"}
    assert q.limit <= 200
    assert tree.args["limit"].expression.to_py() == q.limit
    assert not any(token.comments for token in sqlglot.tokenize(q.sql, read=case.dialect))
    assert_tenant_filtered(q.sql, case.dialect)
    # The output is itself acceptable to the guard (it re-filters, which is harmless).
    guard(q.sql, dialect=case.dialect, policy=policy(max_rows=200))
