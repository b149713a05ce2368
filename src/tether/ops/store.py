"""``SqlOpStore``: ops in tether's database (table ``op_queue``, migration 0004).

Every status change is one conditional UPDATE (``WHERE status IN (...)``) whose row count says
whether this caller made it: that is the confirm gate, so of any number of concurrent confirms
exactly one wins. Transactions run at READ COMMITTED on PostgreSQL and MariaDB (a losing UPDATE
waits for the winner, re-reads the row and matches nothing) and take the write lock at BEGIN on
SQLite. This module never calls a business system.

Given the session store of the same database (``sessions``), writes are statements run by its
group writer (``insert_run`` / ``move_run``), so the op service can put an op's change and its
audit row in one transaction, and a proposal's op row in its session's commit. Reads then use
a plain snapshot engine (no write lock taken at BEGIN).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa

from tether.core.session import Owner
from tether.ops.model import Op
from tether.store.database import create_read_engine, normalize_url
from tether.store.tables import op_queue
from tether.store.writer import Write

if TYPE_CHECKING:
    from tether.store.sql_store import SqlStore

T = TypeVar("T")
_JSON = ("payload", "source_ref", "diff")
_COLUMNS = tuple(c.name for c in op_queue.columns)


def _engine(url: str) -> sa.Engine:
    u = normalize_url(url)
    if u.drivername == "sqlite":
        return create_read_engine(u, immediate=True)
    return sa.create_engine(u, isolation_level="READ COMMITTED", pool_pre_ping=True, pool_size=10, max_overflow=20)


def _row(op: Op) -> dict[str, Any]:
    row = {name: getattr(op, name) for name in _COLUMNS}
    for key in _JSON:
        value = row[key]
        row[key] = None if value is None else json.dumps(value, ensure_ascii=False, default=str)
    return row


def _op(row: Any) -> Op:
    return _op_values(dict(row._mapping))


def _op_values(values: dict[str, Any]) -> Op:
    for key in _JSON:
        if values[key] is not None:
            values[key] = json.loads(values[key])
    values["auto_execute"] = bool(values["auto_execute"])
    return Op(**values)


class SqlOpStore:
    def __init__(self, url: str, sessions: SqlStore | None = None) -> None:
        self.sessions = sessions if sessions is not None and sessions.same_database(url) else None
        self.engine = _engine(url) if self.sessions is None else create_read_engine(normalize_url(url))
        mark = self.sessions.placeholder if self.sessions is not None else "?"
        self._mark = mark
        self._insert = f"INSERT INTO op_queue ({', '.join(_COLUMNS)}) VALUES ({', '.join([mark] * len(_COLUMNS))})"

    async def _run(self, fn: Callable[[sa.Connection], T]) -> T:
        def work() -> T:
            with self.engine.begin() as conn:
                return fn(conn)

        return await asyncio.to_thread(work)

    def close(self) -> None:
        self.engine.dispose()

    async def insert(self, op: Op) -> None:
        if self.sessions is not None:
            await self.sessions.submit(Write(self.insert_run(op)))
            return
        row = _row(op)
        await self._run(lambda conn: conn.execute(op_queue.insert().values(**row)))

    def insert_run(self, op: Op) -> Callable[[Any], bool]:
        """The op row's INSERT as a statement on the group writer's cursor."""
        row = _row(op)
        params = tuple(row[c] for c in _COLUMNS)

        def run(cur: Any) -> bool:
            cur.execute(self._insert, params)
            return True

        return run

    def get_run(self, op_id: str, owner: Owner | None) -> Callable[[Any], Op | None]:
        """``get`` (with ``owner``: only the owner's op) as a statement on the group writer's cursor."""
        m = self._mark
        statement = f"SELECT {', '.join(_COLUMNS)} FROM op_queue WHERE op_id = {m}"
        params: tuple[str, ...] = (op_id[:64],)
        if owner is not None:
            statement += f" AND owner_user = {m} AND owner_tenant = {m}"
            params += (owner.user_id, owner.tenant)

        def run(cur: Any) -> Op | None:
            cur.execute(statement, params)
            row = cur.fetchone()
            return None if row is None else _op_values(dict(zip(_COLUMNS, row, strict=True)))

        return run

    def move_run(
        self, op_id: str, from_statuses: tuple[str, ...], values: dict[str, Any], **where: Any
    ) -> Callable[[Any], bool]:
        """``move`` as statements on the group writer's cursor: True when this write changed the op."""
        m = self._mark
        sets, params = [], []
        for key, value in values.items():
            if key == "attempts" and value == "+1":
                sets.append("attempts = attempts + 1")
            else:
                sets.append(f"{key} = {m}")
                params.append(value)
        conditions = [f"op_id = {m}", f"status IN ({', '.join([m] * len(from_statuses))})"]
        params += [op_id, *from_statuses]
        if "lease_before" in where:
            conditions.append(f"(lease_until IS NULL OR lease_until < {m})")
            params.append(where.pop("lease_before"))
        if "live_at" in where:  # a draft must not be past its expiry
            conditions.append(f"(status <> 'draft' OR expire_at > {m})")
            params.append(where.pop("live_at"))
        statement = f"UPDATE op_queue SET {', '.join(sets)} WHERE {' AND '.join(conditions)}"
        bound = tuple(params)

        def run(cur: Any) -> bool:
            cur.execute(statement, bound)
            return bool(cur.rowcount == 1)

        return run

    async def get(self, op_id: str, owner: Owner | None = None) -> Op | None:
        """The op; with ``owner``, only when it is theirs (anyone else's is as unknown as a wrong id)."""
        if self.sessions is not None:  # the hot read of confirm and approve: raw SQL, no thread hop on SQLite
            return await self.sessions.read_rows(self.get_run(op_id, owner))
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

    async def latest_by_session(self, owner: Owner, session_ids: list[str]) -> dict[str, Op]:
        """The newest op of each of the owner's sessions named (those with one)."""
        if not session_ids:
            return {}
        query = (
            sa.select(op_queue)
            .where(
                op_queue.c.owner_user == owner.user_id,
                op_queue.c.owner_tenant == owner.tenant,
                op_queue.c.session_id.in_(session_ids),
            )
            .order_by(op_queue.c.created_at, op_queue.c.op_id)
        )
        rows = await self._run(lambda conn: conn.execute(query).all())
        return {str(r.session_id): _op(r) for r in rows}  # ascending: the newest of each comes last

    async def move(self, op_id: str, from_statuses: tuple[str, ...], values: dict[str, Any], **where: Any) -> bool:
        """Set ``values`` when the op is in one of ``from_statuses`` (and matches ``where``):
        True when this call changed it. ``attempts=+1`` in ``values`` increments."""
        if self.sessions is not None:
            return bool(await self.sessions.submit(Write(self.move_run(op_id, from_statuses, values, **where))))
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
