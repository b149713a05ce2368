"""Running a turn to its end: the turn's span and lease heartbeat around the loop, then the job
results that arrived while it ran; and the turns of one session, each made here so that a
successful one compiles its DSL.

``TurnRunner`` is what answering, resumption and the runtime's entry points share: ``turn`` makes a
turn of a session, ``drive`` runs it, ``proceed`` moves a waiting session back to running and
drives it, ``claim_and_apply`` applies stored job results on the one replica that claims them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tether.core import resumption
from tether.core.dsl import compile_dsl
from tether.core.loop import run_turn
from tether.core.ports import CommitGuard, DslStore, OpQueue
from tether.core.session import AgentSession, Identity, Status, new_id
from tether.core.telemetry import TURN
from tether.core.turn import Turn, TurnDeps

log = logging.getLogger("tether.runtime")


class TurnRunner:
    def __init__(self, deps: TurnDeps, dsl_store: DslStore, ops: OpQueue | None = None) -> None:
        self.deps = deps
        self.store = deps.store
        self.dsl_store = dsl_store
        self.ops = ops

    def turn(
        self, s: AgentSession, resumed: bool, identity: Identity | None = None, guard: CommitGuard | None = None
    ) -> Turn:
        """A turn of ``s`` (the current one when ``resumed``); ``guard`` (``Commit.guard``) rides its
        first commit."""
        turn_id = s.current_turn_id if resumed and s.current_turn_id else new_id("turn")
        return Turn(s, self.deps, turn_id, resumed, identity, guard=guard, on_final=self._compile, ops=self.ops)

    async def drive(self, turn: Turn) -> AgentSession:
        s = turn.session
        stop_heartbeat = self._heartbeat(s)
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "tether",
            "tether.session.id": s.session_id,
            "tether.turn.id": turn.turn_id,
            "tether.turn.resumed": turn.resumed,
            "enduser.id": s.owner.user_id,
            "tether.tenant": s.owner.tenant,
        }
        try:
            with self.deps.telemetry.span(TURN, attributes) as span:
                await run_turn(turn)
                span.set("tether.turn.outcome", s.status.value)
                if s.status is Status.FAILED:
                    span.fail(s.last_error or "the turn failed")
        finally:
            stop_heartbeat()
        if await resumption.has_results(self.store, s):  # callbacks that arrived while the turn was finishing
            return await self.claim_and_apply(s.session_id)
        return s

    async def proceed(self, s: AgentSession, identity: Identity | None = None) -> AgentSession:
        """Continue the session's turn: it runs again."""
        s.transition(Status.RUNNING)
        return await self.drive(self.turn(s, resumed=True, identity=identity))

    async def claim_and_apply(self, session_id: str) -> AgentSession:
        """Apply the session's stored job results and continue its turn — on one replica only:
        the one whose claim of the session's lease succeeds. A replica running the session or
        holding it applies them itself (``drive`` looks again before it lets go), and a claim
        that lapses with its replica is taken by the next sweep."""
        s = await self.store.load(session_id)
        if not await resumption.has_results(self.store, s):
            return s
        if not await self.store.claim_session(session_id):
            return s
        s = await self.store.load(session_id)  # as of the claim
        version = s.version
        if s.status is Status.WAITING_ASYNC_CALLBACK and await resumption.apply_jobs(self.turn(s, resumed=True)):
            return await self.proceed(s)
        if s.version == version:  # nothing was committed (another replica was first): let go
            await self.store.release_session(session_id)
        return s

    async def recover(self, s: AgentSession, identity: Identity | None = None) -> AgentSession:
        """Give every call cut off mid-flight an error result, then wait or continue."""
        if await resumption.recover(self.turn(s, resumed=True, identity=identity)):
            return await self.drive(self.turn(s, resumed=True, identity=identity))
        return s

    def _heartbeat(self, s: AgentSession) -> Callable[[], None]:
        """Renew the running session's lease every third of it until the returned function is
        called. A timer, not a task: most turns end before the first beat. One renewal at a time;
        a failed one is logged and the next beat tries again."""
        loop = asyncio.get_running_loop()
        interval = max(self.store.lease_seconds / 3, 0.2)
        renewal: asyncio.Task[bool] | None = None
        timer: asyncio.TimerHandle

        def renewed(task: asyncio.Task[bool]) -> None:
            if not task.cancelled() and task.exception() is not None:
                log.warning("renewing the lease of session %s failed: %s", s.session_id, task.exception())

        def beat() -> None:
            nonlocal renewal, timer
            if s.version and (renewal is None or renewal.done()):  # version 0: not stored yet
                renewal = loop.create_task(self.store.renew_lease(s.session_id, s.version))
                renewal.add_done_callback(renewed)
            timer = loop.call_later(interval, beat)

        timer = loop.call_later(interval, beat)

        def stop() -> None:
            timer.cancel()
            if renewal is not None:
                renewal.cancel()

        return stop

    async def _compile(self, s: AgentSession, turn_id: str) -> str | None:
        dsl = compile_dsl(s, turn_id, self.deps.pipeline.registry, self.deps.clock.now())
        if dsl is None:
            return None
        if self.dsl_store is self.store:  # saved in the transaction of the final commit that announces it
            self.dsl_store.stage_dsl(s.session_id, dsl)
        else:
            await self.dsl_store.save_dsl(dsl)
        return dsl.dsl_id
