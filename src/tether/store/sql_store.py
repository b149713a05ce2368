"""``SqlStore``: the ``SessionStore`` and ``DslStore`` ports on SQLite, PostgreSQL or MariaDB/MySQL.

Writes go through the database's one ``GroupWriter`` (group commit on a raw DBAPI connection);
a session's load (the hot read) runs raw SQL through ``Reader`` (reader.py); the other reads use
SQLAlchemy Core on a sync engine in worker threads; each read is one snapshot transaction. ``open()`` migrates the schema by itself. Driver exceptions are translated here or in
the writer: callers see ``NotFound``, ``Conflict`` or ``StoreError``, never a DBAPI error.
This module must never mutate a session except through the writer's post-commit bookkeeping.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sqlite3
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa

from tether.core.events import RuntimeEvent
from tether.core.ports import AsyncJob, Clock, Commit, DslSnapshot, SessionSummary, SystemClock
from tether.core.session import AgentSession, Owner, Status
from tether.errors import NotFound
from tether.store import codec, compact, leases, writes
from tether.store.database import create_read_engine, normalize_url, writer_database
from tether.store.migrate import upgrade_engine
from tether.store.reader import Reader
from tether.store.tables import (
    agent_event,
    agent_session,
    async_job,
    dsl_execution_log,
    dsl_instance,
    dsl_step,
)
from tether.store.writer import GroupWriter, StoreError, Write, WriterStats

T = TypeVar("T")
# ``load``: the session's row, then its message and step bodies in idx order (Reader statements)
_LOAD_COLUMNS = (
    "session_key", "id", "owner_user", "owner_tenant", "title", "query", "status", "version", "last_seq",
    "state", "created_at", "updated_at",
)  # fmt: skip
_LOAD = (
    f"SELECT {', '.join(_LOAD_COLUMNS)} FROM agent_session WHERE id = ?",
    "SELECT body FROM agent_message WHERE session_key = ? ORDER BY idx",
    "SELECT body FROM agent_step WHERE session_key = ? ORDER BY idx",
)
log = logging.getLogger("tether.store")
# an attached write whose session commits nothing within this time is committed on its own
ATTACH_FLUSH_S = 0.25


class SqlStore:
    """Durable sessions, transcripts, events, jobs and DSL snapshots in one SQL database."""

    def __init__(
        self,
        url: str,
        lease_seconds: float = 30.0,
        clock: Clock | None = None,
        migrate: bool = True,
        replica_id: str | None = None,
    ) -> None:
        self.url = normalize_url(url)
        self.lease_seconds = lease_seconds
        self.replica_id = replica_id or default_replica_id()  # the name this process's leases carry
        self._leases: leases.LeaseStatements | None = None
        self._clock = clock or SystemClock()
        self._migrate = migrate
        self._engine: sa.Engine | None = None
        self._write_engine: sa.Engine | None = None
        self._writer: GroupWriter | None = None
        self._reader: Reader | None = None
        self._load_sql: tuple[str, ...] = _LOAD
        self._sql: writes.Statements | None = None
        self._ledger = codec.Ledger()
        # per session: writes attached to its next commit, and their flush (cancelled when a commit takes them)
        self._attached: dict[str, tuple[list[Write], asyncio.TimerHandle]] = {}

    # -- lifecycle -----------------------------------------------------------------------------

    async def open(self) -> None:
        """Create the engines, migrate to the latest revision and start the writer thread."""
        await asyncio.to_thread(self._open_sync)

    def _open_sync(self) -> None:
        engine = create_read_engine(self.url)
        if self.url.drivername == "sqlite":  # SQLite's lower() folds ASCII only
            sa.event.listen(engine, "connect", _register_lower)
        write_engine: sa.Engine | None = None
        try:
            if self._migrate:
                upgrade_engine(engine)
            db, paramstyle, write_engine = writer_database(self.url)
            writer = GroupWriter(db, name=f"tether-writer-{self.url.get_backend_name()}")
            writer.start()
        except Exception as e:
            for eng in (engine, write_engine):
                if eng is not None:
                    eng.dispose()
            if isinstance(e, sa.exc.DBAPIError | sqlite3.Error):
                raise StoreError(f"cannot open the store at {self.url!r}: {e}") from e
            raise
        self._engine, self._write_engine, self._writer = engine, write_engine, writer
        self._reader = Reader(self.url, engine)
        self._load_sql = tuple(self._reader.sql(q) for q in _LOAD)
        self._sql = writes.Statements(paramstyle)
        self._leases = leases.LeaseStatements(paramstyle, skip_locked=self.url.drivername != "sqlite")

    async def close(self) -> None:
        """Let queued writes commit, stop the writer and release every connection."""
        for session_id in list(self._attached):
            self._flush_attached(session_id)
        writer, self._writer = self._writer, None
        if writer is not None:
            await asyncio.to_thread(writer.close)
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
        for engine in (self._write_engine, self._engine):
            if engine is not None:
                engine.dispose()
        self._engine = self._write_engine = None

    async def __aenter__(self) -> SqlStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def writer_stats(self) -> WriterStats:
        return self._w().stats

    def _w(self) -> GroupWriter:
        if self._writer is None:
            raise StoreError("the store is not open")
        return self._writer

    def _l(self) -> leases.LeaseStatements:
        if self._leases is None:
            raise StoreError("the store is not open")
        return self._leases

    def _r(self) -> Reader:
        if self._reader is None:
            raise StoreError("the store is not open")
        return self._reader

    def _s(self) -> writes.Statements:
        if self._sql is None:
            raise StoreError("the store is not open")
        return self._sql

    async def _read(self, fn: Callable[[sa.Connection], T]) -> T:
        engine = self._engine
        if engine is None:
            raise StoreError("the store is not open")

        def run() -> T:
            try:
                with engine.connect() as conn, conn.begin():
                    return fn(conn)
            except sa.exc.DBAPIError as e:
                raise StoreError(f"database error: {e.orig}") from e

        return await asyncio.to_thread(run)

    # -- SessionStore: writes ------------------------------------------------------------------

    async def create(self, commit: Commit) -> None:
        """Insert a new session with its first messages, events and jobs (``Conflict`` if the id
        exists)."""
        await self._commit(commit, create=True)

    async def commit(self, commit: Commit) -> None:
        await self._commit(commit, create=False)

    async def _commit(self, commit: Commit, create: bool) -> None:
        ledger = self._ledger
        rows = codec.snapshot_commit(
            commit, self._clock.now(), self.lease_seconds, ledger, compact.pack, create, lease_owner=self.replica_id
        )
        write = writes.commit_write(self._s(), commit, rows, create, ledger)
        attached = self._take_attached(commit.session.session_id)
        if not attached:
            await self._w().submit(write)
            return
        futures = self._w().enqueue([*attached, write])  # one transaction, each write failing alone
        for fut in futures[:-1]:
            fut.add_done_callback(_log_failure)
        await futures[-1]

    # -- writes other modules make on the same database (audit rows, ops) -----------------------

    @property
    def placeholder(self) -> str:
        """The DBAPI's parameter mark for raw SQL run inside a ``Write`` (``?`` or ``%s``)."""
        return "?" if self.url.drivername == "sqlite" else "%s"  # sqlite3; psycopg and PyMySQL

    @property
    def backend(self) -> str:
        return str(self.url.get_backend_name())

    def same_database(self, url: str | sa.URL) -> bool:
        return normalize_url(url) == self.url

    async def submit(self, write: Write) -> Any:
        """Run ``write`` in the writer's next group commit and wait until it is durable."""
        return await self._w().submit(write)

    def attach(self, session_id: str, write: Write) -> None:
        """Commit ``write`` in the same transaction as the session's next commit, before it: what
        that commit shows (a tool's result, a proposal) is never durable without it. Each write
        still fails alone: a session commit refused as stale does not take ``write`` with it. If
        the session commits nothing within ``ATTACH_FLUSH_S``, ``write`` is committed on its own."""
        if session_id not in self._attached:
            timer = asyncio.get_running_loop().call_later(ATTACH_FLUSH_S, self._flush_attached, session_id)
            self._attached[session_id] = ([], timer)
        self._attached[session_id][0].append(write)

    def _take_attached(self, session_id: str) -> list[Write] | None:
        entry = self._attached.pop(session_id, None)
        if entry is None:
            return None
        entry[1].cancel()
        return entry[0]

    def _flush_attached(self, session_id: str) -> None:
        attached = self._take_attached(session_id)
        if attached and self._writer is not None:
            for fut in self._writer.enqueue(attached):
                fut.add_done_callback(_log_failure)

    async def renew_lease(self, session_id: str, version: int) -> bool:
        """Extend a RUNNING session's lease if it is still at ``version`` and this replica holds it."""
        until = self._clock.now() + self.lease_seconds
        return bool(await self._w().submit(leases.renew(self._l(), session_id, version, self.replica_id, until)))

    # -- leases and sweep claims across replicas (store/leases.py) -------------------------------

    async def claim_expired(self, limit: int = 100) -> list[str]:
        """RUNNING sessions whose runner stopped renewing, now leased to this replica (no other
        replica's claim returns them): the caller recovers each."""
        now = self._clock.now()
        write = leases.claim_lapsed(self._l(), self.replica_id, now, now + self.lease_seconds, limit)
        taken: list[str] = await self._w().submit(write)
        return taken

    async def claim_session(self, session_id: str) -> bool:
        """Lease a session that is not RUNNING and not held by any replica, to act on it (apply a
        callback's result); False when another replica runs or holds it."""
        now = self._clock.now()
        write = leases.claim_free(self._l(), session_id, self.replica_id, now, now + self.lease_seconds)
        return bool(await self._w().submit(write))

    async def release_session(self, session_id: str) -> bool:
        """Drop this replica's claim on a session that is not RUNNING (the claim found nothing to do)."""
        return bool(await self._w().submit(leases.release(self._l(), session_id, self.replica_id)))

    async def hand_back_leases(self) -> int:
        """Every lease this replica holds lapses now (graceful shutdown), for another to take over."""
        return int(await self._w().submit(leases.hand_back(self._l(), self.replica_id)))

    async def claim_overdue_jobs(self, reason: str, limit: int = 100) -> list[AsyncJob]:
        """PENDING jobs past their deadline, failed with ``reason`` by this call alone."""
        write = leases.claim_overdue_jobs(self._l(), self._clock.now(), limit, reason)
        jobs: list[AsyncJob] = await self._w().submit(write)
        return jobs

    async def ping(self) -> None:
        """One round trip to the database (readiness); ``StoreError`` when it cannot be reached."""
        await self._read(lambda conn: conn.execute(sa.text("SELECT 1")).scalar())

    async def finish_job(self, job_id: str, status: str, result: Any, error: str | None) -> bool:
        """Record a job's outcome once: True if this call moved it out of PENDING."""
        write = writes.finish_job_write(self._s(), job_id, status, result, error)
        return bool(await self._w().submit(write))

    async def rename(self, session_id: str, owner: Owner, title: str) -> SessionSummary:
        summary: SessionSummary = await self._w().submit(
            writes.set_meta_write(self._s(), session_id, owner, "title", title)
        )
        return summary

    async def set_archived(self, session_id: str, owner: Owner, archived: bool) -> SessionSummary:
        summary: SessionSummary = await self._w().submit(
            writes.set_meta_write(self._s(), session_id, owner, "archived", bool(archived))
        )
        return summary

    # -- SessionStore: reads -------------------------------------------------------------------

    async def read_rows(self, read: Callable[[Any], T]) -> T:
        """``read``, a function of a DBAPI cursor (statements in ``placeholder``'s style), as a hot
        read: on SQLite on the calling thread, elsewhere on a pooled connection (reader.py)."""
        return await self._r().run(read)

    async def load(self, session_id: str, owner: Owner | None = None) -> AgentSession:
        reader = self._r()
        head, messages, steps = self._load_sql

        def run(cur: Any) -> tuple[AgentSession, str]:
            cur.execute(head, (session_id,))
            found = cur.fetchone()
            if found is None:
                raise NotFound(f"session {session_id} not found")
            row = dict(zip(_LOAD_COLUMNS, found, strict=True))
            if not codec.owns(owner, row["owner_user"], row["owner_tenant"]):
                raise NotFound(f"session {session_id} not found")
            bodies = []
            for statement in (messages, steps):
                cur.execute(statement, (row["session_key"],))
                bodies.append([b for (b,) in cur.fetchall()])
            row["state"] = codec.unpack(row["state"])  # its text: the ledger's digest is of it
            return codec.session_from_row(row, *bodies), row["state"]

        s, state = await reader.run(run)
        self._ledger.loaded(s, state)
        return s

    async def last_seq(self, session_id: str) -> int:
        """The highest event seq stored for the session (0 when none); ``load`` also sets it as
        ``AgentSession.last_seq`` so a fresh load continues numbering."""

        def run(conn: sa.Connection) -> int:
            value = conn.execute(sa.select(agent_session.c.last_seq).where(agent_session.c.id == session_id)).scalar()
            if value is None:
                raise NotFound(f"session {session_id} not found")
            return int(value)

        return await self._read(run)

    async def get_summary(self, session_id: str, owner: Owner) -> SessionSummary:
        t = agent_session
        query = sa.select(t.c.owner_user, t.c.owner_tenant, *_summary_columns()).where(t.c.id == session_id)

        def run(conn: sa.Connection) -> SessionSummary:
            row = conn.execute(query).first()
            if row is None or not codec.owns(owner, row.owner_user, row.owner_tenant):
                raise NotFound(f"session {session_id} not found")
            return codec.summary_from_row(row._mapping)

        return await self._read(run)

    async def list_sessions(
        self, owner: Owner, limit: int, offset: int, query: str | None = None, archived: bool | None = False
    ) -> list[SessionSummary]:
        """The owner's sessions, most recently updated first, without their transcripts."""
        t = agent_session
        select = sa.select(*_summary_columns()).where(t.c.owner_tenant == owner.tenant, t.c.owner_user == owner.user_id)
        if archived is not None:
            select = select.where(t.c.archived == (sa.true() if archived else sa.false()))
        if query:
            select = select.where(self._folded(t.c.title).contains(query.lower(), autoescape=True))
        select = select.order_by(t.c.updated_at.desc(), t.c.session_key.desc()).limit(limit).offset(offset)
        return await self._read(lambda conn: [codec.summary_from_row(r._mapping) for r in conn.execute(select)])

    def _folded(self, column: sa.ColumnElement[str]) -> sa.ColumnElement[str]:
        """``column`` lower-cased as Python does, compared byte for byte (see ``codec.title_matches``)."""
        backend = self.url.get_backend_name()
        if backend == "sqlite":
            return sa.func.tether_lower(column, type_=sa.Text)
        if backend == "mysql":  # its default collations also ignore accents in LIKE
            return sa.func.lower(column, type_=sa.Text).collate("utf8mb4_bin")
        return sa.func.lower(column, type_=sa.Text)

    async def expired_running(self) -> list[str]:
        now = self._clock.now()
        t = agent_session
        query = sa.select(t.c.id).where(t.c.status == Status.RUNNING.value, t.c.lease_until < now)
        return await self._read(lambda conn: list(conn.execute(query).scalars()))

    async def events_after(self, session_id: str, after: int, limit: int = 500) -> list[RuntimeEvent]:
        t = agent_event
        key = sa.select(agent_session.c.session_key).where(agent_session.c.id == session_id).scalar_subquery()
        # every row holds at least one event: `limit` rows always hold `limit` events
        query = sa.select(t.c.body).where(t.c.session_key == key, t.c.last_seq > after).order_by(t.c.last_seq)
        query = query.limit(limit)
        return await self._read(
            lambda conn: codec.events_from_batches(session_id, conn.execute(query).scalars(), after, limit)
        )

    async def get_job(self, job_id: str) -> AsyncJob | None:
        query = sa.select(async_job).where(async_job.c.job_id == job_id)

        def run(conn: sa.Connection) -> AsyncJob | None:
            row = conn.execute(query).first()
            return None if row is None else codec.job_from_row(row._mapping)

        return await self._read(run)

    async def unapplied_jobs(self, session_id: str) -> list[AsyncJob]:
        """Finished jobs of the session whose result is not yet in its transcript."""
        t = async_job
        query = (
            sa.select(t)
            .where(t.c.session_id == session_id, t.c.status != "PENDING", t.c.applied == sa.false())
            .order_by(t.c.created_at, t.c.job_id)
        )
        return await self._jobs(query)

    async def sessions_with_unapplied_jobs(self) -> list[str]:
        """Sessions holding a finished job whose result is not yet in the transcript."""
        t = async_job
        query = (
            sa.select(t.c.session_id)
            .where(t.c.status != "PENDING", t.c.applied == sa.false(), t.c.kind == "session")
            .distinct()
        )
        return await self._read(lambda conn: [r[0] for r in conn.execute(query)])

    async def count_pending_jobs(self) -> int:
        """Async jobs still waiting for their callback (the ``tether_async_jobs_waiting`` gauge)."""
        query = sa.select(sa.func.count()).select_from(async_job).where(async_job.c.status == "PENDING")
        return await self._read(lambda conn: int(conn.execute(query).scalar_one()))

    async def _jobs(self, query: sa.Select[Any]) -> list[AsyncJob]:
        return await self._read(lambda conn: [codec.job_from_row(r._mapping) for r in conn.execute(query)])

    # -- DslStore ------------------------------------------------------------------------------

    async def save_dsl(self, dsl: DslSnapshot) -> None:
        """Store a compiled snapshot (immutable: saving the same id twice is a ``Conflict``)."""
        await self._w().submit(writes.save_dsl_write(self._s(), dsl))

    def stage_dsl(self, session_id: str, dsl: DslSnapshot) -> None:
        """Save ``dsl`` in the transaction of the session's next commit (the final one, which
        announces it): the snapshot and its DSL_COMPILED event land together."""
        self.attach(session_id, writes.save_dsl_write(self._s(), dsl))

    async def get_dsl(self, dsl_id: str, owner: Owner | None = None) -> DslSnapshot:
        def run(conn: sa.Connection) -> DslSnapshot:
            head = conn.execute(sa.select(dsl_instance).where(dsl_instance.c.dsl_id == dsl_id)).first()
            if head is None or not codec.owns(owner, head.owner_user, head.owner_tenant):
                raise NotFound(f"DSL {dsl_id} not found")
            steps = conn.execute(sa.select(dsl_step).where(dsl_step.c.dsl_id == dsl_id).order_by(dsl_step.c.idx))
            return codec.dsl_from_rows(head._mapping, [s._mapping for s in steps])

        return await self._read(run)

    async def log_execution(
        self,
        dsl_id: str,
        execution_id: str,
        params: dict[str, Any],
        status: str,
        steps: list[dict[str, Any]],
        error: str | None,
    ) -> None:
        """Record a replay; logging the same ``execution_id`` again updates its row."""
        write = writes.log_execution_write(
            self._s(), dsl_id, execution_id, params, status, steps, error, self._clock.now()
        )
        await self._w().submit(write)

    async def executions(self, dsl_id: str) -> list[dict[str, Any]]:
        t = dsl_execution_log
        query = sa.select(t).where(t.c.dsl_id == dsl_id).order_by(t.c.created_at, t.c.execution_id)
        return await self._read(lambda conn: [codec.execution_from_row(r._mapping) for r in conn.execute(query)])


def default_replica_id() -> str:
    """``host-pid-random``: unique per process, readable in the lease column and the logs."""
    return f"{socket.gethostname()[:60]}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _log_failure(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("an attached write failed: %s", fut.exception())


def _summary_columns() -> list[sa.ColumnElement[Any]]:
    return [agent_session.c[name] for name in codec.SUMMARY_COLUMNS]


def _lower(value: str | None) -> str | None:
    return None if value is None else value.lower()


def _register_lower(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.create_function("tether_lower", 1, _lower, deterministic=True)
