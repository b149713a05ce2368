"""The viw_* views: business views with brands_id bound to forms in ai_query_view, and the KG views."""

from __future__ import annotations

import sqlalchemy as sa

from tests.erp_demo.conftest import Erp
from tether.erp_demo import facts
from tether.erp_demo.forms import FLOW, FORMS, QUERY_VIEWS


def _rows(erp: Erp, sql: str) -> list[dict[str, object]]:
    with erp.demo.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.text(sql))]


def test_business_views(shared_erp: Erp) -> None:
    bound = {r["view_name"]: r["form_id"] for r in _rows(shared_erp, "SELECT view_name, form_id FROM ai_query_view")}
    assert bound == QUERY_VIEWS
    for view in QUERY_VIEWS:
        rows = _rows(shared_erp, f"SELECT * FROM {view} WHERE brands_id = 1")
        assert rows, view
        assert {"id", "brands_id", "subsidiary_id"} <= set(rows[0]), view
        assert all(r["brands_id"] == 1 for r in rows)
    invoice = _rows(shared_erp, "SELECT * FROM viw_sales_invoice WHERE brands_id = 1")[0]
    assert {"customer_name", "salesman_id", "balance", "overdue_days", "due_date", "received_amount"} <= set(invoice)
    line = _rows(shared_erp, "SELECT * FROM viw_quotation_line WHERE brands_id = 1")[0]
    assert {"quotation_id", "bill_no", "material_code", "material_name", "qty", "unit_price", "customer_name"} <= set(
        line
    )


def test_overdue_cluster_in_ar_aging(shared_erp: Erp) -> None:
    rows = _rows(
        shared_erp, "SELECT customer_code, overdue_days, aging_bucket, balance FROM viw_ar_aging WHERE brands_id = 1"
    )
    over_90 = [r for r in rows if int(r["overdue_days"]) > 90]  # type: ignore[call-overload]
    assert {r["customer_code"] for r in over_90} == {c for c, _, _ in facts.OVERDUE_CUSTOMERS}
    for code, _, _ in facts.OVERDUE_CUSTOMERS:
        assert sum(r["customer_code"] == code for r in over_90) >= facts.OVERDUE_INVOICES_EACH
    assert all(r["aging_bucket"] == "90天以上" for r in over_90)
    assert all(float(r["balance"]) > 0 for r in rows)  # type: ignore[arg-type]
    # the same through the form, as fin01 reads it
    aging = shared_erp.all_rows("fin01", "5001", min_overdue_days=91)
    assert {r["customer_name"] for r in aging} == {n for _, n, _ in facts.OVERDUE_CUSTOMERS}


def test_safety_stock_view(shared_erp: Erp) -> None:
    rows = _rows(
        shared_erp,
        "SELECT material_code, material_name, stock_qty, safety_stock FROM viw_safety_stock WHERE brands_id = 1",
    )
    assert {(r["material_code"], r["material_name"]) for r in rows} == {(c, n) for c, n, _ in facts.LOW_STOCK_MATERIALS}
    assert len(rows) >= 5 and all(float(r["stock_qty"]) < float(r["safety_stock"]) for r in rows)  # type: ignore[arg-type]
    assert {r["material_code"] for r in shared_erp.all_rows("wh01", "4002")} == {
        c for c, _, _ in facts.LOW_STOCK_MATERIALS
    }


def test_kg_views(shared_erp: Erp) -> None:
    domains = _rows(shared_erp, "SELECT * FROM viw_kg_domain ORDER BY sort_order")
    assert len(domains) == 11
    assert {"domain_id", "domain_name", "description", "form_ids", "form_names"} <= set(domains[0])
    names = [d["domain_name"] for d in domains]
    assert {
        "客户",
        "销售",
        "采购",
        "库存",
        "财务-应收",
        "财务-应付",
        "生产",
        "质量",
        "人事",
        "基础资料",
        "系统",
    } == set(names)
    assert all(d["description"] for d in domains)
    flow = _rows(shared_erp, "SELECT * FROM viw_kg_edge_flow ORDER BY seq")
    assert [(r["from_form_id"], r["to_form_id"]) for r in flow] == [(a, b) for a, b, _, _ in FLOW]
    assert [r["from_form_name"] for r in flow][:4] == ["报价单", "销售订单", "发货单", "销售发票"]
    neighbors = _rows(shared_erp, "SELECT * FROM viw_kg_form_neighbors WHERE form_id = '2002'")
    assert {(r["neighbor_form_id"], r["direction"]) for r in neighbors} >= {
        ("2001", "upstream"),
        ("2003", "downstream"),
    }
    fields = _rows(shared_erp, "SELECT * FROM viw_kg_field_dict")
    assert {"label", "column_name", "table_name", "form_id", "form_name"} <= set(fields[0])
    assert len(fields) == sum(len(f.fields) + len(f.detail_fields) for f in FORMS)
    qty = [r for r in fields if r["form_id"] == "2001" and r["column_name"] == "qty"]
    assert qty and qty[0]["table_name"] == "quotation_line" and qty[0]["label"] == "数量"
    cards = _rows(shared_erp, "SELECT * FROM viw_kg_form_card")
    assert len(cards) == len(FORMS) and all(c["card"] and c["form_name"] for c in cards)
    useful = _rows(shared_erp, "SELECT * FROM viw_ai_useful_forms")
    assert {"form_id", "form_name", "aliases", "description", "answers"} <= set(useful[0])
    assert any("应收" in str(u["aliases"]) for u in useful)


def test_prepare_is_idempotent(shared_erp: Erp) -> None:
    before = _rows(shared_erp, "SELECT COUNT(*) AS n FROM quotation")[0]["n"]
    assert shared_erp.demo.prepare() == {}
    assert _rows(shared_erp, "SELECT COUNT(*) AS n FROM quotation")[0]["n"] == before
    assert len(_rows(shared_erp, "SELECT * FROM viw_kg_domain")) == 11
