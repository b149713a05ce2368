"""Public API shape, Policy validation, and the import boundary of the guard."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tether.errors import ConfigError, ToolError
from tether.sqlguard import GuardedQuery, Policy, Reason, SqlRejected, guard


def test_issue_example_api() -> None:
    policy = Policy(tables={"viw_sales_order": "sBrandsId", "customer_session": None}, tenant="B001", max_rows=500)
    q = guard("SELECT sOrderNo FROM viw_sales_order WHERE fAmount > 10", dialect="mysql", policy=policy)
    assert isinstance(q, GuardedQuery)
    assert q.tables == ("viw_sales_order",)
    assert q.limit == 500
    assert q.sql == (
        "SELECT sOrderNo FROM (SELECT * FROM viw_sales_order WHERE viw_sales_order.sBrandsId = 'B001') "
        "AS viw_sales_order WHERE fAmount > 10 LIMIT 500"
    )


def test_filters_sit_beside_the_tenant_inside_the_derived_table() -> None:
    policy = Policy(
        tables={"viw_customer": "brands_id", "viw_material": "brands_id"},
        tenant=1,
        filters={"viw_customer": {"subsidiary_id": 1, "salesman_id": "sales01"}},
    )
    q = guard("SELECT c.name FROM viw_customer c, viw_material m", dialect="sqlite", policy=policy)
    assert (
        "(SELECT * FROM viw_customer WHERE viw_customer.brands_id = 1 AND viw_customer.subsidiary_id = 1 "
        "AND viw_customer.salesman_id = 'sales01') AS c" in q.sql
    )
    assert "(SELECT * FROM viw_material WHERE viw_material.brands_id = 1) AS m" in q.sql
    untenanted = Policy(tables={"t": None}, filters={"t": {"owner": "o'1"}})
    assert "WHERE t.owner = 'o''1'" in guard("SELECT * FROM t", dialect="sqlite", policy=untenanted).sql


def test_rejection_carries_code_and_message() -> None:
    policy = Policy(tables={"t": None})
    with pytest.raises(SqlRejected) as info:
        guard("SELECT * FROM u", dialect="sqlite", policy=policy)
    err = info.value
    assert isinstance(err, ToolError) and err.code == Reason.TABLE_NOT_ALLOWED == "table_not_allowed"
    assert "'u'" in err.message and "t" in err.message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tables": {}},
        {"tables": {"t": "tenant_id"}},  # tenant missing
        {"tables": {"t": None}, "max_rows": 0},
        {"tables": {"t": None, "T": None}},
        {"tables": {"t": None}, "columns": {"u": ["a"]}},
        {"tables": {"t": None}, "columns": {"t": "a"}},
        {"tables": {"t": None}, "filters": {"u": {"a": 1}}},  # not a whitelisted table
        {"tables": {"t": None}, "filters": {"t": {"a": True}}},  # neither a string nor an integer
        {"tables": {"t": None}, "filters": {"t": {"a": None}}},
        {"tables": {"t": None}, "filters": {"t": {"": "x"}}},
    ],
)
def test_policy_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Policy(**kwargs)  # type: ignore[arg-type]


def test_unknown_dialect() -> None:
    with pytest.raises(ConfigError):
        guard("SELECT 1", dialect="oracle", policy=Policy(tables={"t": None}))


def test_integer_tenant_and_extra_functions() -> None:
    policy = Policy(tables={"t": "org_id"}, tenant=7, functions=["md5"])
    q = guard("SELECT MD5(name) FROM t", dialect="postgres", policy=policy)
    assert "t.org_id = 7" in q.sql
    with pytest.raises(SqlRejected):
        guard("SELECT MD5(name) FROM t", dialect="postgres", policy=Policy(tables={"t": "org_id"}, tenant=7))


def test_offset_must_be_literal() -> None:
    with pytest.raises(SqlRejected) as info:
        guard("SELECT * FROM t LIMIT 5 OFFSET (SELECT 1)", dialect="postgres", policy=Policy(tables={"t": None}))
    assert info.value.code == Reason.INVALID_OFFSET


@pytest.mark.parametrize(
    ("sql", "limit"),
    [("SELECT * FROM t LIMIT -1", 50), ("SELECT * FROM t LIMIT 10", 10), ("SELECT * FROM t LIMIT 99", 50)],
)
def test_limit_forms(sql: str, limit: int) -> None:
    assert guard(sql, dialect="sqlite", policy=Policy(tables={"t": None}, max_rows=50)).limit == limit


def test_guard_imports_no_orm_or_web_framework() -> None:
    code = (
        "import sys, tether.sqlguard; "
        "bad = [m for m in ('sqlalchemy', 'fastapi', 'starlette', 'pydantic') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
