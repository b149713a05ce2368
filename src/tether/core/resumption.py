"""Resuming a session whose wait or whose runner ended: async jobs' stored results go into their
tool messages and the turn goes on (after a callback or a sweep, on the one replica whose claim of
the session succeeds); a ``RUNNING`` session whose lease lapsed (its runner died) is recovered.

A call cut off mid-flight is never run again: it gets an error result saying whether it may have
started, and the model decides what to do next. docs/runtime.md states what recovery does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from tether.core.answering import settle_call
from tether.core.closing import close_open_calls
from tether.core.events import EventType
from tether.core.pipeline import summarise
from tether.core.ports import AsyncJob, Commit, SessionStore
from tether.core.session import AgentSession, Identity, Status
from tether.core.turn import Turn, TurnDeps

NOT_STARTED = "not run: the server stopped before this call started; it was not retried"
INTERRUPTED = (
    "interrupted: the server stopped while this call was in flight; it was not retried and its effect is unknown"
)


class Resumption:
    """The runtime's part that applies async jobs' results and recovers sessions whose runner died
    (mixed into ``Runtime``)."""

    deps: TurnDeps
    store: SessionStore

    if TYPE_CHECKING:  # provided by Runtime and Drivers

        def _turn(self, s: AgentSession, resumed: bool, identity: Identity | None = None) -> Turn: ...

        async def _drive(self, turn: Turn) -> AgentSession: ...

        async def _continue(self, s: AgentSession, identity: Identity | None = None) -> AgentSession: ...

        def _lock(self, session_id: str) -> asyncio.Lock: ...

        async def _held(
            self, session_id: str, lock: asyncio.Lock, body: Coroutine[Any, Any, AgentSession]
        ) -> AgentSession: ...

    async def _claim_and_apply(self, session_id: str) -> AgentSession:
        """Apply the session's stored job results and continue its turn — on one replica only:
        the one whose claim of the session's lease succeeds. A replica running the session or
        holding it applies them itself (``_drive`` looks again before it lets go), and a claim
        that lapses with its replica is taken by the next sweep."""
        s = await self.store.load(session_id)
        if not await self._has_results(s):
            return s
        if not await self.store.claim_session(session_id):
            return s
        s = await self.store.load(session_id)  # as of the claim
        version = s.version
        if s.status is Status.WAITING_ASYNC_CALLBACK and await self._apply_jobs(s):
            return await self._continue(s)
        if s.version == version:  # nothing was committed (another replica was first): let go
            await self.store.release_session(session_id)
        return s

    async def _has_results(self, s: AgentSession) -> bool:
        """Whether a job the waiting session waits for has a stored, unapplied result."""
        if s.status is not Status.WAITING_ASYNC_CALLBACK:
            return False
        return any(j.job_id in s.waiting_job_ids for j in await self.store.unapplied_jobs(s.session_id))

    async def _apply_jobs(self, s: AgentSession) -> bool:
        """Put finished jobs' results into their tool messages; True when none is left pending."""
        jobs = [j for j in await self.store.unapplied_jobs(s.session_id) if j.job_id in s.waiting_job_ids]
        if not jobs:
            return not s.waiting_job_ids
        turn = self._turn(s, resumed=True)
        for job in jobs:
            self._apply_job(s, turn, job)
        s.updated_at = time.time()
        await self.store.commit(Commit(s, turn.pending, applied_job_ids=[j.job_id for j in jobs]))
        for e in turn.pending:
            self.deps.bus.publish(e)
        return not s.waiting_job_ids

    def _apply_job(self, s: AgentSession, turn: Turn, job: AsyncJob) -> None:
        ok = job.status == "SUCCEEDED"
        data = job.result if ok else {"error": job.error or "the job failed", "result": job.result}
        settle_call(s, job.tool_call_id, job.tool_id, "value" if ok else "error", data)
        s.waiting_job_ids.remove(job.job_id)
        base = {"toolCallId": job.tool_call_id, "toolId": job.tool_id, "externalJobId": job.job_id}
        turn.emit(EventType.TOOL_CALLBACK_RECEIVED, {**base, "status": job.status})
        if ok:
            turn.emit(EventType.TOOL_EXECUTION_FINISHED, {**base, "kind": "value", "summary": summarise(data)})
        else:
            turn.emit(EventType.TOOL_EXECUTION_FAILED, {**base, "error": data["error"]})

    async def _recover_locked(self, session_id: str) -> AgentSession:
        lock = self._lock(session_id)
        await lock.acquire()

        async def body() -> AgentSession:
            s = await self.store.load(session_id)
            return await self._recover(s) if s.status is Status.RUNNING else s

        return await self._held(session_id, lock, body())

    async def _recover(self, s: AgentSession, identity: Identity | None = None) -> AgentSession:
        """Give every call cut off mid-flight an error result, then wait or continue."""
        turn = self._turn(s, resumed=True, identity=identity)
        close_open_calls(turn, INTERRUPTED, NOT_STARTED)
        turn.emit(EventType.ERROR, {"message": "the server restarted during this turn; resuming", "recovered": True})
        await turn.commit()
        if s.pending_interaction:
            target = (
                Status.WAITING_CONFIRMATION
                if s.pending_interaction["kind"] == "proposal"
                else Status.WAITING_USER_INPUT
            )
            s.transition(target)
            await turn.commit()
            return s
        if s.waiting_job_ids and not await self._apply_jobs(s):
            s.transition(Status.WAITING_ASYNC_CALLBACK)
            turn.emit(EventType.WAITING_ASYNC_CALLBACK, {"externalJobIds": list(s.waiting_job_ids)})
            await turn.commit()
            return s
        return await self._drive(self._turn(s, resumed=True, identity=identity))
