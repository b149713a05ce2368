"""The abuse counters in tether's own database, for replicas that share no Redis: ``limits``' async
storage API (fixed windows and moving windows) on PostgreSQL or MariaDB.

Two tables (migration 0009): ``abuse_counter`` holds a fixed window (a count and when it
expires, as Redis keeps a counter with a TTL); ``abuse_window`` holds a moving window (the times
of its newest ``limit`` entries, newest first, as Redis keeps them in a list). A row's ``name`` is
a digest of the namespace (``TETHER_LIMITS_NAMESPACE``) and the key; ``rate_key`` keeps the key
readable.

Every call is one short READ COMMITTED transaction on a pooled engine, in a worker thread (never
on the event loop). An increment is one UPSERT (PostgreSQL ``ON CONFLICT … DO UPDATE``, MariaDB
``ON DUPLICATE KEY UPDATE``); an acquire locks the window's row (``SELECT … FOR UPDATE``, the
row inserted first if missing), so acquires of one key from every replica run one after another
and none is lost. A deadlock is retried. Expired rows read as absent; they are deleted at most
once a minute per process, in a transaction of their own. Times are the replicas' clocks, as
with ``limits``' Redis storage.

SQLite is not served here: the embedded default is one process and counts in memory
(``tether.abuse.storage``). This module must never touch another table.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa
from limits.aio.storage import MovingWindowSupport, Storage

from tether.errors import ConfigError

T = TypeVar("T")
CLEAN_EVERY_S = 60.0
TRIES = 3  # a transaction a deadlock chose as its victim is run again

_COUNTER_COLUMNS = "(name, namespace, rate_key, hits, expire_at) VALUES (:name, :ns, :key, :amount, :expire_at)"
_UPSERT = {
    "postgresql": f"INSERT INTO abuse_counter {_COUNTER_COLUMNS} ON CONFLICT (name) DO UPDATE SET"
    " hits = CASE WHEN abuse_counter.expire_at <= :now THEN EXCLUDED.hits ELSE abuse_counter.hits + EXCLUDED.hits END,"
    " expire_at = CASE WHEN abuse_counter.expire_at <= :now THEN EXCLUDED.expire_at ELSE abuse_counter.expire_at END",
    # MariaDB assigns left to right: ``hits`` is computed while ``expire_at`` is still the old one
    "mysql": f"INSERT INTO abuse_counter {_COUNTER_COLUMNS} ON DUPLICATE KEY UPDATE"
    " hits = IF(expire_at <= :now, VALUES(hits), hits + VALUES(hits)),"
    " expire_at = IF(expire_at <= :now, VALUES(expire_at), expire_at)",
}
_WINDOW_ROW = "(name, namespace, rate_key, entries, expire_at) VALUES (:name, :ns, :key, '', 0)"
_ENSURE_WINDOW = {
    "postgresql": f"INSERT INTO abuse_window {_WINDOW_ROW} ON CONFLICT (name) DO NOTHING",
    "mysql": f"INSERT INTO abuse_window {_WINDOW_ROW} ON DUPLICATE KEY UPDATE name = name",
}
_SQL = {
    "counter": "SELECT hits, expire_at FROM abuse_counter WHERE name = :name AND expire_at > :now",
    "lock_window": "SELECT entries, expire_at FROM abuse_window WHERE name = :name FOR UPDATE",
    "window": "SELECT entries FROM abuse_window WHERE name = :name AND expire_at > :now",
    "set_window": "UPDATE abuse_window SET entries = :entries, expire_at = :expire_at WHERE name = :name",
    "clear_counter": "DELETE FROM abuse_counter WHERE name = :name",
    "clear_window": "DELETE FROM abuse_window WHERE name = :name",
    "reset_counters": "DELETE FROM abuse_counter WHERE namespace = :ns",
    "reset_windows": "DELETE FROM abuse_window WHERE namespace = :ns",
    "clean_counters": "DELETE FROM abuse_counter WHERE expire_at <= :now",
    "clean_windows": "DELETE FROM abuse_window WHERE expire_at <= :now",
}


class SqlStorage(Storage, MovingWindowSupport):
    """``limits``' storage on a PostgreSQL or MariaDB database (a normalised URL, see
    ``tether.store.database.normalize_url``); its own small pool, closed by ``close``."""

    STORAGE_SCHEME = None  # built by tether, never from a ``limits`` storage URI

    def __init__(self, url: sa.URL, namespace: str) -> None:
        super().__init__(wrap_exceptions=True)
        self.engine = sa.create_engine(
            url,
            isolation_level="READ COMMITTED",
            pool_pre_ping=True,
            pool_size=4,
            max_overflow=8,
            connect_args={"connect_timeout": 2},  # a database that does not answer: the limits skip it soon
        )
        dialect = "mysql" if self.engine.dialect.name in ("mysql", "mariadb") else self.engine.dialect.name
        if dialect not in _UPSERT:
            raise ConfigError(f"the abuse counters need PostgreSQL or MariaDB, not {self.engine.dialect.name}")
        self.sql = {name: sa.text(s) for name, s in _SQL.items()}
        self.upsert = sa.text(_UPSERT[dialect])
        self.ensure_window = sa.text(_ENSURE_WINDOW[dialect])
        self.namespace = namespace
        self._cleaned_at = 0.0

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return sa.exc.SQLAlchemyError

    def close(self) -> None:
        self.engine.dispose()

    def _row(self, key: str) -> dict[str, Any]:
        digest = hashlib.sha256(f"{self.namespace}\0{key}".encode()).hexdigest()
        return {"name": digest, "ns": self.namespace[:128], "key": key}

    # ---- fixed windows ------------------------------------------------------------------------------

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        """Add ``amount`` (negative: take away) and return the count; a counter that is missing or
        expired starts again at ``amount`` and expires ``expiry`` seconds from now."""
        row = self._row(key)

        def work(conn: sa.Connection) -> int:
            now = time.time()
            conn.execute(self.upsert, {**row, "amount": amount, "expire_at": now + expiry, "now": now})
            return int(conn.execute(self.sql["counter"], {"name": row["name"], "now": now}).one()[0])

        return await self._run(work, writes=True)

    async def get(self, key: str) -> int:
        found = await self._counter(key)
        return int(found[0]) if found else 0

    async def get_expiry(self, key: str) -> float:
        found = await self._counter(key)
        return float(found[1]) if found else time.time()

    async def _counter(self, key: str) -> tuple[Any, ...] | None:
        name = self._row(key)["name"]

        def work(conn: sa.Connection) -> tuple[Any, ...] | None:
            found = conn.execute(self.sql["counter"], {"name": name, "now": time.time()}).first()
            return tuple(found) if found else None

        return await self._run(work)

    # ---- moving windows -----------------------------------------------------------------------------

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        """Add ``amount`` entries unless the window of ``expiry`` seconds already holds more than
        ``limit - amount``; the window's row is locked meanwhile."""
        if amount > limit:
            return False
        row = self._row(key)

        def work(conn: sa.Connection) -> bool:
            found = conn.execute(self.sql["lock_window"], {"name": row["name"]}).first()
            if found is None:
                conn.execute(self.ensure_window, row)
                found = conn.execute(self.sql["lock_window"], {"name": row["name"]}).one()
            now = time.time()
            entries = _entries(found[0]) if found[1] > now else []
            if len(entries) > limit - amount and entries[limit - amount] >= now - expiry:
                return False
            kept = ([now] * amount + entries)[:limit]
            conn.execute(
                self.sql["set_window"],
                {"name": row["name"], "entries": ",".join(f"{t:.6f}" for t in kept), "expire_at": now + expiry},
            )
            return True

        return await self._run(work, writes=True)

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        """(the oldest entry still in the window, the entries in it), or (now, 0)."""
        name = self._row(key)["name"]

        def work(conn: sa.Connection) -> str:
            found = conn.execute(self.sql["window"], {"name": name, "now": time.time()}).first()
            return str(found[0]) if found else ""

        entries = _entries(await self._run(work))
        now = time.time()
        count = 0
        for t in entries[:limit]:
            if t < now - expiry:
                break
            count += 1
        return (entries[count - 1], count) if count else (now, 0)

    # ---- both -------------------------------------------------------------------------------------

    async def clear(self, key: str) -> None:
        name = self._row(key)["name"]

        def work(conn: sa.Connection) -> None:
            conn.execute(self.sql["clear_counter"], {"name": name})
            conn.execute(self.sql["clear_window"], {"name": name})

        await self._run(work)

    async def reset(self) -> int | None:
        """Forget every counter of this namespace: the rows deleted."""

        def work(conn: sa.Connection) -> int:
            counters = conn.execute(self.sql["reset_counters"], {"ns": self.namespace[:128]}).rowcount
            return int(counters) + int(conn.execute(self.sql["reset_windows"], {"ns": self.namespace[:128]}).rowcount)

        return await self._run(work)

    async def check(self) -> bool:
        try:
            await self._run(lambda conn: conn.execute(sa.text("SELECT 1")).scalar_one())
        except sa.exc.SQLAlchemyError:
            return False
        return True

    async def _run(self, work: Callable[[sa.Connection], T], writes: bool = False) -> T:
        return await asyncio.to_thread(self._transaction, work, writes)

    def _transaction(self, work: Callable[[sa.Connection], T], writes: bool) -> T:
        for attempt in range(TRIES):
            try:
                with self.engine.begin() as conn:
                    result = work(conn)
                break
            except sa.exc.DBAPIError as exc:
                if attempt == TRIES - 1 or not _deadlock(exc):
                    raise
        if writes and time.monotonic() - self._cleaned_at >= CLEAN_EVERY_S:
            self._cleaned_at = time.monotonic()
            self._clean()
        return result

    def _clean(self) -> None:
        """Delete the expired rows (every replica may: a row another deletes is simply gone)."""
        try:
            with self.engine.begin() as conn:
                conn.execute(self.sql["clean_counters"], {"now": time.time()})
                conn.execute(self.sql["clean_windows"], {"now": time.time()})
        except sa.exc.DBAPIError:
            self._cleaned_at = 0.0  # expired rows still read as absent; the next write tries again


def _entries(text: str) -> list[float]:
    return [float(t) for t in text.split(",") if t]


def _deadlock(exc: sa.exc.DBAPIError) -> bool:
    """A deadlock or serialisation failure: the transaction was rolled back and may run again."""
    if getattr(exc.orig, "sqlstate", None) in ("40001", "40P01"):  # psycopg
        return True
    args: tuple[Any, ...] = getattr(exc.orig, "args", ())
    return bool(args) and args[0] == 1213  # PyMySQL: ER_LOCK_DEADLOCK
