"""The ERP's own write path: add / update / delete, examine / unexamine, and generate (a downstream
bill from selected lines of an upstream one). The write endpoints, the staging executor and the
form pages all come here, so numbering, tenant and scope checks, validation and stock effects are
the same whoever writes.

This module adds, updates and deletes records and their lines. The values are checked in
``validation``, numbered in ``numbering``, examined in ``examination``; a generated bill is drafted
in ``downstream`` and added here; ``records`` holds what they share. Their public names are
re-exported here (``__all__``), so callers import the write path from this module alone.

Every function runs inside the caller's transaction and raises before it has written anything it
could not finish (validation first); a database error rolls the whole transaction back.
"""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from typing import Any

import sqlalchemy as sa

from tether.erp_demo.downstream import GENERATE, generated_bill, parse_source_ref
from tether.erp_demo.errors import BadRequest, Conflict, Invalid
from tether.erp_demo.examination import STOCK_EFFECT, examine
from tether.erp_demo.forms import BY_ID, Form
from tether.erp_demo.numbering import CODE_LETTERS, next_bill_no, next_code
from tether.erp_demo.reads import form_of
from tether.erp_demo.records import TAX, Written, check_version, locked_record
from tether.erp_demo.schema import TABLES, customer, material
from tether.erp_demo.users import User, utcnow
from tether.erp_demo.validation import MAX_LINES, check_details, check_master, coerce, resolve_ref
from tether.erp_demo.values import jsonable

__all__ = [
    "CODE_LETTERS",
    "GENERATE",
    "MAX_LINES",
    "REFERENCES",
    "STOCK_EFFECT",
    "TAX",
    "Written",
    "add",
    "check_details",
    "check_master",
    "check_version",
    "coerce",
    "delete",
    "examine",
    "generate",
    "handle",
    "locked_record",
    "next_bill_no",
    "next_code",
    "parse_source_ref",
    "record_values",
    "resolve_ref",
    "update",
]


# ---- add / update / delete ---------------------------------------------------------------------------


def _writable(form: Form) -> None:
    if not form.writable:
        raise Invalid(
            {"sFormId": f"{form.name} ({form.form_id}) is read-only: it is a report, not a record you can write"}
        )


def _party_terms(conn: sa.Connection, customer_id: str | None) -> int:
    if not customer_id:
        return 30
    terms = conn.execute(
        sa.select(customer.c.payment_terms_days).where(customer.c.id == customer_id)
    ).scalar_one_or_none()
    return int(terms or 30)


def _line_rows(
    conn: sa.Connection,
    user: User,
    form: Form,
    parent_id: str,
    lines: list[dict[str, Any]],
    extras: list[dict[str, Any]] | None,
) -> list[dict[str, Any]]:
    ids = {ln["material_id"] for ln in lines}
    prices = {
        r[0]: r[1] for r in conn.execute(sa.select(material.c.id, material.c.price).where(material.c.id.in_(ids)))
    }
    rows = []
    for n, line in enumerate(lines, 1):
        price = line.get("unit_price")
        price = float(prices.get(line["material_id"]) or 0) if price is None else price
        row = {
            "id": uuid.uuid4().hex, "brands_id": user.brands_id, "subsidiary_id": user.subsidiary_id,
            str(form.detail_parent): parent_id, "line_no": n, "material_id": line["material_id"], "qty": line["qty"],
            "unit_price": price, "amount": round(line["qty"] * price, 2), "remark": line.get("remark"),
        }  # fmt: skip
        if "source_line_id" in TABLES[str(form.detail_table)].c:
            row["source_line_id"] = (extras[n - 1] if extras else {}).get("source_line_id")
        rows.append(row)
    return rows


def _totals(conn: sa.Connection, form: Form, values: dict[str, Any], lines: list[dict[str, Any]] | None) -> None:
    if lines is not None and "total_amount" in TABLES[form.table].c:
        values["total_amount"] = round(sum(ln["amount"] for ln in lines), 2)
    if form.table == "sales_invoice":
        amount = float(values.get("amount") or 0)
        if values.get("tax_amount") is None:
            values["tax_amount"] = round(amount * TAX, 2)
        values["total_amount"] = round(amount + float(values["tax_amount"]), 2)


def add(
    conn: sa.Connection, user: User, form: Form, data: dict[str, Any], details: Any = None,
    *, line_extras: list[dict[str, Any]] | None = None, partial_ok: bool = False,
) -> Written:  # fmt: skip
    _writable(form)
    clean, errors = check_master(conn, user, form, data, creating=True)
    lines: list[dict[str, Any]] | None = None
    if form.detail_table:
        lines, line_errors = check_details(conn, user, form, details if details is not None else [])
        errors.update(line_errors)
    elif details:
        errors["details"] = f"{form.name} ({form.form_id}) has no detail lines"
    if errors:
        raise Invalid(errors)
    table = TABLES[form.table]
    now = utcnow()
    record_id = uuid.uuid4().hex
    values = {**clean, "id": record_id, "brands_id": user.brands_id, "subsidiary_id": user.subsidiary_id}
    values.update(version=1, created_at=now, updated_at=now)
    line_rows = _line_rows(conn, user, form, record_id, lines, line_extras) if lines is not None else None
    _totals(conn, form, values, line_rows)
    bill_no = None
    if form.bill_prefix:
        bill_day: date = values.get("bill_date") or date.today()
        values.update(bill_date=bill_day, status="draft", created_by=user.id)
        if form.table == "sales_invoice" and values.get("due_date") is None:
            values["due_date"] = bill_day + timedelta(days=_party_terms(conn, values.get("customer_id")))
        bill_no = values["bill_no"] = next_bill_no(conn, user, form.bill_prefix, bill_day)
    elif form.table in CODE_LETTERS and not values.get("code"):
        values["code"] = next_code(conn, user, table, CODE_LETTERS[form.table])
    if "code" in values and values["code"] and _code_taken(conn, user, table, values["code"]):
        raise Invalid({"code": f"code {values['code']} is already used"})
    if form.table == "customer" and user.own_only and not values.get("salesman_id"):
        values["salesman_id"] = user.id  # a salesperson's new customer is theirs
    conn.execute(table.insert().values(**values))
    if line_rows:
        conn.execute(TABLES[str(form.detail_table)].insert(), line_rows)
    return Written(record_id, bill_no, 1, form.form_id)


def _code_taken(conn: sa.Connection, user: User, table: sa.Table, code: str, but: str | None = None) -> bool:
    query = sa.select(table.c.id).where(
        table.c.code == code, table.c.brands_id == user.brands_id, table.c.subsidiary_id == user.subsidiary_id
    )
    if but:
        query = query.where(table.c.id != but)
    return conn.execute(query.limit(1)).first() is not None


def _editable(form: Form, row: Any) -> None:
    if form.bill_prefix and row.status == "examined":
        raise Conflict(f"{form.name} {row.bill_no} is examined; unexamine it (doUnExamine) before changing it")


def update(
    conn: sa.Connection,
    user: User,
    form: Form,
    record_id: str,
    data: dict[str, Any],
    details: Any = None,
    version: Any = None,
) -> Written:
    _writable(form)
    row = locked_record(conn, user, form, record_id)
    check_version(row, version)
    _editable(form, row)
    clean, errors = check_master(conn, user, form, data, creating=False)
    lines = None
    if details is not None:
        lines, line_errors = check_details(conn, user, form, details)
        errors.update(line_errors)
    table = TABLES[form.table]
    if clean.get("code") and _code_taken(conn, user, table, clean["code"], but=record_id):
        errors["code"] = f"code {clean['code']} is already used"
    if errors:
        raise Invalid(errors)
    values = {**clean, "version": row.version + 1, "updated_at": utcnow()}
    line_rows = None
    if lines is not None and form.detail_table:
        line_rows = _line_rows(conn, user, form, record_id, lines, None)
        detail = TABLES[form.detail_table]
        conn.execute(detail.delete().where(detail.c[str(form.detail_parent)] == record_id))
        if line_rows:
            conn.execute(detail.insert(), line_rows)
    if form.table == "sales_invoice":
        merged = {**dict(row._mapping), **values}
        if "amount" in clean and "tax_amount" not in clean:
            merged["tax_amount"] = None
        _totals(conn, form, merged, None)
        values.update(tax_amount=merged["tax_amount"], total_amount=merged["total_amount"])
    else:
        _totals(conn, form, values, line_rows)
    conn.execute(table.update().where(table.c.id == record_id).values(**values))
    return Written(record_id, getattr(row, "bill_no", None), row.version + 1, form.form_id)


# who refers to a master record: (table, column)
REFERENCES = {
    "customer": [("quotation", "customer_id"), ("sales_order", "customer_id"), ("delivery", "customer_id"), ("sales_invoice", "customer_id"), ("receipt", "customer_id")],
    "supplier": [("purchase_order", "supplier_id"), ("inbound", "supplier_id")],
    "material": [("quotation_line", "material_id"), ("sales_order_line", "material_id"), ("delivery_line", "material_id"), ("purchase_order_line", "material_id"), ("inbound_line", "material_id"), ("inventory", "material_id")],
}  # fmt: skip


def delete(conn: sa.Connection, user: User, form: Form, record_id: str, version: Any = None) -> Written:
    _writable(form)
    row = locked_record(conn, user, form, record_id)
    check_version(row, version)
    _editable(form, row)
    for table_name, column in REFERENCES.get(form.table, []):
        other = TABLES[table_name]
        if conn.execute(sa.select(other.c.id).where(other.c[column] == record_id).limit(1)).first():
            raise Conflict(
                f"{form.name} {row.code} is used by {BY_ID.get(_form_of_table(table_name), form).name}; it cannot be deleted"
            )
    if form.detail_table:
        detail = TABLES[form.detail_table]
        conn.execute(detail.delete().where(detail.c[str(form.detail_parent)] == record_id))
    table = TABLES[form.table]
    conn.execute(table.delete().where(table.c.id == record_id))
    return Written(record_id, getattr(row, "bill_no", None), row.version + 1, form.form_id)


def _form_of_table(table_name: str) -> str:
    for form in BY_ID.values():
        if table_name in (form.table, form.detail_table):
            return form.form_id
    return ""


# ---- generate ----------------------------------------------------------------------------------------


def generate(
    conn: sa.Connection, user: User, target: Form, source_ref: Any, overrides: dict[str, Any] | None = None
) -> Written:
    """A new draft ``target`` bill from the selected lines (default: all) of an upstream bill."""
    data, details, extras = generated_bill(conn, user, target, source_ref, overrides)
    return add(conn, user, target, data, details, line_extras=extras)


# ---- the endpoint's body ------------------------------------------------------------------------------


def _columns(body: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    column = body.get("column")
    if column is None:
        return data
    if not isinstance(column, list) or not all(isinstance(c, str) for c in column):
        raise Invalid({"column": "must be a list of column names"})
    errors = {c: "listed in column but missing from data" for c in column if c not in data}
    errors.update({k: "in data but not listed in column" for k in data if k not in column})
    if errors:
        raise Invalid(errors)
    return {c: data[c] for c in column}


def handle(conn: sa.Connection, user: User, body: Any) -> Written:
    """``addUpdateDelBusinessData``: add | update | del, as one transaction."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    form = form_of(body.get("sFormId"))
    kind = body.get("handleType")
    data = body.get("data", {})
    if not isinstance(data, dict):
        raise Invalid({"data": "must be an object {column: value}"})
    data = _columns(body, data)
    if kind == "add":
        return add(conn, user, form, data, body.get("details"))
    record_id = body.get("sId")
    if not isinstance(record_id, str) or not record_id:
        raise (
            Invalid({"sId": f"the id of the record to {kind} is required"})
            if kind in ("update", "del")
            else Invalid({"handleType": "must be add, update or del"})
        )
    if kind == "update":
        return update(conn, user, form, record_id, data, body.get("details"), body.get("version"))
    if kind == "del":
        return delete(conn, user, form, record_id, body.get("version"))
    raise Invalid({"handleType": "must be add, update or del"})


def record_values(row: Any) -> dict[str, Any]:
    return {k: jsonable(v) for k, v in dict(row._mapping).items()}
