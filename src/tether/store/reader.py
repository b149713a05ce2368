"""Hot reads on raw DBAPI connections (a session's load), without SQLAlchemy's per-statement
work (building, caching and compiling a ``select`` costs more than the read).

- SQLite: the read runs on the calling thread, on that thread's own connection, in one deferred
  transaction (its first SELECT fixes the snapshot). A session's rows are read in tens of
  microseconds; a hop to a worker thread costs more than that, and WAL readers never wait for the
  writer.
- PostgreSQL, MariaDB: the read runs in a worker thread on a pooled connection of the store's read
  engine (REPEATABLE READ, one transaction each, ended by the pool's rollback on return), as
  every other read does.

Statements are plain SQL in qmark style, rendered per paramstyle like ``writes.py``. Driver errors
leave as ``StoreError``. This module never writes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa

from tether.store.writer import StoreError

T = TypeVar("T")
Read = Callable[[Any], T]  # a function of a DBAPI cursor


class Reader:
    """Runs ``Read`` functions in a snapshot transaction of their own."""

    def __init__(self, url: sa.URL, engine: sa.Engine) -> None:
        self._engine = engine
        self._path = str(Path(str(url.database)).expanduser()) if url.drivername == "sqlite" else None
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self.mark = "?" if self._path is not None else "%s"

    def sql(self, qmark: str) -> str:
        """``qmark`` rendered for this database's DBAPI."""
        return qmark if self.mark == "?" else qmark.replace("?", self.mark)

    async def run(self, read: Read[T]) -> T:
        if self._path is not None:
            return self._run_sqlite(read)
        return await asyncio.to_thread(self._run_pooled, read)

    def close(self) -> None:
        """Close every SQLite connection this reader opened (on any thread)."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()

    # -- SQLite: the caller's thread ---------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            assert self._path is not None
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=10.0)
            conn.execute("PRAGMA busy_timeout = 10000")
            self._opened.append(conn)
        self._local.conn = conn
        return conn

    def _run_sqlite(self, read: Read[T]) -> T:
        try:
            conn = self._connection()
            cur = conn.cursor()
            cur.execute("BEGIN")
            try:
                return read(cur)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except sqlite3.Error as e:
            self._drop()
            raise StoreError(f"database error: {e}") from e

    def _drop(self) -> None:
        """Forget this thread's connection after an error: the next read opens a fresh one."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._lock:
                if conn in self._opened:
                    self._opened.remove(conn)
            conn.close()

    # -- PostgreSQL, MariaDB: a worker thread, a pooled connection ---------------------------------

    def _run_pooled(self, read: Read[T]) -> T:
        dbapi_error = self._engine.dialect.loaded_dbapi.Error
        try:
            conn = self._engine.raw_connection()
        except sa.exc.DBAPIError as e:
            raise StoreError(f"database error: {e.orig}") from e
        try:
            cur = conn.cursor()
            try:
                return read(cur)
            finally:
                cur.close()
        except dbapi_error as e:
            conn.invalidate()
            raise StoreError(f"database error: {e}") from e
        finally:
            conn.close()
