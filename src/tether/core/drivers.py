"""The runtime's drivers: every turn runs in an asyncio task of its own, the session's driver,
holding the session's in-process lock, so ``cancel`` can stop it wherever it is; background work
(callbacks, sweeps) runs as tracked tasks that ``drain`` and ``shutdown`` wait for.

``_claim`` refuses a second runner at once (409), never a wait. Nothing here decides what a turn
does; a driver the user stopped releases its lock only once the session is recorded as cancelled,
so nothing can start in between.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from tether.core.ports import SessionStore
from tether.core.session import AgentSession
from tether.errors import Conflict

log = logging.getLogger("tether.runtime")


class Drivers:
    """The runtime's locks and tasks (mixed into ``Runtime``, whose ``__init__`` sets them)."""

    store: SessionStore
    _locks: dict[str, asyncio.Lock]
    _tasks: set[asyncio.Task[Any]]
    _drivers: dict[str, asyncio.Task[Any]]  # session id -> the task running its turn
    _stopping: set[str]  # sessions whose driver is being cancelled by the user

    if TYPE_CHECKING:  # provided by Cancellation

        async def _cancelled(self, s: AgentSession) -> AgentSession: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background runtime task failed: %r", task.exception())

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    async def _claim(self, session_id: str) -> asyncio.Lock:
        """Take the session's lock or refuse at once: a second runner gets 409, never a wait."""
        lock = self._lock(session_id)
        if lock.locked():
            raise Conflict("the session is running a turn; wait for it to finish")
        await lock.acquire()  # an unlocked, uncontended Lock is taken without yielding
        return lock

    async def _launch(
        self,
        session_id: str,
        lock: asyncio.Lock,
        body: Coroutine[Any, Any, AgentSession],
        wait: bool = True,
        at_once: AgentSession | None = None,
    ) -> AgentSession:
        """Run ``body`` (holding ``lock``, already taken) as the session's driver, a task of its
        own, and wait for it; with ``wait=False`` return ``at_once`` instead. A client that goes
        away does not stop the turn."""
        task = self.spawn(self._held(session_id, lock, body))
        if not wait and at_once is not None:
            return at_once
        result: AgentSession = await asyncio.shield(task)
        return result

    async def _held(self, session_id: str, lock: asyncio.Lock, body: Coroutine[Any, Any, AgentSession]) -> AgentSession:
        """The driver: runs ``body`` and releases ``lock`` after it. When ``cancel`` stops it,
        the session is recorded as cancelled before the lock is released, so nothing can start
        in between."""
        me = asyncio.current_task()
        assert me is not None
        self._drivers[session_id] = me
        try:
            try:
                return await body
            except asyncio.CancelledError:
                if session_id not in self._stopping:
                    raise  # not the user's stop (a shutdown): the lease lets recovery take over
                me.uncancel()
                return await self._cancelled(await self._settled(session_id))
        finally:
            self._stopping.discard(session_id)
            if self._drivers.get(session_id) is me:
                del self._drivers[session_id]
            lock.release()

    async def _settled(self, session_id: str) -> AgentSession:
        """The session as stored once the cancelled step's writes are in: any commit it left in
        the store's queue lands (or fails) before this no-op lease write returns, so the load
        below sees it."""
        await self.store.renew_lease(session_id, -1)
        return await self.store.load(session_id)
