"""The audit log: every call of a tool marked ``audited`` (it reads or writes business data) is
appended as a row whose ``hash`` covers the row and the previous row's hash, so a changed or
deleted row breaks the chain (``verify``). Rows are never updated or deleted by tether.

Arguments are what the model sent; credentials never reach them (they live only in the
``ToolContext``). Op actions (propose, confirm, cancel, expire, execute) are rows of the same
chain: ``tool_id`` is ``op.<action>``, ``tool_call_id`` the op id, ``args`` the details (brand,
form, payload, diff, result), ``outcome`` the op's status after the action.

Given the session store of the same database (``sessions``), rows are appended by its group
writer: a tool call's row in the transaction of its session's next commit (the one that records
the call's result, so no result is shown without its row), an op action's row in the same
transaction as the op's change (``append_run``). The writer is one thread, so the chain is linear
within a process; on SQLite the writer's BEGIN IMMEDIATE and on PostgreSQL a transaction-scoped
advisory lock serialise appends across processes; on MariaDB ``prev_hash`` is unique, so an
append that linked to a tail another replica just extended fails its statement alone and links
again to the new tail (a locking read sees it).

The chain alone cannot show rows deleted from its end (what is left is still a chain), so every
append also moves the head — ``audit_head``: the number of rows and the last hash — in its own
transaction, and ``verify`` compares the walk's end with it. Whoever can write the table can
rewrite the head too, and recompute every hash (there is no secret): ``tether audit verify``
prints the head's hash, and ``--head HASH`` checks that a head recorded elsewhere earlier is still
in the chain.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from tether.core.session import Owner
from tether.core.tools import ToolContext
from tether.store import compact
from tether.store.database import create_read_engine, normalize_url
from tether.store.tables import audit_head, audit_log
from tether.store.writer import Write

if TYPE_CHECKING:
    from tether.store.sql_store import SqlStore

GENESIS = "0" * 64
_FIELDS = ("at", "user_id", "tenant", "session_id", "tool_call_id", "tool_id", "args", "outcome")
_CHAIN_LOCK = 7_305_118_272  # PostgreSQL advisory lock key: one appender of the chain at a time


def chain_hash(prev_hash: str, row: dict[str, Any]) -> str:
    """The row's link: SHA-256 of ``[prev_hash, *fields]`` as compact JSON (``compact.dumps``: the
    same text as ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``, which wrote the
    earlier rows, with its encoder built once)."""
    body = compact.dumps([prev_hash, *(row[f] for f in _FIELDS)])
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class AuditBreak:
    """Where ``verify`` found the log broken: the first row that breaks the chain, or None when
    the chain holds but does not end where its head says (rows deleted from the end)."""

    row_id: int | None
    reason: str


APPEND_TRIES = 20  # replicas racing for the tail: each retry reads the tail another one just wrote
_TAIL = "SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1"
_TAIL_LOCKED = _TAIL + " FOR UPDATE"  # MariaDB: a locking read sees the newest committed tail


class SqlAuditLog:
    """Appends are serialised (one at a time per process, each in its own transaction that reads
    the chain's tail), so the chain stays linear; across processes (replicas) ``prev_hash`` is
    unique, so of two appends linking to one tail the second is refused and retried on the new tail."""

    def __init__(self, url: str, sessions: SqlStore | None = None) -> None:
        self.engine = create_read_engine(normalize_url(url), immediate=True)
        self._lock = asyncio.Lock()
        self.sessions = sessions if sessions is not None and sessions.same_database(url) else None

    async def record(self, ctx: ToolContext, tool_id: str, args: dict[str, Any], outcome: str) -> None:
        row = self.tool_row(ctx, tool_id, args, outcome)
        if self.sessions is not None:
            write = Write(self.append_run(row))
            if ctx.session_id:
                self.sessions.attach(ctx.session_id, write)  # committed with the call's result
            else:
                await self.sessions.submit(write)
            return
        async with self._lock:
            await asyncio.to_thread(self._append, row)

    @staticmethod
    def tool_row(ctx: ToolContext, tool_id: str, args: dict[str, Any], outcome: str) -> dict[str, Any]:
        return {
            "at": round(time.time(), 6),
            "user_id": ctx.owner.user_id,
            "tenant": ctx.owner.tenant,
            "session_id": ctx.session_id,
            "tool_call_id": ctx.tool_call_id,
            "tool_id": tool_id,
            "args": json.dumps(args, ensure_ascii=False, sort_keys=True, default=str),
            "outcome": outcome,
        }

    async def record_action(
        self, owner: Owner, session_id: str | None, action: str, op_id: str, details: dict[str, Any], outcome: str
    ) -> None:
        """An op's action as one chained row (never a credential: callers pass business data only)."""
        row = self.action_row(owner, session_id, action, op_id, details, outcome)
        if self.sessions is not None:
            await self.sessions.submit(Write(self.append_run(row)))
            return
        async with self._lock:
            await asyncio.to_thread(self._append, row)

    @staticmethod
    def action_row(
        owner: Owner, session_id: str | None, action: str, op_id: str, details: dict[str, Any], outcome: str
    ) -> dict[str, Any]:
        return {
            "at": round(time.time(), 6),
            "user_id": owner.user_id,
            "tenant": owner.tenant,
            "session_id": session_id or "",
            "tool_call_id": op_id,
            "tool_id": f"op.{action}",
            "args": json.dumps(details, ensure_ascii=False, sort_keys=True, default=str),
            "outcome": outcome,
        }

    def append_run(self, row: dict[str, Any]) -> Callable[[Any], None]:
        """The row's append as statements on the session store writer's cursor (safe to run again
        after a rollback: the tail is read afresh)."""
        assert self.sessions is not None
        mark, backend = self.sessions.placeholder, self.sessions.backend
        columns = (*_FIELDS, "prev_hash", "hash")
        insert = f"INSERT INTO audit_log ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
        move_head = f"UPDATE audit_head SET entries = entries + 1, hash = {mark} WHERE name = 'chain'"

        mariadb = backend in ("mysql", "mariadb")

        def run(cur: Any) -> None:
            if backend == "postgresql":
                cur.execute(f"SELECT pg_advisory_xact_lock({_CHAIN_LOCK})")
            for attempt in range(APPEND_TRIES):
                cur.execute(_TAIL_LOCKED if mariadb else _TAIL)
                found = cur.fetchone()
                prev = found[0] if found else GENESIS
                linked = chain_hash(prev, row)
                try:
                    cur.execute(insert, (*(row[f] for f in _FIELDS), prev, linked))
                    cur.execute(move_head, (linked,))
                    return
                except Exception as e:  # MariaDB: another replica linked to that tail first (prev_hash unique)
                    # only the statement failed there, the transaction goes on: read the new tail, link to it
                    if not mariadb or type(e).__name__ != "IntegrityError" or attempt == APPEND_TRIES - 1:
                        raise

        return run

    def _append(self, row: dict[str, Any]) -> None:
        for attempt in range(APPEND_TRIES):
            try:
                with self.engine.begin() as conn:  # a fresh snapshot each time: it sees the new tail
                    tail = conn.execute(sa.select(audit_log.c.hash).order_by(audit_log.c.id.desc()).limit(1)).scalar()
                    prev = tail or GENESIS
                    linked = chain_hash(prev, row)
                    conn.execute(audit_log.insert().values(**row, prev_hash=prev, hash=linked))
                    conn.execute(
                        audit_head.update()
                        .where(audit_head.c.name == "chain")
                        .values(entries=audit_head.c.entries + 1, hash=linked)
                    )
                return
            except (sa.exc.IntegrityError, sa.exc.OperationalError):  # another replica linked to that tail first
                if attempt == APPEND_TRIES - 1:
                    raise
                time.sleep(0.002 * (attempt + 1))

    def rows(self, tenant: str | None = None) -> list[dict[str, Any]]:
        query = sa.select(audit_log).order_by(audit_log.c.id)
        if tenant is not None:
            query = query.where(audit_log.c.tenant == tenant)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    def head(self) -> tuple[int, str] | None:
        """(rows, last hash) as the head records them; None when the head row is gone."""
        with self.engine.connect() as conn:
            found = conn.execute(
                sa.select(audit_head.c.entries, audit_head.c.hash).where(audit_head.c.name == "chain")
            ).first()
        return None if found is None else (int(found[0]), str(found[1]))

    def verify(self, recorded_head: str | None = None) -> AuditBreak | None:
        """Where the log is broken, or None when it is whole: every row links to the one before
        it, the last one is where the head says, and ``recorded_head`` (a hash noted earlier,
        elsewhere) is one of the chain's."""
        prev, count, seen = GENESIS, 0, recorded_head is None or recorded_head == GENESIS
        for row in self.rows():
            if row["prev_hash"] != prev or row["hash"] != chain_hash(prev, row):
                return AuditBreak(int(row["id"]), "it was changed, or a row before it was deleted or moved")
            prev, count = row["hash"], count + 1
            seen = seen or prev == recorded_head
        head = self.head()
        if head is None:
            return AuditBreak(None, "the chain's head (table audit_head) is gone")
        if head != (count, prev):
            return AuditBreak(
                None,
                f"the head records {head[0]} row(s) ending in {head[1][:16]}, the table holds {count}"
                f" ending in {prev[:16]}: rows were deleted from its end, or the head was changed",
            )
        if not seen:
            return AuditBreak(None, f"the recorded head {str(recorded_head)[:16]} is no longer in the chain")
        return None

    def close(self) -> None:
        self.engine.dispose()
