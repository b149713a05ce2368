"""``SqlOpStore``: ops in tether's database (table ``op_queue``, migration 0004).

Every status change is one conditional UPDATE (``WHERE status IN (...)``) whose row count says
whether this caller made it: that is the confirm gate, so of any number of concurrent confirms
exactly one wins. Transactions run at READ COMMITTED on PostgreSQL and MariaDB (a losing UPDATE
waits for the winner, re-reads the row and matches nothing) and take the write lock at BEGIN on
SQLite. This module never calls a business system.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa

from tether.core.session import Owner
from tether.ops.model import Op
from tether.store.database import create_read_engine, normalize_url
from tether.store.tables import op_queue

T = TypeVar("T")
_JSON = ("payload", "source_ref", "diff")


def _engine(url: str) -> sa.Engine:
    u = normalize_url(url)
    if u.drivername == "sqlite":
        return create_read_engine(u, immediate=True)
    return sa.create_engine(u, isolation_level="READ COMMITTED", pool_pre_ping=True, pool_size=10, max_overflow=20)


def _row(op: Op) -> dict[str, Any]:
    row = {c.name: getattr(op, c.name) for c in op_queue.columns}
    for key in _JSON:
        value = row[key]
        row[key] = None if value is None else json.dumps(value, ensure_ascii=False, default=str)
    return row


def _op(row: Any) -> Op:
    values = dict(row._mapping)
    for key in _JSON:
        if values[key] is not None:
            values[key] = json.loads(values[key])
    values["auto_execute"] = bool(values["auto_execute"])
    return Op(**values)


class SqlOpStore:
    def __init__(self, url: str) -> None:
        self.engine = _engine(url)

    async def _run(self, fn: Callable[[sa.Connection], T]) -> T:
        def work() -> T:
            with self.engine.begin() as conn:
                return fn(conn)

        return await asyncio.to_thread(work)

    def close(self) -> None:
        self.engine.dispose()

    async def insert(self, op: Op) -> None:
        row = _row(op)
        await self._run(lambda conn: conn.execute(op_queue.insert().values(**row)))

    async def get(self, op_id: str, owner: Owner | None = None) -> Op | None:
        """The op; with ``owner``, only when it is theirs (anyone else's is as unknown as a wrong id)."""
        query = sa.select(op_queue).where(op_queue.c.op_id == op_id[:64])
        if owner is not None:
            query = query.where(op_queue.c.owner_user == owner.user_id, op_queue.c.owner_tenant == owner.tenant)
        row = await self._run(lambda conn: conn.execute(query).first())
        return _op(row) if row is not None else None

    async def list_ops(
        self, owner: Owner, status: str | None = None, session_id: str | None = None, limit: int = 50
    ) -> list[Op]:
        query = sa.select(op_queue).where(
            op_queue.c.owner_user == owner.user_id, op_queue.c.owner_tenant == owner.tenant
        )
        if status:
            query = query.where(op_queue.c.status == status)
        if session_id:
            query = query.where(op_queue.c.session_id == session_id)
        query = query.order_by(op_queue.c.created_at.desc(), op_queue.c.op_id.desc()).limit(limit)
        rows = await self._run(lambda conn: conn.execute(query).all())
        return [_op(r) for r in rows]

    async def move(self, op_id: str, from_statuses: tuple[str, ...], values: dict[str, Any], **where: Any) -> bool:
        """Set ``values`` when the op is in one of ``from_statuses`` (and matches ``where``):
        True when this call changed it. ``attempts=+1`` in ``values`` increments."""
        conditions = [op_queue.c.op_id == op_id, op_queue.c.status.in_(from_statuses)]
        if "lease_before" in where:
            lease = op_queue.c.lease_until
            conditions.append(sa.or_(lease.is_(None), lease < where.pop("lease_before")))
        if "live_at" in where:  # a draft must not be past its expiry (a failed op may be retried later)
            conditions.append(sa.or_(op_queue.c.status != "draft", op_queue.c.expire_at > where.pop("live_at")))
        update = dict(values)
        if update.pop("attempts", None) == "+1":
            update["attempts"] = op_queue.c.attempts + 1
        statement = op_queue.update().where(*conditions).values(**update)
        count = await self._run(lambda conn: conn.execute(statement).rowcount)
        return bool(count == 1)

    async def count_by_status(self) -> dict[str, int]:
        """Ops in each status, all owners (the ``tether_ops`` gauge)."""
        query = sa.select(op_queue.c.status, sa.func.count()).group_by(op_queue.c.status)
        rows = await self._run(lambda conn: conn.execute(query).all())
        return {str(status): int(n) for status, n in rows}

    async def due_drafts(self, now: float, limit: int = 200) -> list[Op]:
        """Drafts past their expiry (the sweeper expires them one conditional UPDATE each)."""
        query = (
            sa.select(op_queue)
            .where(op_queue.c.status == "draft", op_queue.c.expire_at <= now)
            .order_by(op_queue.c.expire_at)
            .limit(limit)
        )
        rows = await self._run(lambda conn: conn.execute(query).all())
        return [_op(r) for r in rows]
