"""The ``viw_*`` views: the business views (each with ``brands_id``) that forms read and that
``query_data`` may query, and the knowledge-graph views (seed §11). ``prepare`` drops and
recreates them after the tables, so their definitions can change. Date arithmetic is per dialect:
overdue days count from CURRENT_DATE."""

from __future__ import annotations

import sqlalchemy as sa


def _days_since(dialect: str, column: str) -> str:
    if dialect == "sqlite":
        return f"CAST(julianday(CURRENT_DATE) - julianday({column}) AS INTEGER)"
    if dialect == "postgresql":
        return f"(CURRENT_DATE - {column})"
    return f"DATEDIFF(CURRENT_DATE, {column})"


def _bucket(days: str, open_: str) -> str:
    return (
        f"CASE WHEN NOT ({open_}) THEN '已结清' WHEN {days} <= 0 THEN '未到期' WHEN {days} <= 30 THEN '1-30天' "
        f"WHEN {days} <= 60 THEN '31-60天' WHEN {days} <= 90 THEN '61-90天' ELSE '90天以上' END"
    )


_TENANT = "{a}.id, {a}.brands_id, {a}.subsidiary_id"
_BILL = "{a}.bill_no, {a}.bill_date, {a}.status, {a}.remark, {a}.created_by, {a}.examined_by, {a}.examined_at"
_STAMPS = "{a}.version, {a}.created_at, {a}.updated_at"
_CUSTOMER = "{a}.customer_id, c.code AS customer_code, c.name AS customer_name, c.salesman_id, e.name AS salesman_name"
_CUSTOMER_JOIN = "LEFT JOIN customer c ON c.id = {a}.customer_id LEFT JOIN employee e ON e.id = c.salesman_id"
_SUPPLIER = "{a}.supplier_id, s.code AS supplier_code, s.name AS supplier_name"
_SUPPLIER_JOIN = "LEFT JOIN supplier s ON s.id = {a}.supplier_id"
_RECEIVED = (
    "LEFT JOIN (SELECT invoice_id, SUM(amount) AS received FROM receipt WHERE status = 'examined' "
    "GROUP BY invoice_id) r ON r.invoice_id = i.id"
)
_STOCK = "LEFT JOIN (SELECT material_id, SUM(qty) AS stock_qty FROM inventory GROUP BY material_id) st ON st.material_id = m.id"


def _fmt(*parts: str, a: str) -> str:
    return ", ".join(p.format(a=a) for p in parts)


def _line_view(table: str, parent: str, master: str, party: str) -> str:
    head = _fmt(_TENANT, a="l")
    party_cols, party_join = (
        (_CUSTOMER.format(a="h"), _CUSTOMER_JOIN.format(a="h"))
        if party == "customer"
        else (_SUPPLIER.format(a="h"), _SUPPLIER_JOIN.format(a="h"))
    )
    return (
        f"SELECT {head}, l.{parent}, h.bill_no, h.bill_date, h.status, {party_cols}, l.line_no, l.material_id, "
        "m.code AS material_code, m.name AS material_name, m.spec, m.unit, l.qty, l.unit_price, l.amount, l.remark "
        f"FROM {table} l JOIN {master} h ON h.id = l.{parent} {party_join} LEFT JOIN material m ON m.id = l.material_id"
    )


def business_views(dialect: str) -> dict[str, str]:
    inv_open = "i.total_amount - COALESCE(r.received, 0) > 0.005"
    inv_days = (
        f"CASE WHEN {inv_open} AND i.due_date < CURRENT_DATE THEN {_days_since(dialect, 'i.due_date')} ELSE 0 END"
    )
    ap_open = "p.total_amount - p.paid_amount > 0.005"
    ap_days = f"CASE WHEN {ap_open} AND p.due_date < CURRENT_DATE THEN {_days_since(dialect, 'p.due_date')} ELSE 0 END"
    bill = _BILL.format(a="q")
    return {
        "viw_customer": (
            f"SELECT {_fmt(_TENANT, a='c')}, c.code, c.name, c.short_name, c.contact, c.phone, c.city, c.address, "
            "c.industry, c.credit_limit, c.payment_terms_days, c.salesman_id, e.name AS salesman_name, c.notes, "
            f"{_fmt(_STAMPS, a='c')} FROM customer c LEFT JOIN employee e ON e.id = c.salesman_id"
        ),
        "viw_supplier": (
            f"SELECT {_fmt(_TENANT, a='s')}, s.code, s.name, s.contact, s.phone, s.city, s.address, s.category, "
            f"s.payment_terms_days, s.notes, {_fmt(_STAMPS, a='s')} FROM supplier s"
        ),
        "viw_material": (
            f"SELECT {_fmt(_TENANT, a='m')}, m.code, m.name, m.spec, m.unit, m.category, m.price, m.cost, "
            f"m.safety_stock, COALESCE(st.stock_qty, 0) AS stock_qty, m.remark, {_fmt(_STAMPS, a='m')} "
            f"FROM material m {_STOCK}"
        ),
        "viw_quotation": (
            f"SELECT {_fmt(_TENANT, a='q')}, {bill}, {_CUSTOMER.format(a='q')}, q.valid_until, q.delivery_days, "
            f"q.tax_rate, q.total_amount, {_fmt(_STAMPS, a='q')} FROM quotation q {_CUSTOMER_JOIN.format(a='q')}"
        ),
        "viw_quotation_line": _line_view("quotation_line", "quotation_id", "quotation", "customer"),
        "viw_sales_order": (
            f"SELECT {_fmt(_TENANT, _BILL, _CUSTOMER, a='o')}, o.quotation_id, qt.bill_no AS quotation_bill_no, "
            f"o.delivery_date, o.total_amount, {_fmt(_STAMPS, a='o')} FROM sales_order o "
            f"{_CUSTOMER_JOIN.format(a='o')} LEFT JOIN quotation qt ON qt.id = o.quotation_id"
        ),
        "viw_sales_order_line": _line_view("sales_order_line", "sales_order_id", "sales_order", "customer"),
        "viw_delivery": (
            f"SELECT {_fmt(_TENANT, _BILL, _CUSTOMER, a='d')}, d.sales_order_id, so.bill_no AS sales_order_bill_no, "
            "d.warehouse_id, w.name AS warehouse_name, d.ship_address, d.total_amount, "
            f"{_fmt(_STAMPS, a='d')} FROM delivery d {_CUSTOMER_JOIN.format(a='d')} "
            "LEFT JOIN sales_order so ON so.id = d.sales_order_id LEFT JOIN warehouse w ON w.id = d.warehouse_id"
        ),
        "viw_sales_invoice": (
            f"SELECT {_fmt(_TENANT, _BILL, _CUSTOMER, a='i')}, i.delivery_id, dn.bill_no AS delivery_bill_no, "
            "i.sales_order_id, i.invoice_type, i.amount, i.tax_amount, i.total_amount, i.due_date, "
            "COALESCE(r.received, 0) AS received_amount, i.total_amount - COALESCE(r.received, 0) AS balance, "
            f"{inv_days} AS overdue_days, {_fmt(_STAMPS, a='i')} FROM sales_invoice i "
            f"{_CUSTOMER_JOIN.format(a='i')} LEFT JOIN delivery dn ON dn.id = i.delivery_id {_RECEIVED}"
        ),
        "viw_receipt": (
            f"SELECT {_fmt(_TENANT, _BILL, _CUSTOMER, a='rc')}, rc.invoice_id, iv.bill_no AS invoice_bill_no, "
            f"rc.amount, rc.method, {_fmt(_STAMPS, a='rc')} FROM receipt rc {_CUSTOMER_JOIN.format(a='rc')} "
            "LEFT JOIN sales_invoice iv ON iv.id = rc.invoice_id"
        ),
        "viw_purchase_order": (
            f"SELECT {_fmt(_TENANT, _BILL, _SUPPLIER, a='p')}, p.expected_date, p.due_date, p.total_amount, "
            f"p.paid_amount, {_fmt(_STAMPS, a='p')} FROM purchase_order p {_SUPPLIER_JOIN.format(a='p')}"
        ),
        "viw_inbound": (
            f"SELECT {_fmt(_TENANT, _BILL, _SUPPLIER, a='n')}, n.purchase_order_id, "
            "po.bill_no AS purchase_order_bill_no, n.warehouse_id, w.name AS warehouse_name, n.total_amount, "
            f"{_fmt(_STAMPS, a='n')} FROM inbound n {_SUPPLIER_JOIN.format(a='n')} "
            "LEFT JOIN purchase_order po ON po.id = n.purchase_order_id LEFT JOIN warehouse w ON w.id = n.warehouse_id"
        ),
        "viw_inventory": (
            f"SELECT {_fmt(_TENANT, a='v')}, v.material_id, m.code AS material_code, m.name AS material_name, m.spec, "
            "m.unit, m.category, v.warehouse_id, w.code AS warehouse_code, w.name AS warehouse_name, v.qty, "
            f"m.safety_stock, v.last_in_date, v.last_out_date, {_fmt(_STAMPS, a='v')} FROM inventory v "
            "JOIN material m ON m.id = v.material_id LEFT JOIN warehouse w ON w.id = v.warehouse_id"
        ),
        "viw_safety_stock": (
            f"SELECT {_fmt(_TENANT, a='m')}, m.id AS material_id, m.code AS material_code, m.name AS material_name, "
            "m.spec, m.unit, m.category, m.safety_stock, COALESCE(st.stock_qty, 0) AS stock_qty, "
            f"m.safety_stock - COALESCE(st.stock_qty, 0) AS shortage_qty FROM material m {_STOCK} "
            "WHERE COALESCE(st.stock_qty, 0) < m.safety_stock"
        ),
        "viw_ar_aging": (
            f"SELECT {_fmt(_TENANT, a='i')}, i.bill_no, i.bill_date, {_CUSTOMER.format(a='i')}, i.due_date, "
            "i.total_amount, COALESCE(r.received, 0) AS received_amount, "
            f"i.total_amount - COALESCE(r.received, 0) AS balance, {inv_days} AS overdue_days, "
            f"{_bucket(inv_days, inv_open)} AS aging_bucket FROM sales_invoice i {_CUSTOMER_JOIN.format(a='i')} "
            f"{_RECEIVED} WHERE i.status = 'examined' AND {inv_open}"
        ),
        "viw_ap": (
            f"SELECT {_fmt(_TENANT, a='p')}, p.bill_no, p.bill_date, {_SUPPLIER.format(a='p')}, p.due_date, "
            f"p.total_amount, p.paid_amount, p.total_amount - p.paid_amount AS balance, {ap_days} AS overdue_days, "
            f"{_bucket(ap_days, ap_open)} AS aging_bucket FROM purchase_order p {_SUPPLIER_JOIN.format(a='p')} "
            f"WHERE p.status = 'examined' AND {ap_open}"
        ),
    }


KG_VIEWS: dict[str, str] = {
    "viw_kg_domain": (
        "SELECT domain_id, name AS domain_name, description, form_ids, form_names, sort_order FROM kg_domain"
    ),
    "viw_kg_edge_flow": (
        "SELECT e.from_form_id, f1.name AS from_form_name, e.to_form_id, f2.name AS to_form_name, e.relation, "
        "e.via_column, e.description, e.seq FROM kg_edge e JOIN form_config f1 ON f1.form_id = e.from_form_id "
        "JOIN form_config f2 ON f2.form_id = e.to_form_id WHERE e.kind = 'flow'"
    ),
    "viw_kg_edge_ref": (
        "SELECT e.from_form_id, f1.name AS from_form_name, e.to_form_id, f2.name AS to_form_name, e.relation, "
        "e.via_column, e.description FROM kg_edge e JOIN form_config f1 ON f1.form_id = e.from_form_id "
        "JOIN form_config f2 ON f2.form_id = e.to_form_id WHERE e.kind = 'ref'"
    ),
    "viw_kg_form_neighbors": (
        "SELECT e.from_form_id AS form_id, f1.name AS form_name, e.to_form_id AS neighbor_form_id, "
        "f2.name AS neighbor_form_name, e.kind, e.relation, 'downstream' AS direction, e.via_column "
        "FROM kg_edge e JOIN form_config f1 ON f1.form_id = e.from_form_id JOIN form_config f2 ON f2.form_id = e.to_form_id "
        "UNION ALL "
        "SELECT e.to_form_id AS form_id, f2.name AS form_name, e.from_form_id AS neighbor_form_id, "
        "f1.name AS neighbor_form_name, e.kind, e.relation, 'upstream' AS direction, e.via_column "
        "FROM kg_edge e JOIN form_config f1 ON f1.form_id = e.from_form_id JOIN form_config f2 ON f2.form_id = e.to_form_id"
    ),
    "viw_kg_field_dict": (
        "SELECT ff.label, ff.column_name, CASE WHEN ff.part = 'detail' THEN fc.detail_table ELSE fc.table_name END "
        "AS table_name, ff.form_id, fc.name AS form_name, ff.part, ff.field_type, ff.ref_form, fc.view_name "
        "FROM form_field ff JOIN form_config fc ON fc.form_id = ff.form_id"
    ),
    "viw_kg_form_card": (
        "SELECT form_id, name AS form_name, module, domain, table_name, detail_table, view_name, aliases, "
        "description, card FROM form_config"
    ),
    "viw_ai_useful_forms": (
        "SELECT form_id, name AS form_name, aliases, description, answers, view_name, module FROM form_config"
    ),
}


def all_views(dialect: str) -> dict[str, str]:
    return {**business_views(dialect), **KG_VIEWS}


def recreate(conn: sa.Connection) -> None:
    """Drop and create every view (inside the caller's transaction where the dialect allows)."""
    dialect = conn.dialect.name
    views = all_views(dialect)
    cascade = " CASCADE" if dialect == "postgresql" else ""
    for name in views:
        conn.exec_driver_sql(f"DROP VIEW IF EXISTS {name}{cascade}")
    for name, body in views.items():
        conn.exec_driver_sql(f"CREATE VIEW {name} AS {body}")
