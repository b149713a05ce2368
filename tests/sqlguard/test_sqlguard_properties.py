"""Property tests: generated SELECTs over the whitelisted tables, guarded and run on a real database.

The oracle: the guarded query over all tenants' rows returns exactly what the unguarded query returns
over a copy of the tables that holds only the tenant's rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sqlguard.sqlguard_support import TENANT, TENANT_TABLES, assert_tenant_filtered, policy
from tether.sqlguard import guard
from tether.sqlguard.readonly import ReadOnlyExecutor

logging.getLogger("sqlglot").setLevel(logging.ERROR)

COLUMNS = {
    "viw_sales_order": ["sOrderNo", "sCustomerId", "sProductId", "fAmount", "iQty", "sStatus"],
    "viw_customer": ["sCustomerId", "sName", "sRegion"],
    "viw_product": ["sProductId", "sName", "sCategory", "fPrice"],
}
KEYS = {  # join keys shared by two tables
    ("viw_sales_order", "viw_customer"): "sCustomerId",
    ("viw_customer", "viw_sales_order"): "sCustomerId",
    ("viw_sales_order", "viw_product"): "sProductId",
    ("viw_product", "viw_sales_order"): "sProductId",
}
PREDICATES = {
    "sStatus": ["'paid'", "'open'"],
    "iQty": ["2", "3"],
    "fAmount": ["100", "200"],
    "sRegion": ["'east'", "'west'"],
    "sCategory": ["'tools'"],
    "fPrice": ["15"],
    "sCustomerId": ["'C1'", "'C2'"],
    "sProductId": ["'P0'"],
    "sName": ["'product 1'"],
    "sOrderNo": ["'OB001-1'", "'OB002-1'"],
}

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


class Query:
    """A generated query as a template: ``render(prefix)`` names the tables ``prefix + name``."""

    def __init__(self, parts: list[object]) -> None:
        self.parts = parts

    def render(self, prefix: str = "") -> str:
        return "".join(prefix + p.name if isinstance(p, Ref) else str(p) for p in self.parts)


class Ref:
    def __init__(self, name: str) -> None:
        self.name = name


@st.composite
def predicate(draw: st.DrawFn, alias: str, table: str, depth: int = 0) -> list[object]:
    column = draw(st.sampled_from(COLUMNS[table]))
    op = draw(st.sampled_from(["=", "<>", ">", "<="]))
    parts: list[object] = [f"{alias}.{column} {op} {draw(st.sampled_from(PREDICATES[column]))}"]
    kind = draw(st.sampled_from(["plain", "or", "and", "in", "exists"] if depth < 2 else ["plain"]))
    if kind in ("or", "and"):
        other = draw(predicate(alias, table, depth + 1))
        parts = ["(", *parts, f" {kind.upper()} ", *other, ")"]
    elif kind in ("in", "exists") and table in ("viw_sales_order", "viw_customer"):
        inner = "viw_customer" if table == "viw_sales_order" else "viw_sales_order"
        sub = f"s{depth}"
        where = draw(predicate(sub, inner, depth + 1))
        if kind == "in":
            parts = [
                f"({alias}.sCustomerId IN (SELECT {sub}.sCustomerId FROM ",
                Ref(inner),
                f" {sub} WHERE ",
                *where,
                ")",
            ]
            parts += [" OR ", f"{alias}.sCustomerId IS NULL)"]
        else:
            parts = ["EXISTS (SELECT 1 FROM ", Ref(inner), f" {sub} WHERE {sub}.sCustomerId = {alias}.sCustomerId AND "]
            parts += [*where, ")"]
    return parts


@st.composite
def select(draw: st.DrawFn, use_cte: bool = True) -> list[object]:
    first = draw(st.sampled_from(sorted(COLUMNS)))
    partners = [b for (a, b) in KEYS if a == first]
    joined = draw(st.sampled_from([None, *partners]))
    columns = [f"a.{c}" for c in draw(st.lists(st.sampled_from(COLUMNS[first]), min_size=1, max_size=3))]
    columns.append(f"a.{TENANT_TABLES[first]}")
    source: list[object] = [Ref(first), " a"]
    if use_cte and draw(st.booleans()):
        source = ["(SELECT * FROM ", Ref(first), ") a"]
    parts: list[object] = ["SELECT ", ", ".join(columns)]
    if joined is not None:
        parts.append(f", b.{TENANT_TABLES[joined]} AS b_tenant")
    parts += [" FROM ", *source]
    if joined is not None:
        join = draw(st.sampled_from(["JOIN", "LEFT JOIN"]))
        parts += [f" {join} ", Ref(joined), f" b ON b.{KEYS[(first, joined)]} = a.{KEYS[(first, joined)]}"]
        if draw(st.booleans()):  # a join on the tenant column itself must not pair other tenants' rows
            parts += [f" AND b.{TENANT_TABLES[joined]} = a.{TENANT_TABLES[first]}"]
    if draw(st.booleans()):
        parts += [" WHERE ", *draw(predicate("a", first))]
    return parts


@st.composite
def queries(draw: st.DrawFn) -> Query:
    parts = draw(select())
    if draw(st.booleans()):
        parts = ["WITH w AS (SELECT sCustomerId FROM ", Ref("viw_sales_order"), ") ", *parts]
        parts += [" AND a.sBrandsId IS NOT NULL" if " WHERE " in parts else ""]
    return Query(parts)


@pytest.fixture
def oracle(seeded_url: str) -> Iterator[tuple[ReadOnlyExecutor, str]]:
    """The seeded database plus ``only_<table>`` copies holding just the tenant's rows."""
    engine = sa.create_engine(seeded_url)
    with engine.begin() as conn:
        for table, column in TENANT_TABLES.items():
            conn.exec_driver_sql(f"CREATE TABLE only_{table} AS SELECT * FROM {table} WHERE {column} = '{TENANT}'")
    engine.dispose()
    ex = ReadOnlyExecutor(seeded_url, timeout_s=10)
    yield ex, ex.dialect
    ex.close()


def _bag(rows: list[tuple[object, ...]]) -> list[str]:
    return sorted(repr(tuple(str(v) for v in r)) for r in rows)


@SETTINGS
@given(query=queries())
def test_guarded_query_sees_only_the_tenant_slice(oracle: tuple[ReadOnlyExecutor, str], query: Query) -> None:
    ex, dialect = oracle
    q = guard(query.render(), dialect=dialect, policy=policy(max_rows=100_000))
    sqlglot.parse_one(q.sql, read=dialect)  # the output parses
    assert_tenant_filtered(q.sql, dialect)
    got = ex.run(q).rows
    want = ex.execute(query.render("only_")).rows
    assert _bag(got) == _bag(want), q.sql
    for row in got:  # the projected tenant columns are the tenant's (or NULL from an outer join)
        assert row[-1] in (TENANT, None)


@SETTINGS
@given(query=queries(), limit=st.one_of(st.none(), st.integers(0, 40)), cap=st.integers(1, 30))
def test_limit_holds(oracle: tuple[ReadOnlyExecutor, str], query: Query, limit: int | None, cap: int) -> None:
    ex, dialect = oracle
    sql = query.render() + ("" if limit is None else f" LIMIT {limit}")
    q = guard(sql, dialect=dialect, policy=policy(max_rows=cap))
    assert q.limit == (cap if limit is None else min(limit, cap))
    assert sqlglot.parse_one(q.sql, read=dialect).args["limit"].expression.to_py() == q.limit
    assert len(ex.run(q).rows) <= q.limit
