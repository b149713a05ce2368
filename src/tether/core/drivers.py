"""The runtime's drivers: every turn runs in an asyncio task of its own, the session's driver,
holding the session's in-process lock, so ``cancel`` can stop it wherever it is; background work
(callbacks, sweeps) runs as tracked tasks that ``drain`` and ``shutdown`` wait for.

``claim`` refuses a second runner at once (409), never a wait. Nothing here decides what a turn
does; a driver the user stopped releases its lock only once the session is recorded as cancelled,
so nothing can start in between.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from tether.core.ports import SessionStore
from tether.core.session import AgentSession
from tether.errors import Conflict

log = logging.getLogger("tether.runtime")


class Drivers:
    """The runtime's locks and tasks. ``on_stopped`` records a session whose driver the user
    stopped (as ``cancel`` does) and is awaited before its lock is released."""

    def __init__(self, store: SessionStore, on_stopped: Callable[[AgentSession], Awaitable[AgentSession]]) -> None:
        self.store = store
        self.on_stopped = on_stopped
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._drivers: dict[str, asyncio.Task[Any]] = {}  # session id -> the task running its turn
        self._stopping: set[str] = set()  # sessions whose driver is being cancelled by the user

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

    def lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    async def claim(self, session_id: str) -> asyncio.Lock:
        """Take the session's lock or refuse at once: a second runner gets 409, never a wait."""
        lock = self.lock(session_id)
        if lock.locked():
            raise Conflict("the session is running a turn; wait for it to finish")
        await lock.acquire()  # an unlocked, uncontended Lock is taken without yielding
        return lock

    async def launch(
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
        task = self.spawn(self.held(session_id, lock, body))
        if not wait and at_once is not None:
            return at_once
        result: AgentSession = await asyncio.shield(task)
        return result

    async def held(self, session_id: str, lock: asyncio.Lock, body: Coroutine[Any, Any, AgentSession]) -> AgentSession:
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
                return await self.on_stopped(await self._settled(session_id))
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

    async def stop(self, session_id: str, reason: str) -> tuple[bool, AgentSession | None]:
        """Cancel the session's driver, wherever it is, and wait for it to end. -> whether one was
        stopped here, and the session it returned when that already recorded the stop. ``Conflict``
        when the session stays claimed without a driver for ten seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10.0
        while True:
            driver = self._drivers.get(session_id)
            if driver is not None and not driver.done():
                self._stopping.add(session_id)
                driver.cancel(reason)
                await asyncio.wait({driver})
                if not driver.cancelled() and driver.exception() is None:
                    result = driver.result()  # a background driver (callbacks, recovery) may return None
                    if isinstance(result, AgentSession):
                        return True, result
                return True, None
            if not self.lock(session_id).locked():
                return False, None
            if loop.time() > deadline:  # the lock holder never became a driver
                raise Conflict("the session is busy; try again")
            await asyncio.sleep(0.02)  # between claiming the session and starting its turn

    async def shutdown(self, grace_s: float) -> int:
        """Give the tasks in flight ``grace_s`` seconds, then cancel the rest. -> how many were."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace_s)
        left = [t for t in self._tasks if not t.done()]
        for task in left:
            task.cancel()
        if left:
            await asyncio.gather(*left, return_exceptions=True)
        return len(left)
