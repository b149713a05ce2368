"""The ERP's engine: one per database URL. SQLite runs in WAL with a busy timeout and takes the
write lock at BEGIN (its transactions read then write); PostgreSQL and MariaDB run at READ
COMMITTED with row locks (``SELECT ... FOR UPDATE``) where a write reads first."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from tether.pack import normalize_url


def create_engine(url: str) -> sa.Engine:
    u = normalize_url(url)
    if u.drivername == "sqlite":
        engine = sa.create_engine(u, connect_args={"timeout": 30.0, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None
            dbapi_conn.execute("PRAGMA busy_timeout = 30000")
            dbapi_conn.execute("PRAGMA journal_mode = WAL")
            dbapi_conn.execute("PRAGMA synchronous = NORMAL")

        @event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return sa.create_engine(u, isolation_level="READ COMMITTED", pool_pre_ping=True, pool_size=10, max_overflow=10)
