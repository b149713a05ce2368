"""The ERP's own write path: add / update / delete, examine / unexamine, and generate (a downstream
bill from selected lines of an upstream one). The write endpoints, the staging executor and the
form pages all come here, so numbering, tenant and scope checks, validation and stock effects are
the same whoever writes.

Every function runs inside the caller's transaction and raises before it has written anything it
could not finish (validation first); a database error rolls the whole transaction back.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from tether.erp_demo.errors import BadRequest, Conflict, Invalid, NotFound
from tether.erp_demo.forms import BY_ID, Field, Form
from tether.erp_demo.reads import form_of, scope
from tether.erp_demo.schema import TABLES, bill_seq, customer, employee, inventory, material, warehouse
from tether.erp_demo.users import User, utcnow
from tether.erp_demo.values import as_date, as_flag, as_int, as_number, as_text, jsonable

MAX_LINES = 200
TAX = 0.13


@dataclass(frozen=True)
class Written:
    id: str
    bill_no: str | None
    version: int
    form_id: str

    def body(self) -> dict[str, Any]:
        return {"code": 1, "sId": self.id, "sBillNo": self.bill_no, "version": self.version, "sFormId": self.form_id}


# ---- values --------------------------------------------------------------------------------------


def _options(conn: sa.Connection, user: User, f: Field) -> set[str] | None:
    if f.options:
        return {v for v, _ in f.options}
    if f.options_source == "warehouse":
        q = sa.select(warehouse.c.id).where(
            warehouse.c.brands_id == user.brands_id, warehouse.c.subsidiary_id == user.subsidiary_id
        )
        return set(conn.execute(q).scalars())
    if f.options_source == "employee":
        q = sa.select(employee.c.id).where(
            employee.c.brands_id == user.brands_id, employee.c.subsidiary_id == user.subsidiary_id
        )
        return set(conn.execute(q).scalars())
    return None


def resolve_ref(conn: sa.Connection, user: User, ref_form: Form, value: str) -> str | None:
    """A record of ``ref_form`` visible to ``user``, by id, code (master data) or bill number."""
    table = TABLES[ref_form.table]
    keys = [table.c.id == value]
    if "code" in table.c:
        keys.append(table.c.code == value)
    if "bill_no" in table.c:
        keys.append(table.c.bill_no == value)
    view = sa.table(
        ref_form.view, sa.column("id"), sa.column("brands_id"), sa.column("subsidiary_id"), sa.column("salesman_id")
    )
    query = sa.select(table.c.id).where(
        sa.or_(*keys), table.c.brands_id == user.brands_id, table.c.subsidiary_id == user.subsidiary_id
    )
    if user.own_only and ref_form.row_scoped:
        query = query.where(table.c.id.in_(sa.select(view.c.id).where(*scope(ref_form, user, view))))
    found = conn.execute(query.limit(2)).scalars().all()
    return found[0] if len(found) == 1 else None


def _number(f: Field, value: Any) -> float:
    number = as_number(f.column, value)
    if f.positive and number <= 0:
        raise Invalid({f.column: "must be greater than 0"})
    if f.min_value is not None and number < f.min_value:
        raise Invalid({f.column: f"must be at least {f.min_value:g}"})
    return round(number, 2)


def coerce(conn: sa.Connection, user: User, f: Field, value: Any) -> Any:
    """The stored value of ``value`` for field ``f``, or Invalid naming the field."""
    if value is None or (isinstance(value, str) and not value.strip() and f.type != "textarea"):
        return None
    if f.type in ("number",):
        return _number(f, value)
    if f.type == "integer":
        number = as_int(f.column, value)
        if f.min_value is not None and number < f.min_value:
            raise Invalid({f.column: f"must be at least {f.min_value:g}"})
        return number
    if f.type == "date":
        return as_date(f.column, value)
    if f.type == "bool":
        return as_flag(f.column, value)
    text = (
        as_text(f.column, value, f.max_length).strip()
        if f.type != "textarea"
        else as_text(f.column, value, f.max_length)
    )
    if f.type == "select":
        allowed = _options(conn, user, f)
        if allowed is not None and text not in allowed:
            shown = ", ".join(sorted(allowed)[:12])
            raise Invalid({f.column: f"must be one of: {shown}"})
        return int(text) if f.column == "payment_terms_days" else text
    if f.type == "ref" and f.ref:
        found = resolve_ref(conn, user, BY_ID[f.ref], text)
        if found is None:
            raise Invalid(
                {f.column: f"no {BY_ID[f.ref].name} {text[:40]!r} that you can use (give its id, code or bill number)"}
            )
        return found
    return text


def _default(f: Field) -> Any:
    if f.default == "today":
        return date.today()
    if f.default is None:
        return None
    if f.type == "number":
        return float(f.default)
    if f.type == "integer" or f.column == "payment_terms_days":
        return int(f.default)
    return f.default


def _check_fields(
    conn: sa.Connection, user: User, fields: tuple[Field, ...], data: dict[str, Any], prefix: str, form: Form
) -> tuple[dict[str, Any], dict[str, str]]:
    clean: dict[str, Any] = {}
    errors: dict[str, str] = {}
    by_column = {f.column: f for f in fields}
    for key, value in data.items():
        f = by_column.get(key)
        if f is None:
            errors[prefix + str(key)[:64]] = f"not a column of {form.name} ({form.form_id}); its columns: " + ", ".join(
                c.column for c in fields if not c.read_only
            )
        elif f.read_only:
            errors[prefix + key] = "is made by the ERP and cannot be written"
        else:
            try:
                clean[key] = coerce(conn, user, f, value)
            except Invalid as exc:
                errors.update({prefix + k: v for k, v in (exc.errors or {}).items()})
    return clean, errors


def _require(fields: tuple[Field, ...], clean: dict[str, Any], prefix: str, errors: dict[str, str]) -> None:
    for f in fields:
        if f.required and clean.get(f.column) in (None, "") and prefix + f.column not in errors:
            errors[prefix + f.column] = f"{f.label} is required"


def check_master(
    conn: sa.Connection, user: User, form: Form, data: dict[str, Any], *, creating: bool, partial: bool = False
) -> tuple[dict[str, Any], dict[str, str]]:
    """Validated master values (defaults added when creating), and per-field errors."""
    clean, errors = _check_fields(conn, user, form.fields, data, "", form)
    if creating:
        for f in form.fields:
            if f.column not in data and not f.read_only and f.default is not None:
                clean[f.column] = _default(f)
        if not partial:
            _require(form.fields, clean, "", errors)
    else:
        for f in form.fields:
            if f.required and f.column in clean and clean[f.column] in (None, ""):
                errors[f.column] = f"{f.label} is required and cannot be emptied"
    return clean, errors


def check_details(
    conn: sa.Connection, user: User, form: Form, details: Any, *, partial: bool = False
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    if not form.detail_table:
        return [], {"details": f"{form.name} ({form.form_id}) has no detail lines"}
    if not isinstance(details, list) or not all(isinstance(d, dict) for d in details):
        return [], {"details": "must be a list of objects, one per line"}
    if len(details) > MAX_LINES:
        return [], {"details": f"at most {MAX_LINES} lines"}
    lines: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for i, line in enumerate(details):
        prefix = f"details[{i}]."
        clean, line_errors = _check_fields(conn, user, form.detail_fields, line, prefix, form)
        if not partial:
            _require(form.detail_fields, clean, prefix, line_errors)
        errors.update(line_errors)
        lines.append(clean)
    if not details and not partial:
        errors["details"] = "at least one line is required"
    return lines, errors


# ---- numbering -----------------------------------------------------------------------------------


def next_bill_no(conn: sa.Connection, user: User, prefix: str, day: date) -> str:
    period = f"{day:%Y%m}"
    key = [
        bill_seq.c.brands_id == user.brands_id,
        bill_seq.c.subsidiary_id == user.subsidiary_id,
        bill_seq.c.prefix == prefix,
        bill_seq.c.bill_period == period,
    ]
    for _ in range(3):
        last = conn.execute(sa.select(bill_seq.c.last_no).where(*key).with_for_update()).scalar_one_or_none()
        if last is not None:
            conn.execute(bill_seq.update().where(*key).values(last_no=last + 1))
            return f"{prefix}{period}-{last + 1:04d}"
        try:
            with conn.begin_nested():
                conn.execute(
                    bill_seq.insert().values(
                        brands_id=user.brands_id,
                        subsidiary_id=user.subsidiary_id,
                        prefix=prefix,
                        bill_period=period,
                        last_no=1,
                    )
                )
            return f"{prefix}{period}-0001"
        except IntegrityError:
            continue  # another writer made the counter first: take the next number from it
    raise Conflict("could not number the bill; try again")


_CODE = re.compile(r"^([A-Z]+)(\d+)$")


def next_code(conn: sa.Connection, user: User, table: sa.Table, letter: str) -> str:
    codes = conn.execute(
        sa.select(table.c.code).where(table.c.brands_id == user.brands_id, table.c.subsidiary_id == user.subsidiary_id)
    ).scalars()
    numbers = [int(m.group(2)) for c in codes if (m := _CODE.match(c or "")) and m.group(1) == letter]
    return f"{letter}{max(numbers, default=0) + 1:04d}"


# ---- add / update / delete ---------------------------------------------------------------------------

CODE_LETTERS = {"customer": "C", "supplier": "S", "material": "M"}


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


def locked_record(conn: sa.Connection, user: User, form: Form, record_id: str) -> Any:
    """The record as the user may see it, locked for the rest of the transaction; 404 otherwise."""
    table = TABLES[form.table]
    if not isinstance(record_id, str) or not record_id or len(record_id) > 64:
        raise NotFound(f"no record {str(record_id)[:64]!r} in form {form.form_id}")
    query = sa.select(table).where(
        table.c.id == record_id, table.c.brands_id == user.brands_id, table.c.subsidiary_id == user.subsidiary_id
    )
    if user.own_only and form.row_scoped:
        view = sa.table(
            form.view, sa.column("id"), sa.column("brands_id"), sa.column("subsidiary_id"), sa.column("salesman_id")
        )
        query = query.where(table.c.id.in_(sa.select(view.c.id).where(*scope(form, user, view))))
    row = conn.execute(query.with_for_update()).first()
    if row is None:
        raise NotFound(f"no record {record_id[:64]!r} in form {form.form_id} ({form.name})")
    return row


def check_version(row: Any, version: Any) -> None:
    if version is None:
        return
    wanted = as_int("version", version)
    if wanted != row.version:
        raise Conflict(
            f"the record changed since you read it (version {row.version}, you sent {wanted}); read it again"
        )


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


# ---- examine ---------------------------------------------------------------------------------------

# form -> sign of its stock effect when examined (+1 adds stock, -1 takes it)
STOCK_EFFECT = {"3002": 1, "2003": -1}


def _stock(conn: sa.Connection, user: User, form: Form, row: Any, sign: int) -> None:
    detail = TABLES[str(form.detail_table)]
    lines = conn.execute(
        sa.select(detail.c.material_id, detail.c.qty).where(detail.c[str(form.detail_parent)] == row.id)
    ).all()
    today = date.today()
    for material_id, qty in lines:
        delta = sign * float(qty)
        key = [inventory.c.material_id == material_id, inventory.c.warehouse_id == row.warehouse_id]
        have = conn.execute(sa.select(inventory.c.id, inventory.c.qty).where(*key).with_for_update()).first()
        current = float(have.qty) if have else 0.0
        if current + delta < -0.0001:
            code = conn.execute(sa.select(material.c.code).where(material.c.id == material_id)).scalar_one_or_none()
            raise Conflict(f"not enough stock of {code} in the warehouse: {current:g} there, {-delta:g} needed")
        dated = {"last_in_date": today} if delta > 0 else {"last_out_date": today}
        if have:
            conn.execute(
                inventory.update()
                .where(inventory.c.id == have.id)
                .values(qty=inventory.c.qty + delta, version=inventory.c.version + 1, updated_at=utcnow(), **dated)
            )
        else:
            now = utcnow()
            conn.execute(
                inventory.insert().values(id=uuid.uuid4().hex, brands_id=user.brands_id, subsidiary_id=user.subsidiary_id, material_id=material_id,
                                          warehouse_id=row.warehouse_id, qty=delta, version=1, created_at=now, updated_at=now, **dated)
            )  # fmt: skip


def examine(
    conn: sa.Connection, user: User, form: Form, record_id: str, version: Any = None, *, undo: bool = False
) -> Written:
    if not form.examinable:
        raise Invalid({"sFormId": f"{form.name} ({form.form_id}) has no examine"})
    row = locked_record(conn, user, form, record_id)
    check_version(row, version)
    want, have = ("draft", "examined") if undo else ("examined", "draft")
    if row.status != have:
        verb = "unexamine" if undo else "examine"
        raise Conflict(f"{form.name} {row.bill_no} is {row.status}: only a {have} bill can be {verb}d")
    sign = STOCK_EFFECT.get(form.form_id)
    if sign and row.warehouse_id:
        _stock(conn, user, form, row, -sign if undo else sign)
    table = TABLES[form.table]
    now = utcnow()
    conn.execute(
        table.update()
        .where(table.c.id == record_id)
        .values(
            status=want,
            examined_by=None if undo else user.id,
            examined_at=None if undo else now,
            version=row.version + 1,
            updated_at=now,
        )
    )
    return Written(record_id, row.bill_no, row.version + 1, form.form_id)


# ---- generate ----------------------------------------------------------------------------------------

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


def generate(
    conn: sa.Connection, user: User, target: Form, source_ref: Any, overrides: dict[str, Any] | None = None
) -> Written:
    """A new draft ``target`` bill from the selected lines (default: all) of an upstream bill."""
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
