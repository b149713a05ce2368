"""Test data for the SQL sandbox: the corpus loader, the whitelist policy, and the seeded schema."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlglot import exp, parse_one

from tether.sqlguard import Policy

CORPUS = Path(__file__).parent / "corpus"
DIALECTS = ("mysql", "postgres", "sqlite")
TENANT = "B001"
TENANTS = ("B001", "B002", "B003")

TENANT_TABLES = {"viw_sales_order": "sBrandsId", "viw_customer": "sBrandsId", "viw_product": "sBrandsId"}


def policy(max_rows: int = 500, **extra: object) -> Policy:
    return Policy(tables={**TENANT_TABLES, "customer_session": None}, tenant=TENANT, max_rows=max_rows, **extra)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Case:
    dialect: str
    code: str
    sql: str
    source: str

    @property
    def id(self) -> str:
        return f"{self.dialect}:{self.source}"


def _lines(name: str) -> list[tuple[int, str]]:
    out = []
    for number, line in enumerate((CORPUS / name).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() and not line.startswith("##"):
            out.append((number, line.replace("⏎", "\n")))
    return out


def attacks(dialect: str) -> list[Case]:
    cases = []
    for name in ("attacks_common.txt", f"attacks_{dialect}.txt"):
        for number, line in _lines(name):
            code, _, sql = line.partition(" ")
            cases.append(Case(dialect, code, sql, f"{name}:{number}"))
    return cases


def allowed(dialect: str) -> list[Case]:
    return [
        Case(dialect, "", sql, f"{name}:{number}")
        for name in ("allowed_common.txt", f"allowed_{dialect}.txt")
        for number, sql in _lines(name)
    ]


def url_dialect(url: str) -> str:
    backend = sa.engine.make_url(url).get_backend_name()
    return {"postgresql": "postgres", "mariadb": "mysql"}.get(backend, backend)


SCHEMA = [
    "CREATE TABLE viw_sales_order (sBrandsId VARCHAR(10) NOT NULL, sOrderNo VARCHAR(20) NOT NULL, "
    "sCustomerId VARCHAR(10), sProductId VARCHAR(10), dOrderDate DATE, fAmount NUMERIC(12, 2), "
    "iQty INTEGER, sStatus VARCHAR(20))",
    "CREATE TABLE viw_customer (sBrandsId VARCHAR(10) NOT NULL, sCustomerId VARCHAR(10) NOT NULL, "
    "sName VARCHAR(50), sRegion VARCHAR(20))",
    "CREATE TABLE viw_product (sBrandsId VARCHAR(10) NOT NULL, sProductId VARCHAR(10) NOT NULL, "
    "sName VARCHAR(50), sCategory VARCHAR(20), fPrice NUMERIC(12, 2))",
    "CREATE TABLE customer_session (id INTEGER NOT NULL, customer_id VARCHAR(10), channel VARCHAR(20), "
    "content VARCHAR(200))",
    "CREATE TABLE payroll (id INTEGER, salary INTEGER)",
]

_STATUSES = ("paid", "shipped", "cancelled", "paid", "open")
_REGIONS = ("east", "west", None, "east")


def rows() -> dict[str, list[tuple[object, ...]]]:
    """Three tenants with overlapping ids, so a join that leaks across tenants changes the result."""
    data: dict[str, list[tuple[object, ...]]] = {t: [] for t in ("viw_sales_order", "viw_customer", "viw_product")}
    for t_index, tenant in enumerate(TENANTS):
        for c in range(4):
            data["viw_customer"].append((tenant, f"C{c}", f"{tenant} acme {c}", _REGIONS[(c + t_index) % 4]))
        for p in range(3):
            data["viw_product"].append(
                (tenant, f"P{p}", f"product {p}", ("tools", "food")[p % 2], 10 * (p + 1) + t_index)
            )
        for n in range(6 + t_index):
            data["viw_sales_order"].append(
                (
                    tenant,
                    f"O{tenant}-{n}",
                    f"C{(n + t_index) % 4}",
                    f"P{n % 3}",
                    f"2024-0{1 + n % 6}-1{n % 9}",
                    50.0 * (n + 1) + t_index,
                    1 + (n + t_index) % 4,
                    _STATUSES[(n + t_index) % 5],
                )
            )
    data["customer_session"] = [(i, f"C{i % 4}", ("web", "phone")[i % 2], f"asks for refund {i}") for i in range(8)]
    data["payroll"] = [(1, 1000), (2, 2000)]
    return data


def seed(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for ddl in SCHEMA:
                conn.exec_driver_sql(ddl)
            for table, values in rows().items():
                marks = ", ".join(["%s" if url_dialect(url) != "sqlite" else "?"] * len(values[0]))
                conn.exec_driver_sql(f"INSERT INTO {table} VALUES ({marks})", [tuple(v) for v in values])
    finally:
        engine.dispose()


def assert_tenant_filtered(sql: str, dialect: str, tenant: str = TENANT) -> None:
    """Every reference to a tenant table in ``sql`` is the body of ``(SELECT .. FROM t WHERE t.col = tenant)``."""
    tree = parse_one(sql, read=dialect)
    for table in tree.find_all(exp.Table):
        if table.name not in TENANT_TABLES or is_cte_reference(table):
            continue
        select = table.parent_select
        assert isinstance(table.parent, exp.From) and select is not None, sql
        assert isinstance(select.parent, exp.Subquery) and not select.args.get("joins"), sql
        where = select.args["where"].this
        assert where.sql(dialect=dialect) == f"{table.name}.{TENANT_TABLES[table.name]} = '{tenant}'", sql


def is_cte_reference(table: exp.Table) -> bool:
    node: exp.Expr | None = table
    while node is not None:
        with_ = node.args.get("with_")
        if with_ is not None and table.name in {cte.alias for cte in with_.expressions}:
            select = table.parent_select
            return not (select is not None and isinstance(select.parent, exp.Subquery) and select.args.get("where"))
        node = node.parent
    return False
