"""Bill numbers and master-data codes: ``<prefix><yyyymm>-<nnnn>`` from the tenant's counter in
``bill_seq`` (locked, or made by the first writer of the period), and the next code of a master
table (``C0001``, ``S0001``, ``M0001``).

It runs inside the writer's transaction, so a write that rolls back takes its number back with it;
it must never commit on its own.
"""

from __future__ import annotations

import re
from datetime import date

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from tether.erp_demo.errors import Conflict
from tether.erp_demo.schema import bill_seq
from tether.erp_demo.users import User

CODE_LETTERS = {"customer": "C", "supplier": "S", "material": "M"}


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
