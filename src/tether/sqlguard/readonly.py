"""The second wall: run SQL in a read-only session with a statement timeout, per dialect.

It must hold even if ``guard()`` was bypassed, so it takes any SQL text and relies on the database,
not on parsing:

- SQLite: the file is opened with ``mode=ro`` (the OS-level handle cannot write) and
  ``PRAGMA query_only = ON``; a progress handler interrupts statements past the timeout.
- PostgreSQL: the connection starts with ``default_transaction_read_only=on``,
  ``statement_timeout`` and ``standard_conforming_strings=on``; each statement also runs in its
  own ``SET TRANSACTION READ ONLY`` transaction with ``SET LOCAL statement_timeout``, so a
  session-level ``SET`` cannot carry over.
- MariaDB / MySQL: ``SET SESSION TRANSACTION READ ONLY`` on connect, and each statement in its own
  ``START TRANSACTION READ ONLY`` with ``max_statement_time`` (MariaDB) or ``max_execution_time``
  (MySQL). Production deployments must also connect as a dedicated account granted only
  ``SELECT`` on the whitelisted tables (see ``docs/security.md``): a read-only transaction still
  lets a bypassing statement change session state, and the account is what the server enforces.

Every transaction is rolled back, never committed. Driver errors leave as ``QueryFailed``.

``run_briefly`` (SQLite only) runs a statement on the caller's thread — an event loop's, without a
hop to a worker thread and back — under a budget of a few milliseconds of SQLite's work instead of
the statement timeout: a statement that needs longer is interrupted and the caller runs it again
the ordinary way (``run``, in a worker thread, with the full timeout). Read-only, so running it
twice changes nothing. Other drivers wait on a socket, which must never block an event loop:
on PostgreSQL through psycopg, ``run_async`` reads on the event loop with psycopg's async
connections instead (``postgres.PostgresReads``: the same read-only transaction and timeout, each
statement prepared once per connection).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from tether.errors import ConfigError, ToolError
from tether.sqlguard.policy import GuardedQuery
from tether.sqlguard.postgres import PostgresReads


class Failure(StrEnum):
    READ_ONLY = "read_only_violation"
    TIMEOUT = "timeout"
    DATABASE = "database_error"


class QueryFailed(ToolError):
    """The database refused or aborted the statement; ``code`` is a ``Failure``."""

    def __init__(self, code: Failure, message: str) -> None:
        super().__init__(message, retryable=code is not Failure.READ_ONLY)
        self.code = code


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool


_PG_READ_ONLY = "25006"
_PG_CANCELED = "57014"
_MY_READ_ONLY = {1792, 1290}  # read-only transaction; server running with --read-only
_MY_TIMEOUT = {1969, 3024, 1317}  # MariaDB max_statement_time; MySQL max_execution_time; interrupted
BRIEF_BUDGET_S = 0.002  # how long run_briefly may hold the caller's thread before it gives up
BRIEF_CHECK_OPS = 5000  # SQLite VM instructions between its budget checks (each a Python call)


class ReadOnlyExecutor:
    """Runs one statement at a time against ``url`` (a SQLAlchemy URL) in a read-only session."""

    def __init__(self, url: str, *, timeout_s: float = 5.0, max_rows: int = 10_000) -> None:
        if timeout_s <= 0 or max_rows < 1:
            raise ConfigError("ReadOnlyExecutor needs a positive timeout_s and max_rows")
        self._timeout_s = timeout_s
        self._max_rows = max_rows
        parsed = sa.engine.make_url(url)
        backend = parsed.get_backend_name()
        self._brief: sqlite3.Connection | None = None  # run_briefly's own connection (SQLite)
        self._brief_lock = threading.Lock()
        self._reads: PostgresReads | None = None  # run_async's connections (PostgreSQL, psycopg)
        if backend == "sqlite":
            self.dialect = "sqlite"
            self._engine = _sqlite_engine(parsed)
            self._sqlite_path = str(parsed.database)
        elif backend == "postgresql":
            self.dialect = "postgres"
            ms = int(timeout_s * 1000)
            # standard_conforming_strings: '...' keeps backslashes as text, as the guard's
            # regenerated literals assume, whatever the server's or the role's default.
            options = f"-c default_transaction_read_only=on -c statement_timeout={ms} -c standard_conforming_strings=on"
            self._engine = sa.create_engine(parsed, connect_args={"options": options}, pool_pre_ping=True)
            if parsed.get_driver_name() == "psycopg":
                conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
                self._reads = PostgresReads(conninfo, timeout_s=timeout_s, max_rows=max_rows)
        elif backend in ("mysql", "mariadb"):
            self.dialect = "mysql"
            self._engine = sa.create_engine(parsed, pool_pre_ping=True)
            event.listen(self._engine, "connect", _mysql_on_connect)
        else:
            raise ConfigError(f"ReadOnlyExecutor does not support {backend!r} URLs")

    def run(self, query: GuardedQuery) -> QueryResult:
        """Run a query that passed ``guard()`` for this executor's dialect."""
        if query.dialect != self.dialect:
            raise ConfigError(f"query was guarded for {query.dialect}, executor speaks {self.dialect}")
        return self.execute(query.sql)

    def execute(self, sql: str) -> QueryResult:
        """Run ``sql`` read-only. Takes raw text on purpose: this wall must not depend on the guard.

        The text goes to the driver's cursor untouched (no parameter formatting, so ``%`` is literal).
        """
        driver_error = self._engine.dialect.loaded_dbapi.Error
        try:
            with self._engine.connect() as conn:
                raw: Any = conn.connection.dbapi_connection
                cursor = raw.cursor()
                try:
                    self._begin(cursor, raw)
                    cursor.execute(sql)
                    if cursor.description is None:
                        return QueryResult((), [], False)
                    columns = tuple(str(d[0]) for d in cursor.description)
                    rows = [tuple(r) for r in cursor.fetchmany(self._max_rows + 1)]
                finally:
                    self._end(cursor, raw)
        except (driver_error, sa.exc.DBAPIError) as e:
            raise _translate(e) from e
        truncated = len(rows) > self._max_rows
        return QueryResult(columns, rows[: self._max_rows], truncated)

    @property
    def runs_briefly(self) -> bool:
        """Whether ``run_briefly`` can answer at all (SQLite: a local file, no socket to wait on)."""
        return self.dialect == "sqlite"

    def run_briefly(self, query: GuardedQuery, budget_s: float = BRIEF_BUDGET_S) -> QueryResult | None:
        """``run`` on the calling thread within ``budget_s`` of SQLite's work: the result, or None
        when the statement needs longer (or the brief connection is busy) — then call ``run``."""
        if query.dialect != self.dialect:
            raise ConfigError(f"query was guarded for {query.dialect}, executor speaks {self.dialect}")
        if not self.runs_briefly or not self._brief_lock.acquire(blocking=False):
            return None
        try:
            if self._brief is None:
                self._brief = _sqlite_connect(self._sqlite_path)
            raw = self._brief
            deadline = time.perf_counter() + budget_s
            out_of_time = False

            def over() -> int:
                nonlocal out_of_time
                out_of_time = time.perf_counter() > deadline
                return int(out_of_time)

            cursor = raw.cursor()
            try:
                _query_only(cursor)  # as run() does: this wall holds without the guard
                raw.set_progress_handler(over, BRIEF_CHECK_OPS)
                cursor.execute(query.sql)
                if cursor.description is None:
                    return QueryResult((), [], False)
                columns = tuple(str(d[0]) for d in cursor.description)
                rows = cursor.fetchmany(self._max_rows + 1)
            except sqlite3.Error as e:
                if out_of_time:
                    return None
                raise _translate(e) from e
            finally:
                cursor.close()
                raw.set_progress_handler(None, 0)
                raw.rollback()
        finally:
            self._brief_lock.release()
        truncated = len(rows) > self._max_rows
        return QueryResult(columns, rows[: self._max_rows], truncated)

    @property
    def runs_async(self) -> bool:
        """Whether ``run_async`` reads on the event loop (PostgreSQL through psycopg)."""
        return self._reads is not None

    async def run_async(self, query: GuardedQuery) -> QueryResult:
        """``run`` on the event loop, without a worker thread (``runs_async`` drivers only)."""
        if query.dialect != self.dialect:
            raise ConfigError(f"query was guarded for {query.dialect}, executor speaks {self.dialect}")
        if self._reads is None:
            raise ConfigError(f"{self.dialect} reads cannot run on the event loop here; use run()")
        try:
            columns, rows = await self._reads.fetch(query.sql)
        except self._engine.dialect.loaded_dbapi.Error as e:
            raise _translate(e) from e
        truncated = len(rows) > self._max_rows
        return QueryResult(columns, rows[: self._max_rows], truncated)

    async def aclose(self) -> None:
        """``close``, and the event loop's connections too."""
        if self._reads is not None:
            await self._reads.aclose()
        self.close()

    def close(self) -> None:
        self._engine.dispose()
        with self._brief_lock:
            if self._brief is not None:
                self._brief.close()
                self._brief = None

    def _begin(self, cursor: Any, raw: Any) -> None:
        if self.dialect == "postgres":
            cursor.execute("SET TRANSACTION READ ONLY")
            cursor.execute(f"SET LOCAL statement_timeout = {int(self._timeout_s * 1000)}")
        elif self.dialect == "mysql":
            if getattr(raw, "_tether_mariadb", True):
                cursor.execute(f"SET SESSION max_statement_time = {self._timeout_s:.3f}")
            else:
                cursor.execute(f"SET SESSION max_execution_time = {int(self._timeout_s * 1000)}")
            cursor.execute("SET SESSION TRANSACTION READ ONLY")
            cursor.execute("START TRANSACTION READ ONLY")
        else:
            _query_only(cursor)
            deadline = time.monotonic() + self._timeout_s
            raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)

    def _end(self, cursor: Any, raw: Any) -> None:
        try:
            cursor.close()
        finally:
            if self.dialect == "sqlite":
                raw.set_progress_handler(None, 0)
            raw.rollback()


def _sqlite_engine(url: sa.engine.URL) -> Engine:
    path = url.database
    if not path or path == ":memory:":
        raise ConfigError("the read-only SQLite executor needs a database file")

    return sa.create_engine("sqlite://", creator=lambda: _sqlite_connect(path))


def _query_only(cursor: Any) -> None:
    """``PRAGMA query_only = ON`` unless it already is: setting it makes SQLite prepare every cached
    statement again (~75 µs for a view query), reading it does not. A statement that turned it off
    (the guard bypassed) is undone before the next one runs; the file is opened read-only anyway."""
    if cursor.execute("PRAGMA query_only").fetchone()[0] != 1:
        cursor.execute("PRAGMA query_only = ON")


def _sqlite_connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _mysql_on_connect(dbapi_conn: Any, _record: Any) -> None:
    with dbapi_conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
        dbapi_conn._tether_mariadb = "mariadb" in version.lower()
        cur.execute("SET SESSION TRANSACTION READ ONLY")
    dbapi_conn.commit()


def _translate(e: Exception) -> QueryFailed:
    orig = e.orig if isinstance(e, sa.exc.DBAPIError) else e
    text = str(orig).strip().splitlines()[0] if orig is not None else str(e)
    sqlstate = getattr(orig, "sqlstate", None)
    errno = orig.args[0] if orig is not None and orig.args and isinstance(orig.args[0], int) else None
    lowered = text.lower()
    if sqlstate == _PG_READ_ONLY or errno in _MY_READ_ONLY or "readonly database" in lowered:
        return QueryFailed(Failure.READ_ONLY, f"the database refused a write in a read-only session: {text}")
    if sqlstate == _PG_CANCELED or errno in _MY_TIMEOUT or lowered == "interrupted":
        return QueryFailed(Failure.TIMEOUT, f"the query ran past the statement timeout: {text}")
    return QueryFailed(Failure.DATABASE, f"the database rejected the query: {text}")
