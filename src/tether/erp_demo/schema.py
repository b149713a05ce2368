"""The demo ERP's tables (its own ``MetaData``): lower-case snake case, the same on SQLite,
PostgreSQL and MariaDB (InnoDB, utf8mb4, bounded strings on indexed columns). No foreign keys,
like the ERP it stands in for; the write path checks references itself."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

metadata = sa.MetaData()

ID = 32
_MYSQL: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}
MONEY = sa.Numeric(14, 2, asdecimal=False)


def _id() -> sa.Column[str]:
    return sa.Column("id", sa.String(ID), primary_key=True)


def _tenant() -> list[sa.Column[Any]]:
    return [
        sa.Column("brands_id", sa.Integer, nullable=False),
        sa.Column("subsidiary_id", sa.Integer, nullable=False),
    ]


def _stamps() -> list[sa.Column[Any]]:
    return [
        sa.Column("version", sa.Integer, nullable=False, default=1),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    ]


def _bill() -> list[sa.Column[Any]]:
    return [
        sa.Column("bill_no", sa.String(32), nullable=False),
        sa.Column("bill_date", sa.Date, nullable=False),
        sa.Column("status", sa.String(16), nullable=False, default="draft"),
        sa.Column("remark", sa.Text),
        sa.Column("created_by", sa.String(ID)),
        sa.Column("examined_by", sa.String(ID)),
        sa.Column("examined_at", sa.DateTime),
    ]


def _master(name: str, *columns: sa.Column[Any] | sa.Index | sa.UniqueConstraint) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        _id(),
        *_tenant(),
        sa.Column("code", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        *columns,
        *_stamps(),
        sa.UniqueConstraint("brands_id", "subsidiary_id", "code", name=f"uq_{name}_code"),
        **_MYSQL,
    )


def _bill_table(name: str, *columns: sa.Column[Any]) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        _id(),
        *_tenant(),
        *_bill(),
        *columns,
        *_stamps(),
        sa.UniqueConstraint("brands_id", "subsidiary_id", "bill_no", name=f"uq_{name}_bill_no"),
        sa.Index(f"ix_{name}_tenant_date", "brands_id", "subsidiary_id", "bill_date"),
        **_MYSQL,
    )


def _lines(name: str, parent: str, *columns: sa.Column[Any]) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        _id(),
        *_tenant(),
        sa.Column(parent, sa.String(ID), nullable=False, index=True),
        sa.Column("line_no", sa.Integer, nullable=False),
        sa.Column("material_id", sa.String(ID), nullable=False),
        sa.Column("qty", MONEY, nullable=False),
        sa.Column("unit_price", MONEY, nullable=False),
        sa.Column("amount", MONEY, nullable=False),
        *columns,
        sa.Column("remark", sa.String(255)),
        **_MYSQL,
    )


company = sa.Table(
    "company",
    metadata,
    sa.Column("brands_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("subsidiary_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("short_name", sa.String(32), nullable=False),
    sa.Column("business", sa.String(255), nullable=False),
    **_MYSQL,
)

employee = sa.Table(
    "employee",
    metadata,
    _id(),
    *_tenant(),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("dept", sa.String(32), nullable=False),
    sa.Column("phone", sa.String(32)),
    **_MYSQL,
)

warehouse = sa.Table(
    "warehouse",
    metadata,
    _id(),
    *_tenant(),
    sa.Column("code", sa.String(32), nullable=False),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("address", sa.String(255)),
    **_MYSQL,
)

erp_user = sa.Table(
    "erp_user",
    metadata,
    _id(),
    sa.Column("password_hash", sa.String(255), nullable=False),
    sa.Column("name", sa.String(64), nullable=False),
    *_tenant(),
    sa.Column("auths", sa.Text, nullable=False),
    sa.Column("jurisdiction", sa.String(8), nullable=False),
    sa.Column("active", sa.Boolean, nullable=False, default=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    **_MYSQL,
)

erp_token = sa.Table(
    "erp_token",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(ID), nullable=False, index=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False),
    sa.Column("revoked", sa.Boolean, nullable=False, default=False),
    sa.Column("revoked_at", sa.DateTime),
    **_MYSQL,
)

customer = _master(
    "customer",
    sa.Column("short_name", sa.String(64)),
    sa.Column("contact", sa.String(64)),
    sa.Column("phone", sa.String(32)),
    sa.Column("city", sa.String(32)),
    sa.Column("address", sa.String(255)),
    sa.Column("industry", sa.String(64)),
    sa.Column("credit_limit", MONEY),
    sa.Column("payment_terms_days", sa.Integer, nullable=False, default=30),
    sa.Column("salesman_id", sa.String(ID), index=True),
    sa.Column("notes", sa.Text),
)

supplier = _master(
    "supplier",
    sa.Column("contact", sa.String(64)),
    sa.Column("phone", sa.String(32)),
    sa.Column("city", sa.String(32)),
    sa.Column("address", sa.String(255)),
    sa.Column("category", sa.String(64)),
    sa.Column("payment_terms_days", sa.Integer, nullable=False, default=30),
    sa.Column("notes", sa.Text),
)

material = _master(
    "material",
    sa.Column("spec", sa.String(128)),
    sa.Column("unit", sa.String(16), nullable=False),
    sa.Column("category", sa.String(32)),
    sa.Column("price", MONEY, nullable=False, default=0),
    sa.Column("cost", MONEY, nullable=False, default=0),
    sa.Column("safety_stock", MONEY, nullable=False, default=0),
    sa.Column("remark", sa.Text),
)

quotation = _bill_table(
    "quotation",
    sa.Column("customer_id", sa.String(ID), nullable=False, index=True),
    sa.Column("valid_until", sa.Date),
    sa.Column("delivery_days", sa.Integer),
    sa.Column("tax_rate", MONEY, nullable=False, default=13),
    sa.Column("total_amount", MONEY, nullable=False, default=0),
)
quotation_line = _lines("quotation_line", "quotation_id")

sales_order = _bill_table(
    "sales_order",
    sa.Column("customer_id", sa.String(ID), nullable=False, index=True),
    sa.Column("quotation_id", sa.String(ID)),
    sa.Column("delivery_date", sa.Date),
    sa.Column("total_amount", MONEY, nullable=False, default=0),
)
sales_order_line = _lines("sales_order_line", "sales_order_id", sa.Column("source_line_id", sa.String(ID)))

delivery = _bill_table(
    "delivery",
    sa.Column("customer_id", sa.String(ID), nullable=False, index=True),
    sa.Column("sales_order_id", sa.String(ID)),
    sa.Column("warehouse_id", sa.String(ID)),
    sa.Column("ship_address", sa.String(255)),
    sa.Column("total_amount", MONEY, nullable=False, default=0),
)
delivery_line = _lines("delivery_line", "delivery_id", sa.Column("source_line_id", sa.String(ID)))

sales_invoice = _bill_table(
    "sales_invoice",
    sa.Column("customer_id", sa.String(ID), nullable=False, index=True),
    sa.Column("delivery_id", sa.String(ID)),
    sa.Column("sales_order_id", sa.String(ID)),
    sa.Column("invoice_type", sa.String(16), nullable=False, default="special"),
    sa.Column("amount", MONEY, nullable=False),
    sa.Column("tax_amount", MONEY, nullable=False, default=0),
    sa.Column("total_amount", MONEY, nullable=False),
    sa.Column("due_date", sa.Date, nullable=False),
)

receipt = _bill_table(
    "receipt",
    sa.Column("customer_id", sa.String(ID), nullable=False, index=True),
    sa.Column("invoice_id", sa.String(ID), index=True),
    sa.Column("amount", MONEY, nullable=False),
    sa.Column("method", sa.String(16), nullable=False, default="transfer"),
)

purchase_order = _bill_table(
    "purchase_order",
    sa.Column("supplier_id", sa.String(ID), nullable=False, index=True),
    sa.Column("expected_date", sa.Date),
    sa.Column("due_date", sa.Date),
    sa.Column("total_amount", MONEY, nullable=False, default=0),
    sa.Column("paid_amount", MONEY, nullable=False, default=0),
)
purchase_order_line = _lines("purchase_order_line", "purchase_order_id")

inbound = _bill_table(
    "inbound",
    sa.Column("supplier_id", sa.String(ID), nullable=False, index=True),
    sa.Column("purchase_order_id", sa.String(ID)),
    sa.Column("warehouse_id", sa.String(ID)),
    sa.Column("total_amount", MONEY, nullable=False, default=0),
)
inbound_line = _lines("inbound_line", "inbound_id", sa.Column("source_line_id", sa.String(ID)))

inventory = sa.Table(
    "inventory",
    metadata,
    _id(),
    *_tenant(),
    sa.Column("material_id", sa.String(ID), nullable=False),
    sa.Column("warehouse_id", sa.String(ID), nullable=False),
    sa.Column("qty", MONEY, nullable=False, default=0),
    sa.Column("last_in_date", sa.Date),
    sa.Column("last_out_date", sa.Date),
    *_stamps(),
    sa.UniqueConstraint("material_id", "warehouse_id", name="uq_inventory_material_warehouse"),
    sa.Index("ix_inventory_tenant", "brands_id", "subsidiary_id"),
    **_MYSQL,
)

bill_seq = sa.Table(
    "bill_seq",
    metadata,
    sa.Column("brands_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("subsidiary_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("prefix", sa.String(8), primary_key=True),
    sa.Column("bill_period", sa.String(6), primary_key=True),
    sa.Column("last_no", sa.Integer, nullable=False),
    **_MYSQL,
)

# ---- metadata: forms, fields, knowledge graph --------------------------------------------------

form_config = sa.Table(
    "form_config",
    metadata,
    sa.Column("form_id", sa.String(16), primary_key=True),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("module", sa.String(32), nullable=False),
    sa.Column("domain", sa.String(32), nullable=False),
    sa.Column("table_name", sa.String(64), nullable=False),
    sa.Column("detail_table", sa.String(64)),
    sa.Column("detail_parent_column", sa.String(64)),
    sa.Column("view_name", sa.String(64), nullable=False),
    sa.Column("bill_no_prefix", sa.String(8)),
    sa.Column("examinable", sa.Boolean, nullable=False),
    sa.Column("writable", sa.Boolean, nullable=False),
    sa.Column("row_scoped", sa.Boolean, nullable=False),
    sa.Column("aliases", sa.String(255), nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("answers", sa.Text, nullable=False),
    sa.Column("filters_json", sa.Text, nullable=False),
    sa.Column("card", sa.Text, nullable=False),
    sa.Column("sort_order", sa.Integer, nullable=False),
    **_MYSQL,
)

form_field = sa.Table(
    "form_field",
    metadata,
    sa.Column("form_id", sa.String(16), primary_key=True),
    sa.Column("part", sa.String(8), primary_key=True),
    sa.Column("column_name", sa.String(64), primary_key=True),
    sa.Column("label", sa.String(64), nullable=False),
    sa.Column("field_type", sa.String(16), nullable=False),
    sa.Column("ref_form", sa.String(16)),
    sa.Column("is_required", sa.Boolean, nullable=False),
    sa.Column("options_json", sa.Text),
    sa.Column("options_source", sa.String(32)),
    sa.Column("default_value", sa.String(64)),
    sa.Column("is_read_only", sa.Boolean, nullable=False),
    sa.Column("max_length", sa.Integer),
    sa.Column("sort_order", sa.Integer, nullable=False),
    **_MYSQL,
)

kg_domain = sa.Table(
    "kg_domain",
    metadata,
    sa.Column("domain_id", sa.String(16), primary_key=True),
    sa.Column("name", sa.String(32), nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("form_ids", sa.String(255), nullable=False),
    sa.Column("form_names", sa.String(512), nullable=False),
    sa.Column("sort_order", sa.Integer, nullable=False),
    **_MYSQL,
)

kg_edge = sa.Table(
    "kg_edge",
    metadata,
    sa.Column("from_form_id", sa.String(16), primary_key=True),
    sa.Column("to_form_id", sa.String(16), primary_key=True),
    sa.Column("kind", sa.String(8), primary_key=True),
    sa.Column("relation", sa.String(32), nullable=False),
    sa.Column("via_column", sa.String(64), nullable=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    **_MYSQL,
)

ai_query_view = sa.Table(
    "ai_query_view",
    metadata,
    sa.Column("view_name", sa.String(64), primary_key=True),
    sa.Column("form_id", sa.String(16), nullable=False),
    **_MYSQL,
)

ai_op_queue = sa.Table(
    "ai_op_queue",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(ID), nullable=False),
    *_tenant(),
    sa.Column("op_type", sa.String(16), nullable=False),
    sa.Column("target_form_id", sa.String(16), nullable=False),
    sa.Column("target_module_id", sa.String(32), nullable=False),
    sa.Column("target_table", sa.String(64), nullable=False),
    sa.Column("target_bill_id", sa.String(ID)),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("source_ref", sa.Text),
    sa.Column("base_version", sa.Integer),
    sa.Column("auto_execute", sa.Boolean, nullable=False, default=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("result_bill_id", sa.String(ID)),
    sa.Column("result_msg", sa.Text),
    sa.Column("error_msg", sa.Text),
    sa.Column("session_id", sa.String(64)),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("confirmed_at", sa.DateTime),
    sa.Column("executed_at", sa.DateTime),
    sa.Column("expire_at", sa.DateTime, nullable=False),
    sa.Column("revised_by", sa.String(ID)),  # who last revised the draft's values (its owner or an approver)
    sa.Column("revised_at", sa.DateTime),
    sa.Index("ix_ai_op_queue_user_status", "user_id", "status"),
    **_MYSQL,
)

TABLES: dict[str, sa.Table] = dict(metadata.tables)
