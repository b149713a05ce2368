"""Persistence adapters for the core's ``SessionStore`` and ``DslStore`` ports.

``SqlStore`` (SQLite, PostgreSQL, MariaDB/MySQL; group-committing writer, Alembic-owned schema)
and ``MemoryStore`` (same semantics, nothing durable). The core never imports this package;
the app wires a store in.
"""

from tether.store.memory import MemoryStore
from tether.store.migrate import upgrade
from tether.store.sql_store import SqlStore
from tether.store.writer import StoreError

__all__ = ["MemoryStore", "SqlStore", "StoreError", "upgrade"]
