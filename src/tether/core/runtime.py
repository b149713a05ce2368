"""The runtime: starts, continues and resumes sessions; takes callbacks and answers; recovers
sessions whose runner died. The API, the CLI and the Python API all go through here.

Concurrency: one turn per session at a time. In-process a per-session lock refuses a second
runner at once (409); across processes the store's version check does.

Every turn runs in an asyncio task of its own, the session's *driver* (an API call that waits for
the turn awaits that task), so ``cancel`` can stop it wherever it is — in the model call, in a
tool, between the two — without touching the request that started it.

Here: the entry points and driving a turn. ``Runtime`` takes the rest from its parts: answering a
waiting session (answering.py), job results and recovery (resumption.py), cancelling a turn
(cancellation.py), and the locks and tasks that run turns (drivers.py).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from tether.core.answering import Answering, close_lapsed_login
from tether.core.cancellation import CANCELLED_REASON, Cancellation
from tether.core.drivers import Drivers
from tether.core.dsl import compile_dsl
from tether.core.events import EventType
from tether.core.loop import Decision, run_turn
from tether.core.messages import ModelReply, ToolCall
from tether.core.ports import Commit, DslStore, SessionStore
from tether.core.resumption import Resumption
from tether.core.session import AgentSession, Identity, Owner, Status, new_id, split_caller
from tether.core.skills import SkillRouter
from tether.core.telemetry import TURN
from tether.core.turn import Turn, TurnDeps, hash_token
from tether.errors import Conflict, GuardRefused, InvalidInput, NotFound, Unauthorized

log = logging.getLogger("tether.runtime")
MAX_MESSAGE_CHARS = 32_000
FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)


def check_message(message: str) -> str:
    if not isinstance(message, str) or not message.strip():
        raise InvalidInput("message must not be empty", field="message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise InvalidInput(f"message is {len(message)} characters; the limit is {MAX_MESSAGE_CHARS}", field="message")
    if "\x00" in message:  # no database text column takes it (PostgreSQL refuses NUL)
        raise InvalidInput("message must not contain NUL (U+0000) characters", field="message")
    return message


class Runtime(Answering, Resumption, Cancellation, Drivers):
    def __init__(self, deps: TurnDeps, router: SkillRouter, dsl_store: DslStore) -> None:
        self.deps = deps
        self.store: SessionStore = deps.store
        self.router = router
        self.dsl_store = dsl_store
        self.deps.on_final = self._compile
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._drivers: dict[str, asyncio.Task[Any]] = {}  # session id -> the task running its turn
        self._stopping: set[str] = set()  # sessions whose driver is being cancelled by the user

    # ---- entry points ---------------------------------------------------------------------------

    async def start_session(
        self,
        who: Owner | Identity,
        message: str,
        global_context: dict[str, Any],
        wait: bool = True,
        session_id: str | None = None,
    ) -> AgentSession:
        """Create a session and run its first turn; with ``wait=False`` the turn runs in the
        background and the RUNNING session returns at once (follow it on the event stream).
        ``who`` is the owner, or the caller's identity when tools need its grants or credential."""
        check_message(message)
        owner, identity = split_caller(who)
        s = AgentSession.new(owner, message, global_context)
        if session_id is not None:  # a client-chosen id (an AG-UI thread); the store refuses a taken one
            s.session_id = session_id
        if identity is not None:
            s.global_context["_provider"] = identity.provider  # which packs' prompt text applies
        selection = await self.router.select(message, s.global_context, identity.provider if identity else None)
        s.selected_skill_ids = selection.skill_ids
        s.transcript.append({"role": "system", "content": ""})
        s.transcript.append({"role": "user", "content": message})
        turn = self._turn(s, resumed=False, identity=identity)
        turn.emit(EventType.SESSION_STARTED, {"query": message, "title": s.title})
        turn.emit(EventType.SKILLS_SELECTED, selection.to_event())
        turn.open()  # TURN_STARTED lands with the session's creation: one commit fewer
        await self.store.create(Commit(s, turn.pending))
        for e in turn.pending:
            self.deps.bus.publish(e)
        turn.pending = []
        lock = await self._claim(s.session_id)  # a new id: never contended
        return await self._launch(s.session_id, lock, self._drive(turn), wait, at_once=s)

    async def start_tool_session(
        self, who: Identity, tool_name: str, arguments: dict[str, Any], title: str, via: str
    ) -> AgentSession:
        """A session begun by one direct tool call from another protocol (``via``: "mcp"): the call
        is the turn's only step, through the same pipeline, identity and grants as a model's call,
        and no model runs. A question, form or proposal leaves the session waiting for its person
        exactly as a turn's would (a proposal's op belongs to this session; a person confirms it
        through ``/api/ops``); any other result ends it — an error result as FAILED."""
        check_message(title)
        s = AgentSession.new(who.owner, title, {"_provider": who.provider, "_via": via})
        s.transcript.append({"role": "system", "content": ""})
        s.transcript.append({"role": "user", "content": title})
        turn = self._turn(s, resumed=False, identity=who)
        turn.emit(EventType.SESSION_STARTED, {"query": title, "title": s.title, "via": via})
        turn.open()
        turn.allowed = frozenset({tool_name})
        async with self._lock(s.session_id):
            await self.store.create(Commit(s, turn.pending))
            for e in turn.pending:
                self.deps.bus.publish(e)
            turn.pending = []
            call = ToolCall(new_id("call"), tool_name, json.dumps(arguments, ensure_ascii=False))
            decision = await turn.act(ModelReply(tool_calls=[call], meta={"via": via}))
            if decision in (Decision.WAIT_USER, Decision.WAIT_CONFIRMATION, Decision.WAIT_CALLBACK):
                await turn.finish(decision)
                return s
            step = s.step(call.id)
            if step is not None and step.status == "FAILED":
                error = step.result.get("error") if isinstance(step.result, dict) else None
                await turn.fail(str(error or f"{tool_name} failed"))
                return s
            s.append({"role": "assistant", "content": f"{tool_name} finished"})
            await turn.finish(Decision.FINAL)
            return s

    async def post_message(
        self, session_id: str, who: Owner | Identity, message: str, wait: bool = True
    ) -> AgentSession:
        """Continue a session with a user message (answering a pending question if there is one);
        with ``wait=False`` the turn runs in the background."""
        check_message(message)
        owner, identity = split_caller(who)
        lock = await self._claim(session_id)
        try:
            s = await self.store.load(session_id, owner)
            if s.status not in (*FINISHED, Status.WAITING_USER_INPUT) or (
                s.status is Status.WAITING_USER_INPUT and not s.pending_interaction
            ):
                raise Conflict(_busy(s))
        except BaseException:
            lock.release()
            raise
        return await self._launch(session_id, lock, self._post(s, message, identity), wait, at_once=s)

    async def _post(self, s: AgentSession, message: str, identity: Identity | None) -> AgentSession:
        pending = s.pending_interaction
        if s.status is Status.WAITING_USER_INPUT and pending and pending["kind"] != "login":
            answer = {"answer": message}
            return await self._answer(s, pending["interactionId"], answer, identity, message=message)
        if pending and pending["kind"] == "login":
            close_lapsed_login(s, pending)  # the message is a new request, sent with the new token
        s.transition(Status.RUNNING)
        s.append({"role": "user", "content": message})
        turn = self._turn(s, resumed=False, identity=identity)
        turn.emit(EventType.USER_MESSAGE, {"content": message})
        selection = await self.router.select(message, s.global_context, identity.provider if identity else None)
        added = [i for i in selection.skill_ids if i not in s.selected_skill_ids]
        s.selected_skill_ids = s.selected_skill_ids + added  # a follow-up keeps what was chosen
        turn.emit(
            EventType.SKILLS_SELECTED,
            {**selection.to_event(), "selectedSkillIds": s.selected_skill_ids, "added": added},
        )
        await turn.commit()
        return await self._drive(turn)

    async def resume(self, session_id: str, who: Owner | Identity) -> AgentSession:
        owner, identity = split_caller(who)
        lock = await self._claim(session_id)
        return await self._launch(session_id, lock, self._resume(session_id, owner, identity))

    async def _resume(self, session_id: str, owner: Owner, identity: Identity | None) -> AgentSession:
        s = await self.store.load(session_id, owner)
        await self._apply_jobs(s)
        if s.status is Status.RUNNING and s.session_id in await self.store.expired_running():
            return await self._recover(s, identity)
        if s.status is not Status.WAITING_ASYNC_CALLBACK or s.waiting_job_ids:
            raise Conflict(_busy(s))
        return await self._continue(s, identity)  # every job is in: continue the turn

    async def complete_interaction(
        self, session_id: str, who: Owner | Identity | None, interaction_id: str, result: dict[str, Any]
    ) -> AgentSession:
        """Answer a question / form, or deliver a confirmed proposal's outcome, and resume."""
        owner, identity = split_caller(who) if who is not None else (None, None)
        lock = await self._claim(session_id)

        async def answer() -> AgentSession:
            s = await self.store.load(session_id, owner)
            return await self._answer(s, interaction_id, result, identity)

        return await self._launch(session_id, lock, answer())

    async def cancel(self, session_id: str, who: Owner | Identity) -> AgentSession:
        """Stop the session's turn: the task driving it is cancelled wherever it is (the model
        call, a tool in flight), every call left open gets an error result, and the session ends
        ``CANCELLED`` with a ``TURN_FINISHED`` event. A session waiting for a callback, an answer
        or a confirmation is cancelled the same way. ``Conflict`` when it has already finished."""
        owner, _ = split_caller(who)
        await self.store.load(session_id, owner)  # NotFound unless the caller owns it
        stopped_here = False
        deadline = time.monotonic() + 10.0
        while True:
            driver = self._drivers.get(session_id)
            if driver is not None and not driver.done():
                self._stopping.add(session_id)
                driver.cancel(CANCELLED_REASON)
                await asyncio.wait({driver})
                stopped_here = True
                if not driver.cancelled() and driver.exception() is None:
                    result = driver.result()  # a background driver (callbacks, recovery) may return None
                    if isinstance(result, AgentSession) and result.status is Status.CANCELLED:
                        return result
                break
            if not self._lock(session_id).locked():
                break
            if time.monotonic() > deadline:  # the lock holder never became a driver
                raise Conflict("the session is busy; try again")
            await asyncio.sleep(0.02)  # between claiming the session and starting its turn
        async with self._lock(session_id):
            s = await self.store.load(session_id, owner)
            if s.status in FINISHED:
                raise Conflict(f"the session is {s.status.value}; there is no turn to cancel")
            if (
                s.status is Status.RUNNING
                and not stopped_here
                and s.session_id not in await self.store.expired_running()
            ):
                raise Conflict("the session's turn runs in another tether process; cancel it there")
            return await self._cancelled(s)

    async def deliver_outcome(
        self,
        session_id: str,
        interaction_id: str | None,
        result: dict[str, Any],
        events: list[tuple[str, dict[str, Any]]],
        who: Owner | Identity | None = None,
        guard: Any = None,
    ) -> AgentSession:
        """An op's outcome reaches its session: ``events`` (OP_RESULT, LINK) are committed first
        — when the session is still waiting on that proposal, in the first commit of the answer,
        where the proposal's tool message is replaced by ``result`` and the model gets a round
        (as ``complete_interaction``); otherwise on their own. Waits for a running turn rather
        than refusing. ``guard`` (the outcome's own write on the op row, see ``Commit.guard``)
        rides that first commit, so the truth and its announcement land together; when it
        refuses, ``GuardRefused`` reaches the caller and nothing was delivered."""
        owner, identity = split_caller(who) if who is not None else (None, None)

        async def body() -> AgentSession:
            for attempt in range(3):
                s = await self.store.load(session_id, owner)
                waiting = {e["interactionId"] for e in s.pending_entries()}
                if s.status in (Status.WAITING_CONFIRMATION, Status.WAITING_USER_INPUT) and interaction_id in waiting:
                    version = s.version
                    try:
                        return await self._answer(s, str(interaction_id), result, identity, leading=events, guard=guard)
                    except GuardRefused:
                        raise
                    except Conflict:  # nothing committed yet: another process moved the session on
                        if s.version != version or attempt == 2:
                            raise
                        continue
                turn = self._turn(s, resumed=True, identity=identity, guard=guard)
                for type_, data in events:
                    turn.emit(type_, data)
                try:
                    await turn.commit()
                    return s
                except GuardRefused:
                    raise
                except Conflict:  # another process moved the session on: reload, emit again
                    if attempt == 2:
                        raise
            return s

        lock = self._lock(session_id)
        await lock.acquire()
        # as the session's driver: the model's round that follows can be stopped like any turn
        return await self._held(session_id, lock, body())

    async def callback(
        self, job_id: str, token: str | None, status: str, payload: Any, error: str | None
    ) -> dict[str, Any]:
        job = await self.store.get_job(job_id)
        if job is None:
            raise NotFound("async job not found")
        if not token or not hmac.compare_digest(hash_token(token), job.token_hash):
            raise Unauthorized("missing or wrong callback token (header X-Tether-Callback-Token)")
        if status not in ("SUCCEEDED", "FAILED"):
            raise InvalidInput("status must be SUCCEEDED or FAILED", field="status")
        if not await self.store.finish_job(job_id, status, payload, error):
            if job.kind == "session" and not job.applied:
                # stored but never applied (the process died in between): the caller's retry resumes it
                self.spawn(self.apply_jobs(job.session_id))
            return {"ok": True, "duplicate": True}
        if job.kind == "session":
            self.spawn(self.apply_jobs(job.session_id))
        return {"ok": True}

    async def apply_jobs(self, session_id: str) -> AgentSession:
        """Apply stored job results as the session's driver (a background task ``cancel`` may
        stop: what it returns is what ``cancel`` answers)."""
        lock = self._lock(session_id)
        await lock.acquire()
        return await self._held(session_id, lock, self._claim_and_apply(session_id))

    async def recover(self) -> int:
        """Resume every RUNNING session whose lease expired (its runner died): each is claimed
        first, so of all the replicas sweeping at once exactly one recovers it."""
        ids = await self.store.claim_expired()
        for sid in ids:
            if not self._lock(sid).locked():
                self.spawn(self._recover_locked(sid))
        for sid in await self.store.sessions_with_unapplied_jobs():
            if not self._lock(sid).locked():
                self.spawn(self.apply_jobs(sid))
        return len(ids)

    async def expire_jobs(self) -> int:
        """Fail the async jobs past their deadline (each claimed by one replica's sweep) and let
        their sessions go on."""
        overdue = await self.store.claim_overdue_jobs("the job passed its time limit")
        for job in overdue:
            if job.kind == "session":
                self.spawn(self.apply_jobs(job.session_id))
        return len(overdue)

    async def shutdown(self, grace_s: float) -> int:
        """A graceful stop: turns in flight get ``grace_s`` seconds to finish; the rest are stopped
        where they are (as a crash would stop them, so recovery's rules apply: a call in flight is
        never re-run) and every lease this process holds is handed back, so another replica's
        next sweep takes them over at once. -> the turns stopped."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace_s)
        left = [t for t in self._tasks if not t.done()]
        for task in left:
            task.cancel()
        if left:
            await asyncio.gather(*left, return_exceptions=True)
        handed = await self.store.hand_back_leases()
        if left or handed:
            log.warning("shutdown: %d turn(s) stopped, %d lease(s) handed back", len(left), handed)
        return len(left)

    # ---- internals ------------------------------------------------------------------------------

    def _turn(self, s: AgentSession, resumed: bool, identity: Identity | None = None, guard: Any = None) -> Turn:
        """A turn of ``s``; ``guard`` (``Commit.guard``) rides its first commit."""
        turn_id = s.current_turn_id if resumed and s.current_turn_id else new_id("turn")
        turn = Turn(s, self.deps, turn_id, resumed, identity)
        turn.guard = guard
        return turn

    async def _drive(self, turn: Turn) -> AgentSession:
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
        if await self._has_results(s):  # callbacks that arrived while the turn was finishing
            return await self._claim_and_apply(s.session_id)
        return s

    def _heartbeat(self, s: AgentSession) -> Callable[[], None]:
        """Renew the running session's lease every third of it until the returned function is
        called. A timer, not a task: most turns end before the first beat. One renewal at a time;
        a failed one is logged and the next beat tries again."""
        loop = asyncio.get_running_loop()
        interval = max(getattr(self.store, "lease_seconds", 30.0) / 3, 0.2)
        renewal: asyncio.Task[bool] | None = None
        timer: asyncio.TimerHandle

        def renewed(task: asyncio.Task[bool]) -> None:
            if not task.cancelled() and task.exception() is not None:
                log.warning("renewing the lease of session %s failed: %s", s.session_id, task.exception())

        def beat() -> None:
            nonlocal renewal, timer
            if renewal is None or renewal.done():
                renewal = loop.create_task(self.store.renew_lease(s.session_id, s.version))
                renewal.add_done_callback(renewed)
            timer = loop.call_later(interval, beat)

        timer = loop.call_later(interval, beat)

        def stop() -> None:
            timer.cancel()
            if renewal is not None:
                renewal.cancel()

        return stop

    async def _continue(self, s: AgentSession, identity: Identity | None = None) -> AgentSession:
        s.transition(Status.RUNNING)
        turn = self._turn(s, resumed=True, identity=identity)
        return await self._drive(turn)

    async def _compile(self, s: AgentSession, turn_id: str) -> str | None:
        dsl = compile_dsl(s, turn_id, self.deps.pipeline.registry)
        if dsl is None:
            return None
        stage = getattr(self.dsl_store, "stage_dsl", None) if self.dsl_store is self.store else None
        if stage is not None:  # saved in the transaction of the final commit that announces it
            stage(s.session_id, dsl)
        else:
            await self.dsl_store.save_dsl(dsl)
        return dsl.dsl_id


def _busy(s: AgentSession) -> str:
    if s.status is Status.RUNNING:
        return "the session is running a turn; wait for it to finish"
    if s.status is Status.WAITING_ASYNC_CALLBACK:
        return "the session is waiting for an async job's callback"
    if s.status is Status.WAITING_CONFIRMATION:
        return "the session is waiting for a write proposal to be confirmed or cancelled"
    return f"the session is {s.status.value}"
