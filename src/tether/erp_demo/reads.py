"""The read procedures: a form's rows (``getBusinessDataByFormcustomId``) and one record with its
lines (``getBusinessDataById``). Tenant (brand + subsidiary) and row scope are enforced; form
grants are not (seed §7). Rows come from the form's ``viw_*`` view, so they carry the resolved
names (customer_name, material_name, warehouse_name...)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tether.erp_demo.errors import BadRequest, Invalid, NotFound
from tether.erp_demo.forms import BY_ID, Filter, Form
from tether.erp_demo.schema import TABLES, inventory, material
from tether.erp_demo.users import User, utcnow
from tether.erp_demo.values import as_date, as_flag, as_int, as_number, as_text, row_dict

MAX_PAGE_SIZE = 500
_TYPES: dict[str, Any] = {
    "text": sa.String(),
    "select": sa.String(),
    "date": sa.Date(),
    "number": sa.Float(),
    "integer": sa.Integer(),
}


def form_of(form_id: Any) -> Form:
    form = BY_ID.get(str(form_id).strip()) if isinstance(form_id, (str, int)) else None
    if form is None:
        raise NotFound(f"no such form: {str(form_id)[:40]!r}; GET /forms lists them")
    return form


def scope(form: Form, user: User, view: sa.TableClause | None = None) -> list[sa.ColumnElement[bool]]:
    """Tenant isolation, and row scope for users who see only their own customers."""
    col = view.c if view is not None else None

    def c(name: str) -> sa.ColumnClause[Any]:
        return col[name] if col is not None else sa.column(name)

    where = [c("brands_id") == user.brands_id, c("subsidiary_id") == user.subsidiary_id]
    if user.own_only and form.row_scoped:
        where.append(c("salesman_id") == user.id)
    return where


def _filter_value(f: Filter, value: Any) -> Any:
    if f.type == "date":
        return as_date(f.name, value)
    if f.type == "integer":
        return as_int(f.name, value)
    if f.type == "number":
        return as_number(f.name, value)
    text = as_text(f.name, value, 200)
    if f.options and text not in {v for v, _ in f.options}:
        raise Invalid({f.name: f"must be one of {', '.join(v for v, _ in f.options)}"})
    return text


def _conditions(form: Form, body: dict[str, Any]) -> list[sa.ColumnElement[bool]]:
    where: list[sa.ColumnElement[bool]] = []
    errors: dict[str, str] = {}
    for f in form.filters:
        raw = body.get(f.name)
        if raw is None or raw == "":
            continue
        try:
            value = _filter_value(f, raw)
        except Invalid as exc:
            errors.update(exc.errors or {})
            continue
        column = sa.column(f.column, _TYPES[f.type])
        if f.op == "like":
            where.append(column.contains(value, autoescape=True))
        elif f.op == "gte":
            where.append(column >= value)
        elif f.op == "lte":
            where.append(column <= value)
        else:
            where.append(column == value)
    if errors:
        raise Invalid(errors)
    return where


def _order(form: Form) -> list[sa.ColumnElement[Any]]:
    order: list[sa.ColumnElement[Any]] = []
    for item in (*form.order, "id"):
        name, _, direction = item.partition(" ")
        order.append(sa.column(name).desc() if direction == "desc" else sa.column(name).asc())
    return order


def paging(body: dict[str, Any]) -> tuple[int, int]:
    page = as_int("pageNum", body.get("pageNum", 1), low=1, high=1_000_000)
    size = as_int("pageSize", body.get("pageSize", 20), low=1)
    return page, min(size, MAX_PAGE_SIZE)


def read_rows(conn: sa.Connection, user: User, body: dict[str, Any]) -> dict[str, Any]:
    """A form's page of rows for ``user``: every body key bound by name to the procedure's parameters."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object with sFormId, pageNum, pageSize and filters")
    form = form_of(body.get("sFormId"))
    page, size = paging(body)
    where = [*scope(form, user), *_conditions(form, body)]
    if "bUpdate" in form.extras:
        _inventory_procedure(conn, user, body, where)
    view = sa.table(form.view)
    total = conn.execute(sa.select(sa.func.count()).select_from(view).where(*where)).scalar_one()
    rows = conn.execute(
        sa.select(sa.text("*"))
        .select_from(view)
        .where(*where)
        .order_by(*_order(form))
        .limit(size)
        .offset((page - 1) * size)
    ).all()
    return {"rows": [row_dict(r) for r in rows], "total": int(total), "pageNum": page, "pageSize": size}


def _inventory_procedure(conn: sa.Connection, user: User, body: dict[str, Any], where: list[Any]) -> None:
    """SP_Inventory_InOutWarehouse: with bUpdate=1 it adds adjust_qty to the matched rows' stock —
    bUpdateAll=1 to every row of the tenant. The hole of seed §7, kept on purpose."""
    update_all = as_flag("bUpdateAll", body.get("bUpdateAll", 0))
    if not (as_flag("bUpdate", body.get("bUpdate", 0)) or update_all):
        return
    adjust = as_number("adjust_qty", body.get("adjust_qty", 1))
    if update_all:
        match = [inventory.c.brands_id == user.brands_id, inventory.c.subsidiary_id == user.subsidiary_id]
    else:
        query: sa.Select[Any] = sa.select(sa.column("id")).select_from(sa.table("viw_inventory")).where(*where)
        ids = list(conn.execute(query).scalars())
        if not ids:
            return
        match = [inventory.c.id.in_(ids), inventory.c.brands_id == user.brands_id]
    conn.execute(
        inventory.update()
        .where(*match)
        .values(qty=inventory.c.qty + adjust, version=inventory.c.version + 1, updated_at=utcnow())
    )


def read_record(conn: sa.Connection, user: User, form_id: str, record_id: str) -> dict[str, Any]:
    form = form_of(form_id)
    view = sa.table(form.view)
    row = conn.execute(
        sa.select(sa.text("*")).select_from(view).where(sa.column("id") == record_id, *scope(form, user))
    ).first()
    if row is None:
        raise NotFound(f"no record {record_id[:64]!r} in form {form.form_id} ({form.name})")
    return {"master": row_dict(row), "details": detail_rows(conn, form, record_id)}


def detail_rows(conn: sa.Connection, form: Form, record_id: str) -> list[dict[str, Any]]:
    if not form.detail_table or not form.detail_parent:
        return []
    lines = TABLES[form.detail_table]
    query = (
        sa.select(
            lines,
            material.c.code.label("material_code"),
            material.c.name.label("material_name"),
            material.c.spec.label("spec"),
            material.c.unit.label("unit"),
        )
        .select_from(lines.outerjoin(material, material.c.id == lines.c.material_id))
        .where(lines.c[form.detail_parent] == record_id)
        .order_by(lines.c.line_no)
    )
    return [row_dict(r) for r in conn.execute(query)]
