"""Generate: the draft of a downstream bill from the selected lines (default: all) of an upstream
one (quotation → sales order → delivery → invoice → receipt, purchase order → inbound), carrying
the link to its source, its party and the values each target takes from it (warehouse, ship
address, the invoice's tax split, the balance a receipt collects).

It only reads (the upstream bill is locked); it must never write. ``writes.generate`` adds the
draft through ``add``, so it is validated and numbered like any other bill.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import sqlalchemy as sa

from tether.erp_demo.errors import Conflict, Invalid
from tether.erp_demo.forms import Form
from tether.erp_demo.reads import form_of
from tether.erp_demo.records import TAX, locked_record
from tether.erp_demo.schema import TABLES, customer, warehouse
from tether.erp_demo.users import User

# (source form, target form) -> the target's column naming the source
GENERATE = {("2001", "2002"): "quotation_id", ("2002", "2003"): "sales_order_id", ("2003", "2004"): "delivery_id",
            ("2004", "2005"): "invoice_id", ("3001", "3002"): "purchase_order_id"}  # fmt: skip


def parse_source_ref(source_ref: Any) -> tuple[Form, str, list[str] | None]:
    if not isinstance(source_ref, dict):
        raise Invalid({"source_ref": 'must be {"formId", "billId", "lineIds"?}'})
    form_id = source_ref.get("formId", source_ref.get("form_id"))
    bill_id = source_ref.get("billId", source_ref.get("bill_id"))
    line_ids = source_ref.get("lineIds", source_ref.get("line_ids"))
    if not isinstance(bill_id, str) or not bill_id:
        raise Invalid({"source_ref.billId": "the id of the upstream bill is required"})
    if line_ids is not None and (
        not isinstance(line_ids, list) or not all(isinstance(x, str) for x in line_ids) or not line_ids
    ):
        raise Invalid({"source_ref.lineIds": "must be a non-empty list of line ids of the upstream bill"})
    return form_of(form_id), bill_id, line_ids


def _default_warehouse(conn: sa.Connection, user: User, finished: bool) -> str | None:
    rows = conn.execute(
        sa.select(warehouse.c.id, warehouse.c.name)
        .where(warehouse.c.brands_id == user.brands_id, warehouse.c.subsidiary_id == user.subsidiary_id)
        .order_by(warehouse.c.code)
    ).all()
    chosen = next((r.id for r in rows if finished and "成品" in r.name), None)
    return chosen or (rows[0].id if rows else None)


def _received(conn: sa.Connection, invoice_id: str) -> float:
    receipt = TABLES["receipt"]
    total = conn.execute(
        sa.select(sa.func.coalesce(sa.func.sum(receipt.c.amount), 0)).where(
            receipt.c.invoice_id == invoice_id, receipt.c.status == "examined"
        )
    ).scalar_one()
    return float(total)


def _generated_master(
    conn: sa.Connection, user: User, source: Form, target: Form, row: Any, lines_total: float
) -> dict[str, Any]:
    data: dict[str, Any] = {GENERATE[(source.form_id, target.form_id)]: row.id}
    party = "supplier_id" if "supplier_id" in row._mapping else "customer_id"
    data[party] = row._mapping[party]
    if target.form_id == "2002":
        data["delivery_date"] = date.today() + timedelta(days=int(row.delivery_days or 15))
    elif target.form_id == "2003":
        data["warehouse_id"] = _default_warehouse(conn, user, finished=True)
        address = conn.execute(
            sa.select(customer.c.address).where(customer.c.id == row.customer_id)
        ).scalar_one_or_none()
        data["ship_address"] = address
    elif target.form_id == "3002":
        data["warehouse_id"] = _default_warehouse(conn, user, finished=False)
    elif target.form_id == "2004":
        data["sales_order_id"] = row.sales_order_id
        data["amount"] = round(lines_total / (1 + TAX), 2)
        data["tax_amount"] = round(lines_total - data["amount"], 2)
    elif target.form_id == "2005":
        balance = round(float(row.total_amount) - _received(conn, row.id), 2)
        if balance <= 0:
            raise Conflict(f"invoice {row.bill_no} is fully received; there is nothing to collect")
        data["amount"] = balance
    return data


def generated_bill(
    conn: sa.Connection, user: User, target: Form, source_ref: Any, overrides: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """The master values, detail lines and line extras of a new draft ``target`` bill from the
    selected lines (default: all) of an upstream bill, for ``writes.add``."""
    source, bill_id, line_ids = parse_source_ref(source_ref)
    if (source.form_id, target.form_id) not in GENERATE:
        pairs = ", ".join(f"{a}→{b}" for a, b in GENERATE)
        raise Invalid(
            {"target_form_id": f"cannot generate {target.form_id} from {source.form_id}; the ERP generates {pairs}"}
        )
    row = locked_record(conn, user, source, bill_id)
    lines: list[Any] = []
    if source.detail_table:
        detail = TABLES[source.detail_table]
        lines = list(
            conn.execute(
                sa.select(detail).where(detail.c[str(source.detail_parent)] == bill_id).order_by(detail.c.line_no)
            )
        )
        if line_ids is not None:
            unknown = sorted(set(line_ids) - {ln.id for ln in lines})
            if unknown:
                raise Invalid({"source_ref.lineIds": f"not lines of {row.bill_no}: {', '.join(unknown)[:200]}"})
            lines = [ln for ln in lines if ln.id in set(line_ids)]
    total = round(sum(float(ln.amount) for ln in lines), 2) if lines else float(getattr(row, "total_amount", 0) or 0)
    data = _generated_master(conn, user, source, target, row, total)
    overrides = dict(overrides or {})
    overrides.pop("details", None)
    data.update(overrides)
    details = (
        [{"material_id": ln.material_id, "qty": float(ln.qty), "unit_price": float(ln.unit_price)} for ln in lines]
        if target.detail_table
        else None
    )
    extras = [{"source_line_id": ln.id} for ln in lines]
    return data, details, extras
