"""The record a write acts on, and what a write answers: the record as the user may see it (tenant
and row scope), locked for the rest of the transaction; its version checked against the one the
writer read; and ``Written`` (id, bill number, new version). Add / update / delete, examine and
generate all find a record here, so they find and lock it the same way. ``TAX`` is the VAT rate
that both the invoice totals and a generated invoice apply.

It only reads (``SELECT ... FOR UPDATE``); it must never write a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from tether.erp_demo.errors import Conflict, NotFound
from tether.erp_demo.forms import Form
from tether.erp_demo.reads import scope
from tether.erp_demo.schema import TABLES
from tether.erp_demo.users import User
from tether.erp_demo.values import as_int

TAX = 0.13


@dataclass(frozen=True)
class Written:
    id: str
    bill_no: str | None
    version: int
    form_id: str

    def body(self) -> dict[str, Any]:
        return {"code": 1, "sId": self.id, "sBillNo": self.bill_no, "version": self.version, "sFormId": self.form_id}


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
