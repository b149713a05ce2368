"""PostgreSQL reads on the event loop: psycopg's async connections, no worker thread.

The same second wall as ``ReadOnlyExecutor`` on PostgreSQL (it must hold without the guard):
each connection starts with ``default_transaction_read_only=on``, ``statement_timeout`` and
``standard_conforming_strings=on``, and each statement runs inside its own ``BEGIN READ ONLY``
transaction with ``SET LOCAL statement_timeout``, which is rolled back, never committed.

A statement is prepared once per connection (``PREPARE`` inside that read-only transaction, sent
over the extended protocol, so the text is one statement of the kinds PostgreSQL can prepare —
never a ``SET``, a ``COMMIT`` or a second statement behind a ``;`` — and runs read-only), then run
with ``EXECUTE``: the server parses and plans it
once, as a plain client's driver does after a few runs. Prepared statements outlive the rollback
(they are not transactional); at most ``max_prepared`` per connection, the oldest deallocated
first. A connection that saw any error, or a cancellation, is closed, not reused. Once prepared,
a statement is one round trip: ``BEGIN READ ONLY; SET LOCAL …; EXECUTE …; ROLLBACK`` in one
message (every part but the SQL is ours; the SQL itself only ever goes into ``PREPARE``).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Session:
    conn: Any  # psycopg.AsyncConnection
    prepared: OrderedDict[str, str] = field(default_factory=OrderedDict)  # sql -> statement name


class PostgresReads:
    def __init__(
        self, conninfo: str, *, timeout_s: float, max_rows: int, max_idle: int = 4, max_prepared: int = 64
    ) -> None:
        self._conninfo = conninfo
        self._timeout_ms = int(timeout_s * 1000)
        self._max_rows = max_rows
        self._max_idle = max_idle
        self._max_prepared = max_prepared
        self._idle: list[_Session] = []

    async def fetch(self, sql: str) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Columns and at most ``max_rows + 1`` rows of ``sql``, read-only; psycopg's errors leave
        as they are (the executor translates them)."""
        session = await self._checkout()
        done = False
        try:
            cursor = session.conn.cursor()
            begin = f"BEGIN READ ONLY; SET LOCAL statement_timeout = {self._timeout_ms}; "
            name = session.prepared.get(sql)
            if name is None:
                await cursor.execute(begin)
                name = await self._prepare(session, cursor, sql)
                await cursor.execute(f"EXECUTE {name}; ROLLBACK")
            else:
                session.prepared.move_to_end(sql)
                await cursor.execute(f"{begin}EXECUTE {name}; ROLLBACK")
            while cursor.description is None and cursor.nextset():
                pass  # to EXECUTE's result: every result has arrived with the one message
            columns = tuple(str(d.name) for d in cursor.description or ())
            rows = [tuple(r) for r in await cursor.fetchmany(self._max_rows + 1)] if columns else []
            done = session.conn.info.transaction_status == 0  # IDLE: the ROLLBACK ran
            return columns, rows
        finally:
            if done and len(self._idle) < self._max_idle:
                self._idle.append(session)
            else:
                with contextlib.suppress(Exception):
                    await session.conn.close()

    async def _prepare(self, session: _Session, cursor: Any, sql: str) -> str:
        name = "tether_q_" + hashlib.sha256(sql.encode()).hexdigest()[:24]
        # inside the read-only transaction, and over the extended protocol (binary=True forces it):
        # the server parses it as one statement, so nothing can be smuggled behind a ';'
        await cursor.execute(f"PREPARE {name} AS {sql}", binary=True)
        session.prepared[sql] = name
        if len(session.prepared) > self._max_prepared:
            _, oldest = session.prepared.popitem(last=False)
            await cursor.execute(f"DEALLOCATE {oldest}")
        return name

    async def _checkout(self) -> _Session:
        if self._idle:
            return self._idle.pop()
        import psycopg

        options = (
            f"-c default_transaction_read_only=on -c statement_timeout={self._timeout_ms} "
            "-c standard_conforming_strings=on"
        )
        conn = await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, prepare_threshold=None, options=options
        )
        return _Session(conn)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for session in idle:
            with contextlib.suppress(Exception):
                await session.conn.close()
