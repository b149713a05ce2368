"""Examine and unexamine a bill: draft ⇄ examined, with the stock effect of the bills that move
goods (examining an inbound adds its lines to the warehouse's stock, examining a delivery takes
them; unexamining reverses it). Taking more than the warehouse holds is refused.

It must never change a bill's values or lines: only its status, who examined it and when, and stock.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

import sqlalchemy as sa

from tether.erp_demo.errors import Conflict, Invalid
from tether.erp_demo.forms import Form
from tether.erp_demo.records import Written, check_version, locked_record
from tether.erp_demo.schema import TABLES, inventory, material
from tether.erp_demo.users import User, utcnow

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
