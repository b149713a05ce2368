"""The runtime: starts, continues and resumes sessions; takes callbacks and answers; recovers
sessions whose runner died. The API, the CLI and the Python API all go through here.

Concurrency: one turn per session at a time. In-process a per-session lock refuses a second
runner at once (409); across processes the store's version check does.

Every turn runs in an asyncio task of its own, the session's *driver* (an API call that waits for
the turn awaits that task), so ``cancel`` can stop it wherever it is — in the model call, in a
tool, between the two — without touching the request that started it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Coroutine
from typing import Any

from tether.core.answers import accept_answer
from tether.core.dsl import compile_dsl
from tether.core.events import EventType
from tether.core.loop import Decision, run_turn
from tether.core.messages import ModelReply, ToolCall, tool_message
from tether.core.pipeline import frame, summarise
from tether.core.ports import AsyncJob, Commit, DslStore, SessionStore
from tether.core.session import AgentSession, Identity, Owner, Status, Step, new_id, split_caller
from tether.core.skills import SkillRouter
from tether.core.telemetry import TURN
from tether.core.turn import Turn, TurnDeps, hash_token
from tether.errors import Conflict, GuardRefused, InvalidInput, NotFound, Unauthorized

log = logging.getLogger("tether.runtime")
MAX_MESSAGE_CHARS = 32_000
NOT_STARTED = "not run: the server stopped before this call started; it was not retried"
INTERRUPTED = (
    "interrupted: the server stopped while this call was in flight; it was not retried and its effect is unknown"
)
CANCELLED_REASON = "cancelled by the user"
CANCELLED_IN_FLIGHT = "cancelled by the user while this call was in flight; its effect is unknown"
CANCELLED_NOT_RUN = "not run: the user cancelled the turn"
CANCELLED_WAITING = "cancelled by the user while waiting for this; a later answer or callback is ignored"
FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)


def check_message(message: str) -> str:
    if not isinstance(message, str) or not message.strip():
        raise InvalidInput("message must not be empty", field="message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise InvalidInput(f"message is {len(message)} characters; the limit is {MAX_MESSAGE_CHARS}", field="message")
    if "\x00" in message:  # no database text column takes it (PostgreSQL refuses NUL)
        raise InvalidInput("message must not contain NUL (U+0000) characters", field="message")
    return message


class Runtime:
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
            _close_lapsed_login(s, pending)  # the message is a new request, sent with the new token
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
                    result: AgentSession = driver.result()
                    if result.status is Status.CANCELLED:
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
                turn = self._turn(s, resumed=True, identity=identity)
                turn.guard = guard
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

    async def apply_jobs(self, session_id: str) -> None:
        lock = self._lock(session_id)
        await lock.acquire()
        await self._held(session_id, lock, self._claim_and_apply(session_id))

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

    # ---- internals ------------------------------------------------------------------------------

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    async def _claim(self, session_id: str) -> asyncio.Lock:
        """Take the session's lock or refuse at once: a second runner gets 409, never a wait."""
        lock = self._lock(session_id)
        if lock.locked():
            raise Conflict("the session is running a turn; wait for it to finish")
        await lock.acquire()  # an unlocked, uncontended Lock is taken without yielding
        return lock

    def _turn(self, s: AgentSession, resumed: bool, identity: Identity | None = None) -> Turn:
        turn_id = s.current_turn_id if resumed and s.current_turn_id else new_id("turn")
        return Turn(s, self.deps, turn_id, resumed, identity)

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

    async def _cancelled(self, s: AgentSession) -> AgentSession:
        """Close what the turn left open, end the session CANCELLED, commit and publish."""
        turn = self._turn(s, resumed=True)
        now = time.time()

        def close(call_id: str, tool_id: str, reason: str, args: dict[str, Any] | None = None) -> None:
            index = s.tool_message_index(call_id)
            message = tool_message(call_id, frame(tool_id, "error", {"error": reason, "retryable": False}))
            if index is None:
                s.append(message)
            else:
                s.set_message(index, message)
            step = s.step(call_id)
            if step is None:
                s.executed_steps.append(
                    Step(turn.turn_id, call_id, tool_id, args or {}, "FAILED", {"error": reason}, now, now)
                )
            else:
                step.status, step.result, step.finished_at = "FAILED", {"error": reason}, now
            turn.emit(
                EventType.TOOL_EXECUTION_FAILED,
                {"toolCallId": call_id, "toolId": tool_id, "error": reason, "cancelled": True},
            )

        for call, started in _unanswered_calls(s):
            reason = CANCELLED_IN_FLIGHT if started else CANCELLED_NOT_RUN
            close(call["id"], call["function"]["name"], reason, _loads(call["function"].get("arguments")))
        for pending in s.pending_entries():  # the head and any queued behind it
            close(pending["toolCallId"], pending["toolId"], CANCELLED_WAITING)
        s.pending_interaction = None
        jobs = list(s.waiting_job_ids)
        for job_id in jobs:
            job = await self.store.get_job(job_id)
            if job is not None:
                await self.store.finish_job(job_id, "FAILED", None, CANCELLED_REASON)  # a later callback: duplicate
                close(job.tool_call_id, job.tool_id, CANCELLED_WAITING)
        s.waiting_job_ids = []
        s.transition(Status.CANCELLED)
        s.last_error = None
        turn.emit(EventType.TURN_FINISHED, {"status": s.status.value, "reason": CANCELLED_REASON})
        s.updated_at = time.time()
        await self.store.commit(Commit(s, turn.pending, applied_job_ids=jobs))
        for e in turn.pending:
            self.deps.bus.publish(e)
        turn.pending = []
        return s

    async def _drive(self, turn: Turn) -> AgentSession:
        s = turn.session
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(s))
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
            heartbeat.cancel()
        if await self._has_results(s):  # callbacks that arrived while the turn was finishing
            return await self._claim_and_apply(s.session_id)
        return s

    async def _heartbeat(self, s: AgentSession) -> None:
        interval = max(getattr(self.store, "lease_seconds", 30.0) / 3, 0.2)
        while True:
            await asyncio.sleep(interval)
            await self.store.renew_lease(s.session_id, s.version)

    async def _continue(self, s: AgentSession, identity: Identity | None = None) -> AgentSession:
        s.transition(Status.RUNNING)
        turn = self._turn(s, resumed=True, identity=identity)
        return await self._drive(turn)

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
        _settle_call(s, job.tool_call_id, job.tool_id, "value" if ok else "error", data)
        s.waiting_job_ids.remove(job.job_id)
        base = {"toolCallId": job.tool_call_id, "toolId": job.tool_id, "externalJobId": job.job_id}
        turn.emit(EventType.TOOL_CALLBACK_RECEIVED, {**base, "status": job.status})
        if ok:
            turn.emit(EventType.TOOL_EXECUTION_FINISHED, {**base, "kind": "value", "summary": summarise(data)})
        else:
            turn.emit(EventType.TOOL_EXECUTION_FAILED, {**base, "error": data["error"]})

    async def _answer(
        self,
        s: AgentSession,
        interaction_id: str,
        result: dict[str, Any],
        identity: Identity | None = None,
        message: str | None = None,
        leading: list[tuple[str, dict[str, Any]]] | None = None,
        guard: Any = None,
    ) -> AgentSession:
        """Settle the interaction with ``result``; ``leading`` events (an op's outcome) are
        emitted first, in the same commit, which also carries ``guard`` (``Commit.guard``)."""
        pending = s.pending_interaction
        if interaction_id in s.answered_interactions:
            raise Conflict(f"interaction {interaction_id!r} is already answered")
        if s.status not in (Status.WAITING_USER_INPUT, Status.WAITING_CONFIRMATION) or not pending:
            raise Conflict(f"the session is {s.status.value}, not waiting for an answer")
        entry = next((e for e in s.pending_entries() if e["interactionId"] == interaction_id), None)
        if entry is not None and entry["kind"] == "login":
            raise Conflict("the login expired: log in again, then send your request as a new message")
        if entry is not None:
            result = self._checked_answer(entry, result)  # 422 here leaves the session waiting
        entry = s.take_interaction(interaction_id)
        call_id, tool_id = entry["toolCallId"], entry["toolId"]
        _settle_call(s, call_id, tool_id, "value", result)
        answered = {
            "interactionId": interaction_id,
            "kind": entry["kind"],
            "toolCallId": call_id,
            "toolId": tool_id,
            "result": result,
        }
        if s.pending_interaction is not None:  # the same message asked more: wait for the next one
            target = (
                Status.WAITING_CONFIRMATION
                if s.pending_interaction["kind"] == "proposal"
                else Status.WAITING_USER_INPUT
            )
            if s.status is not target:
                s.transition(target)
            turn = self._turn(s, resumed=True)
            turn.guard = guard
            _note_answer(turn, answered, message, leading)
            await turn.commit()
            return s
        if s.waiting_job_ids:
            s.transition(Status.WAITING_ASYNC_CALLBACK)
            turn = self._turn(s, resumed=True)
            turn.guard = guard
            _note_answer(turn, answered, message, leading)
            await turn.commit()
            return s
        s.transition(Status.RUNNING)
        turn = self._turn(s, resumed=True, identity=identity)
        turn.guard = guard
        _note_answer(turn, answered, message, leading)  # committed with the resumed turn's start
        return await self._drive(turn)

    def _checked_answer(self, entry: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """The answer checked against what asked for it (a form's values against its schema); a
        proposal's outcome comes from the op queue, not from a person's text."""
        if entry["kind"] == "proposal":
            return result
        return accept_answer(self.deps.pipeline.registry.get(str(entry["toolId"])), entry, result)

    async def _recover_locked(self, session_id: str) -> None:
        lock = self._lock(session_id)
        await lock.acquire()

        async def body() -> AgentSession:
            s = await self.store.load(session_id)
            return await self._recover(s) if s.status is Status.RUNNING else s

        await self._held(session_id, lock, body())

    async def _recover(self, s: AgentSession, identity: Identity | None = None) -> AgentSession:
        """Give every call cut off mid-flight an error result, then wait or continue."""
        turn = self._turn(s, resumed=True, identity=identity)
        for call, started in _unanswered_calls(s):
            reason = INTERRUPTED if started else NOT_STARTED
            name = call["function"]["name"]
            s.append(tool_message(call["id"], frame(name, "error", {"error": reason, "retryable": False})))
            now = time.time()
            args = _loads(call["function"].get("arguments"))
            s.executed_steps.append(Step(turn.turn_id, call["id"], name, args, "FAILED", {"error": reason}, now, now))
            turn.emit(EventType.TOOL_EXECUTION_FAILED, {"toolCallId": call["id"], "toolId": name, "error": reason})
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


LOGIN_LAPSED = "the user's login had expired; they logged in again and sent a new message"


def _note_answer(
    turn: Turn, answered: dict[str, Any], message: str | None, leading: list[tuple[str, dict[str, Any]]] | None = None
) -> None:
    """The record a client rebuilds the conversation from: the user's message (when the answer
    came as one) and which interaction was answered with what, after any ``leading`` events."""
    for type_, data in leading or []:
        turn.emit(type_, data)
    if message is not None:
        turn.emit(EventType.USER_MESSAGE, {"content": message, "interactionId": answered["interactionId"]})
    turn.emit(EventType.INTERACTION_ANSWERED, answered)


def _settle_call(s: AgentSession, call_id: str, tool_id: str, kind: str, data: Any) -> None:
    """A call's outcome arrived later (a job's callback, a person's answer, a lapsed login): its tool
    message is replaced in place and its step finished, both with ``data``."""
    index = s.tool_message_index(call_id)
    if index is not None:
        s.set_message(index, tool_message(call_id, frame(tool_id, kind, data)))
    step = s.step(call_id)
    if step is not None:
        step.status, step.result, step.finished_at = ("FAILED" if kind == "error" else "SUCCEEDED"), data, time.time()


def _close_lapsed_login(s: AgentSession, pending: dict[str, Any]) -> None:
    _settle_call(s, pending["toolCallId"], pending["toolId"], "error", {"error": LOGIN_LAPSED, "retryable": True})
    s.pending_interaction = None


def _unanswered_calls(s: AgentSession) -> list[tuple[dict[str, Any], bool]]:
    """Tool calls with no tool message, each with whether it may have started: calls of one
    message run in order, so only the first unanswered one can have been in flight."""
    answered = {m.get("tool_call_id") for m in s.transcript if m.get("role") == "tool"}
    calls: list[tuple[dict[str, Any], bool]] = []
    for m in s.transcript:
        if m.get("role") == "assistant":
            missing = [c for c in m.get("tool_calls") or [] if c["id"] not in answered]
            calls += [(c, n == 0) for n, c in enumerate(missing)]
    return calls


def _loads(arguments: str | None) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _busy(s: AgentSession) -> str:
    if s.status is Status.RUNNING:
        return "the session is running a turn; wait for it to finish"
    if s.status is Status.WAITING_ASYNC_CALLBACK:
        return "the session is waiting for an async job's callback"
    if s.status is Status.WAITING_CONFIRMATION:
        return "the session is waiting for a write proposal to be confirmed or cancelled"
    return f"the session is {s.status.value}"
