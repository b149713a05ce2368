"""The hot path: one writer thread per database that group-commits every queued write.

Coroutines hand the writer a ``Write`` (a function of a DBAPI cursor, plus an optional
``after_commit`` to run on the caller's event loop) and wait. The thread drains the queue, runs
every queued write inside ONE transaction on a raw DBAPI connection and commits once (one fsync
for the whole batch; docs/runtime.md); only then are the waiting coroutines woken. A write that fails
(a stale version, a duplicate key) is reported to its own caller only: the transaction is rolled
back and the rest of the batch is redone, so the others still land.

An uncontended write skips the hand-off (``Database.inline``, SQLite only): when nothing is queued
or running and the caller's event loop has nothing else ready to run, ``submit`` runs the write
on the caller's thread, under the same lock as the thread's batches, and returns after the
commit. The hand-off costs each commit two thread wake-ups (~70 µs to start the writer, ~100 µs
to resume the caller on a VM's vCPUs) for a commit of ~250 µs; under load, when other tasks are
ready or writes are queued, writes go to the thread and are batched as before, so the loop is
never held by a commit while it has other work. (An inline write that waits for another
process's lock on the file holds the loop for that wait; replicas share PostgreSQL, not SQLite.)

This module knows nothing about the schema (see writes.py) and must never run SQL other than
under its lock (in the writer thread or an inline write), nor wake a caller before its commit is
durable.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tether.errors import Conflict, RunError, TetherError


class StoreError(RunError):
    """The database failed (connection lost, server error): the write may be retried later."""


@dataclass(slots=True)
class Write:
    """One unit of work: ``run`` executes statements on the batch's cursor (and may raise
    ``Conflict``/``NotFound``); it must be safe to run again after a rollback. ``after_commit``
    runs on the submitting event loop, after the commit, even if the waiter was cancelled."""

    run: Callable[[Any], Any]
    after_commit: Callable[[Any], None] | None = None


@dataclass(slots=True)
class _Pending:
    write: Write
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop


@dataclass(slots=True)
class WriterStats:
    writes: int = 0
    batches: int = 0
    redos: int = 0


class Database:
    """What the writer needs to know about a DBAPI: how to connect, how to begin, its errors."""

    def __init__(
        self,
        connect: Callable[[], Any],
        integrity_error: type[BaseException],
        dbapi_error: type[BaseException],
        begin_sql: str | None = None,
        close: Callable[[Any], None] | None = None,
        inline: bool = False,
    ) -> None:
        self.connect = connect
        self.integrity_error = integrity_error
        self.dbapi_error = dbapi_error
        self.begin_sql = begin_sql  # sqlite3 in autocommit mode needs an explicit BEGIN
        self.close = close or (lambda conn: conn.close())
        self.inline = inline  # a local file: an uncontended write may run on the caller's thread


_STOP = object()


class GroupWriter:
    """A dedicated thread owning one DBAPI connection; ``submit`` is safe from any event loop."""

    def __init__(self, db: Database, name: str = "tether-store-writer", max_batch: int = 512) -> None:
        self._db = db
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._max_batch = max_batch
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._conn: Any = None
        self._cur: Any = None
        self._closed = False
        self._lock = threading.Lock()  # held by whoever runs a batch (the thread or an inline write)
        self._queued = 0  # items handed to the thread and not yet finished: no inline write meanwhile
        self._count = threading.Lock()  # guards _queued
        self.stats = WriterStats()

    def start(self) -> None:
        self._conn = self._db.connect()
        self._cur = self._conn.cursor()
        self._thread.start()

    async def submit(self, write: Write) -> Any:
        if self._closed:
            raise StoreError("the store is closed")
        loop = asyncio.get_running_loop()
        pending = _Pending(write, loop.create_future(), loop)
        if not self._inline([pending]):
            self._put(pending)
        return await pending.future  # done already after an inline write: no suspension

    def enqueue(self, writes: list[Write]) -> list[asyncio.Future[Any]]:
        """Queue ``writes`` as one item: the thread takes them into the same batch (one
        transaction, one commit), in order, each still failing alone. Returns their futures."""
        if self._closed:
            raise StoreError("the store is closed")
        loop = asyncio.get_running_loop()
        pending = [_Pending(w, loop.create_future(), loop) for w in writes]
        if not self._inline(pending):
            self._put(pending)
        return [p.future for p in pending]

    def _inline(self, batch: list[_Pending]) -> bool:
        """Run ``batch`` here and now when that is allowed and nobody is in the way: True when
        it ran (its futures are resolved and its ``after_commit`` calls made)."""
        if not self._db.inline or self._queued or not _idle(batch[0].loop) or not self._lock.acquire(blocking=False):
            return False
        try:
            if self._queued or not self._thread.is_alive():
                return False
            outcomes = self._run_batch(batch)
        finally:
            self._lock.release()
        _resolve(outcomes)
        return True

    def _put(self, item: Any) -> None:
        with self._count:
            self._queued += 1
        self._queue.put(item)

    def close(self) -> None:
        """Finish what is queued, then stop the thread and close the connection (blocking)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:  # an inline write on another thread finishes first
            self._reconnect()  # closes the connection; nothing reconnects after close

    # -- writer thread -------------------------------------------------------------------------

    def _main(self) -> None:
        stop = False
        while not stop:
            batch: list[_Pending] = []
            taken = 0
            item = self._queue.get()
            while True:
                if item is _STOP:
                    stop = True
                else:
                    taken += 1
                    if isinstance(item, list):  # enqueue(): writes that share one commit
                        batch.extend(item)
                    else:
                        batch.append(item)
                if stop or len(batch) >= self._max_batch:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            outcomes = []
            if batch:
                with self._lock:
                    outcomes = self._run_batch(batch)
            with self._count:  # before the wake-up: a woken caller's next write may run inline
                self._queued -= taken
            self._wake(outcomes)

    def _run_batch(self, batch: list[_Pending]) -> list[tuple[_Pending, Any, BaseException | None]]:
        """Run ``batch`` (the caller holds ``_lock``); each write's outcome, for ``_wake``."""
        outcomes: list[tuple[_Pending, Any, BaseException | None]] = []
        pending = batch
        self.stats.batches += 1
        self.stats.writes += len(batch)
        while pending:
            try:
                failed, results = self._attempt(pending)
            except Exception as e:  # connect/begin/commit failed: the batch is lost
                self._reconnect()
                err = StoreError(f"database error: {e}")
                outcomes.extend((p, None, err) for p in pending)
                break
            if failed is None:
                outcomes.extend((p, r, None) for p, r in zip(pending, results, strict=True))
                break
            index, error = failed
            outcomes.append((pending[index], None, error))
            pending = pending[:index] + pending[index + 1 :]
            self.stats.redos += 1
        return outcomes

    def _attempt(self, pending: list[_Pending]) -> tuple[tuple[int, BaseException] | None, list[Any]]:
        """Run ``pending`` in one transaction: (None, results) after a commit, or the index and
        translated error of the first write that failed, after a rollback."""
        if self._conn is None:
            self._conn = self._db.connect()
            self._cur = self._conn.cursor()
        cur = self._cur
        if self._db.begin_sql:
            cur.execute(self._db.begin_sql)
        results: list[Any] = []
        for i, p in enumerate(pending):
            try:
                results.append(p.write.run(cur))
            except Exception as e:  # handed to its caller, translated
                self._rollback()
                return (i, self._translate(e)), []
        self._conn.commit()
        return None, results

    def _translate(self, e: BaseException) -> BaseException:
        if isinstance(e, TetherError):
            return e
        if isinstance(e, self._db.integrity_error):
            return Conflict(f"duplicate or conflicting write: {e}")
        if isinstance(e, self._db.dbapi_error):
            return StoreError(f"database error: {e}")
        return e

    def _rollback(self) -> None:
        try:
            self._conn.rollback()
        except self._db.dbapi_error:
            self._reconnect()

    def _reconnect(self) -> None:
        """Drop a broken connection; the next batch connects afresh."""
        conn, self._conn, self._cur = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):  # the connection is already broken
                self._db.close(conn)

    @staticmethod
    def _wake(outcomes: list[tuple[_Pending, Any, BaseException | None]]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Pending, Any, BaseException | None]]] = {}
        for o in outcomes:
            by_loop.setdefault(o[0].loop, []).append(o)
        for loop, items in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                loop.call_soon_threadsafe(_resolve, items)


def _idle(loop: asyncio.AbstractEventLoop) -> bool:
    """No other task is ready to run on ``loop``: callbacks ready alongside the caller may be
    asyncio's plumbing (a waiter's completion), but a task among them is work that holding the
    loop would delay, and that may be about to write (the thread batches it). Reads asyncio's
    ready queue (a private attribute); a loop without one is taken as busy."""
    ready = getattr(loop, "_ready", None)
    if ready is None or len(ready) > _READY_LOOKED_AT:
        return False
    return not any(isinstance(getattr(getattr(h, "_callback", None), "__self__", None), asyncio.Task) for h in ready)


_READY_LOOKED_AT = 4  # more callbacks ready than this: the loop is busy


def _resolve(items: list[tuple[_Pending, Any, BaseException | None]]) -> None:
    for p, result, error in items:
        if error is None and p.write.after_commit is not None:
            try:
                p.write.after_commit(result)
            except Exception as e:  # reported to its own caller only
                error = e
        if p.future.cancelled():
            continue
        if error is None:
            p.future.set_result(result)
        else:
            p.future.set_exception(error)
