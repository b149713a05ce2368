"""Submitted values checked against a form's schema: each field coerced to the value it is stored
as (numbers, dates, flags, bounded text, options, a reference resolved to a record the user may
use), defaults filled in when creating, required fields and detail lines checked. Errors come back
per field (``details[i].column`` for a line), all of them at once.

It only reads (options, references); it must never write. Every write calls it before it writes
anything, and the staging queue calls it to check a proposed op.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

import sqlalchemy as sa

from tether.erp_demo.errors import Invalid
from tether.erp_demo.forms import BY_ID, Field, Form
from tether.erp_demo.reads import scope
from tether.erp_demo.schema import TABLES, employee, warehouse
from tether.erp_demo.users import User
from tether.erp_demo.values import as_date, as_flag, as_int, as_number, as_text

MAX_LINES = 200


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


_DAYS_AFTER = re.compile(r"^(?P<base>today|[a-z_][a-z0-9_]*)\+(?P<days>\d{1,4})d$")


def _default(f: Field, clean: dict[str, Any]) -> Any:
    """``f``'s default; a relative date's counts from the value its base field has in ``clean``
    (given or defaulted before it), none where that field has none."""
    if f.default == "today":
        return date.today()
    if f.default is None:
        return None
    if f.type == "date" and (m := _DAYS_AFTER.match(f.default)):
        base = date.today() if m["base"] == "today" else clean.get(m["base"])
        return base + timedelta(days=int(m["days"])) if isinstance(base, date) else None
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
                clean[f.column] = _default(f, clean)
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
