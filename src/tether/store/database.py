"""Connections for one database URL: the normalised URL, the read engine and the writer's DBAPI.

Accepted URLs: ``sqlite:///path`` (parent folders are created), ``postgresql+psycopg://`` (plain
``postgresql://`` / ``postgres://`` map to psycopg 3), ``mysql+pymysql://`` (plain ``mysql://`` /
``mariadb://`` map to PyMySQL, utf8mb4). The async drivers' URLs that SQLAlchemy's asyncio docs show
(``sqlite+aiosqlite``, ``postgresql+asyncpg``, ``mysql+aiomysql``, ``mysql+asyncmy``) map to the
same shipped drivers, with one log line saying so. Reads get snapshot isolation (a load sees one commit,
never half of one); the writer gets its own connection. This module must never run store
queries itself.
"""

from __future__ import annotations

import logging
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from tether.errors import ConfigError
from tether.store.writer import Database

_DRIVERS = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
    "mariadb+pymysql": "mysql+pymysql",
    "sqlite+pysqlite": "sqlite",
}
# The async drivers users copy from SQLAlchemy's asyncio docs: tether's store is synchronous (a
# writer thread, group commit), so they run on the sync driver of the same database.
_ASYNC_DRIVERS = {
    "sqlite+aiosqlite": "sqlite",
    "postgresql+asyncpg": "postgresql+psycopg",
    "mysql+aiomysql": "mysql+pymysql",
    "mysql+asyncmy": "mysql+pymysql",
}
_SUPPORTED = ("sqlite", "postgresql+psycopg", "mysql+pymysql")
log = logging.getLogger("tether.store")


@cache
def _say_mapped(given: str, used: str) -> None:
    """One log line per driver mapping and process, however many engines use the URL."""
    log.info("database URL driver %s is served by %s (tether ships the synchronous drivers)", given, used)


def normalize_url(url: str | sa.URL) -> sa.URL:
    """Map plain URLs to the drivers tether ships with; refuse anything else with a clear error."""
    u = sa.make_url(url)
    if u.drivername in _ASYNC_DRIVERS:
        given = u.drivername
        u = u.set(drivername=_ASYNC_DRIVERS[given])
        if given == "postgresql+asyncpg" and "ssl" in u.query and "sslmode" not in u.query:
            u = u.difference_update_query(["ssl"]).update_query_dict({"sslmode": str(u.query["ssl"])})
        _say_mapped(given, u.drivername)
    u = u.set(drivername=_DRIVERS.get(u.drivername, u.drivername))
    if u.drivername not in _SUPPORTED:
        raise ConfigError(f"unsupported database URL scheme {u.drivername!r}; use one of {_SUPPORTED}")
    if u.drivername == "sqlite":
        if not u.database or u.database == ":memory:" or u.database.startswith("file:"):
            raise ConfigError("SQLite needs a file path (sqlite:///path/to/tether.db), not memory")
        Path(u.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    if u.drivername == "mysql+pymysql" and "charset" not in u.query:
        u = u.update_query_dict({"charset": "utf8mb4"})
    return u


def _sqlite_pragmas(conn: sqlite3.Connection, synchronous: str) -> None:
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")


def create_read_engine(url: sa.URL, *, immediate: bool = False) -> sa.Engine:
    """A sync engine for reads and migrations, every transaction a consistent snapshot.

    ``immediate=True`` is for engines whose transactions read then write (outside the group
    writer): on SQLite they take the write lock at BEGIN, so a concurrent writer makes them wait
    (busy timeout) instead of failing when their read snapshot went stale."""
    if url.drivername == "sqlite":
        engine = sa.create_engine(url, connect_args={"timeout": 10.0})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
            _sqlite_pragmas(dbapi_conn, "FULL")

        @event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        return engine
    return sa.create_engine(url, isolation_level="REPEATABLE READ", pool_pre_ping=True)


def writer_database(url: sa.URL) -> tuple[Database, str, sa.Engine | None]:
    """The writer's ``Database``, its DBAPI paramstyle, and the engine to dispose (if any)."""
    if url.drivername == "sqlite":
        path = str(Path(str(url.database)).expanduser())

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
            _sqlite_pragmas(conn, "FULL")
            return conn

        db = Database(connect, sqlite3.IntegrityError, sqlite3.Error, begin_sql="BEGIN IMMEDIATE", inline=True)
        return db, "qmark", None
    engine = sa.create_engine(url, isolation_level="READ COMMITTED", pool_size=1, pool_pre_ping=True)
    dbapi = engine.dialect.loaded_dbapi
    db = Database(engine.raw_connection, dbapi.IntegrityError, dbapi.Error)
    return db, dbapi.paramstyle, engine
