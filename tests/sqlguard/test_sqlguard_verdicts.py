"""``GuardCache`` from the attacker's side: a verdict cached for one caller's policy is never the
answer for another's — another tenant (brand), grant set, subsidiary, row scope, row cap, column
restriction or policy version always gets its own verdict — and a cached answer is always exactly
what ``guard`` itself answers now, whatever order the callers come in."""

from __future__ import annotations

import random

import pytest

from tests.sqlguard.sqlguard_support import allowed, attacks
from tether.sqlguard import GuardCache, Policy, Reason, SqlRejected, guard

VIEWS = {"viw_sales_order": "brands_id", "viw_customer": "brands_id", "viw_invoice": "brands_id"}
SQL = "SELECT customer_name, SUM(total_amount) AS t FROM viw_sales_order GROUP BY customer_name"


def erp_policy(
    brand: int | str = 1,
    views: tuple[str, ...] = ("viw_sales_order", "viw_customer"),
    subsidiary: int | None = 1,
    own: str | None = None,
    **extra: object,
) -> Policy:
    """A policy shaped as the ERP pack builds it: the granted views, the brand, the row scope."""
    filters: dict[str, dict[str, str | int]] = {}
    for view in views:
        scope: dict[str, str | int] = {}
        if subsidiary is not None:
            scope["subsidiary_id"] = subsidiary
        if own is not None:
            scope["salesman_id"] = own
        if scope:
            filters[view] = scope
    return Policy(tables={v: VIEWS[v] for v in views}, tenant=brand, max_rows=200, filters=filters, **extra)  # type: ignore[arg-type]


def verdict(cache: GuardCache | None, sql: str, policy: Policy) -> str:
    try:
        if cache is None:
            return guard(sql, dialect="sqlite", policy=policy).sql
        return cache.guard(sql, dialect="sqlite", policy=policy).sql
    except SqlRejected as exc:
        return f"rejected {exc.code}: {exc.message}"


POLICIES = {
    "sales01": erp_policy(own="sales01"),
    "sales02": erp_policy(own="sales02"),
    "admin": erp_policy(),
    "other subsidiary": erp_policy(subsidiary=2),
    "no subsidiary": erp_policy(subsidiary=None),
    "brand 2": erp_policy(brand=2),
    "brand '1' (a string)": erp_policy(brand="1"),
    "fewer grants": erp_policy(views=("viw_customer",)),
    "more grants": erp_policy(views=("viw_sales_order", "viw_customer", "viw_invoice")),
    "policy version 2": erp_policy(version=2),
    "row cap 5": Policy(tables={"viw_sales_order": "brands_id", "viw_customer": "brands_id"}, tenant=1, max_rows=5),
    "columns restricted": erp_policy(columns={"viw_sales_order": ["customer_name"]}),
}


def test_each_callers_policy_gets_its_own_rewrite_never_the_first_callers() -> None:
    cache = GuardCache()
    seen: dict[str, str] = {}
    for name, policy in POLICIES.items():  # the same SQL text from every caller in turn
        seen[name] = verdict(cache, SQL, policy)
        assert seen[name] == verdict(None, SQL, policy), name
    assert "salesman_id = 'sales01'" in seen["sales01"] and "sales02" not in seen["sales01"]
    assert "salesman_id = 'sales02'" in seen["sales02"] and "sales01" not in seen["sales02"]
    assert "salesman_id" not in seen["admin"]
    assert "brands_id = 2" in seen["brand 2"] and "brands_id = 1" not in seen["brand 2"]
    assert "brands_id = '1'" in seen["brand '1' (a string)"]
    assert "subsidiary_id = 2" in seen["other subsidiary"] and "subsidiary_id" not in seen["no subsidiary"]
    assert seen["fewer grants"].startswith("rejected table_not_allowed")  # viw_sales_order is not theirs
    assert "LIMIT 5" in seen["row cap 5"]
    assert "(SELECT customer_name FROM viw_sales_order WHERE" in seen["columns restricted"]
    assert "(SELECT * FROM viw_sales_order WHERE" in seen["admin"]
    assert len(cache) == len(POLICIES)  # one entry each: no policy shared another's
    assert cache.hits == 0


def test_a_cached_refusal_does_not_refuse_another_policy_and_a_cached_pass_does_not_pass_one() -> None:
    cache = GuardCache()
    narrow, wide = erp_policy(views=("viw_customer",)), erp_policy()
    with pytest.raises(SqlRejected) as refused:
        cache.guard(SQL, dialect="sqlite", policy=narrow)
    assert refused.value.code is Reason.TABLE_NOT_ALLOWED
    assert "viw_sales_order" in cache.guard(SQL, dialect="sqlite", policy=wide).sql  # not the refusal
    for _ in range(2):  # and back: the pass for `wide` does not open the table to `narrow`
        with pytest.raises(SqlRejected) as again:
            cache.guard(SQL, dialect="sqlite", policy=narrow)
        assert again.value.code is Reason.TABLE_NOT_ALLOWED and again.value is not refused.value
    assert cache.hits == 2 and cache.misses == 2


def test_an_equal_policy_built_anew_hits_and_the_sql_text_must_match_exactly() -> None:
    cache = GuardCache()
    first = cache.guard(SQL, dialect="sqlite", policy=erp_policy(own="sales01"))
    assert cache.guard(SQL, dialect="sqlite", policy=erp_policy(own="sales01")) is first  # a new, equal policy
    assert cache.hits == 1
    cache.guard(SQL + " ", dialect="sqlite", policy=erp_policy(own="sales01"))  # another text: guarded again
    cache.guard(SQL, dialect="postgres", policy=erp_policy(own="sales01"))  # another dialect too
    assert cache.misses == 3


@pytest.mark.parametrize("dialect", ["sqlite", "postgres", "mysql"])
def test_cached_answers_equal_guard_for_the_corpus_under_every_policy_in_any_order(dialect: str) -> None:
    """Every allowed and attacking statement of the corpus, under policies differing in one field
    each, asked in a random order with repeats: the cache's answer is guard's, every time."""
    policies = [
        Policy(
            tables={
                "viw_sales_order": "sBrandsId",
                "viw_customer": "sBrandsId",
                "viw_product": "sBrandsId",
                "customer_session": None,
            },
            tenant=t,
            max_rows=m,
            filters=f,
        )
        for t in ("B001", "B002")
        for m in (500, 7)
        for f in ({}, {"viw_customer": {"sOwner": "u1"}}, {"viw_customer": {"sOwner": "u2"}})
    ] + [Policy(tables={"viw_customer": "sBrandsId"}, tenant="B001")]
    statements = [c.sql for c in allowed(dialect)[:25]] + [c.sql for c in attacks(dialect)[:25]]
    asks = [(s, p) for s in statements for p in range(len(policies))] * 2
    random.Random(27).shuffle(asks)
    cache = GuardCache(max_entries=500)  # small enough that entries are also evicted on the way
    for sql, p in asks:
        got, want = verdict_d(cache, sql, policies[p], dialect), verdict_d(None, sql, policies[p], dialect)
        assert got == want, (sql, p)
    assert cache.hits > 0 and len(cache) <= 500


def verdict_d(cache: GuardCache | None, sql: str, policy: Policy, dialect: str) -> str:
    try:
        q = (guard if cache is None else cache.guard)(sql, dialect=dialect, policy=policy)
        return f"{q.sql} | {q.tables} | {q.limit}"
    except SqlRejected as exc:
        return f"rejected {exc.code}: {exc.message}"


def test_the_cache_is_bounded_and_long_sql_is_never_stored() -> None:
    cache = GuardCache(max_entries=3, max_sql_chars=200)
    policy = erp_policy()
    for n in range(5):
        cache.guard(f"SELECT customer_name FROM viw_sales_order LIMIT {n + 1}", dialect="sqlite", policy=policy)
    assert len(cache) == 3
    long_sql = "SELECT customer_name FROM viw_sales_order WHERE " + " OR ".join(["1 = 1"] * 60)
    cache.guard(long_sql, dialect="sqlite", policy=policy)
    cache.guard(long_sql, dialect="sqlite", policy=policy)
    assert cache.hits == 0 and len(cache) == 3
