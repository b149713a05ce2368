"""The runtime: starts, continues and resumes sessions; takes callbacks and answers; recovers
sessions whose runner died. The API, the CLI and the Python API all go through here.

Concurrency: one turn per session at a time. In-process a per-session lock refuses a second
runner at once (409); across processes the store's version check does.

Every turn runs in an asyncio task of its own, the session's *driver* (an API call that waits for
the turn awaits that task), so ``cancel`` can stop it wherever it is — in the model call, in a
tool, between the two — without touching the request that started it.

Here: the entry points only. ``Runtime`` composes its parts: ``TurnRunner`` makes and drives
turns (running.py), ``Drivers`` holds the locks and tasks that run them (drivers.py); answering a
waiting session (answering.py), job results and recovery (resumption.py), closing a cancelled turn
(cancellation.py) and amending a pending interaction (amending.py) are functions of a runner or a turn."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from tether.core.amending import amend_pending
from tether.core.answering import answer, close_lapsed_login
from tether.core.cancellation import CANCELLED_REASON, close_cancelled
from tether.core.decision import Final, decide_direct_call
from tether.core.drivers import Drivers
from tether.core.events import EventType
from tether.core.messages import ModelReply, ToolCall
from tether.core.ports import CommitGuard, DslStore, OpQueue, SessionStore
from tether.core.resumption import apply_jobs
from tether.core.running import TurnRunner
from tether.core.session import AgentSession, Identity, Owner, Status, new_id, split_caller
from tether.core.skills import SkillRouter
from tether.core.turn import TurnDeps, hash_token
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


class Runtime:
    """Built by ``tether.factory.build_runtime``. ``ops`` makes the op queue that proposing tools
    record their drafts in; it is given the runtime, whose sessions its outcomes reach."""

    def __init__(
        self,
        deps: TurnDeps,
        router: SkillRouter,
        dsl_store: DslStore,
        ops: Callable[[Runtime], OpQueue] | None = None,
    ) -> None:
        self.deps = deps
        self.store: SessionStore = deps.store
        self.router = router
        self.drivers = Drivers(deps.store, self._stopped)
        self.ops = ops(self) if ops is not None else None
        self.turns = TurnRunner(deps, dsl_store, self.ops)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as a tracked background task (``drain`` and ``shutdown`` wait for it)."""
        return self.drivers.spawn(coro)

    async def drain(self) -> None:
        """Wait until no background task is left."""
        await self.drivers.drain()

    async def _stopped(self, s: AgentSession) -> AgentSession:
        return await close_cancelled(self.turns.turn(s, resumed=True))

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
        s = AgentSession.new(owner, message, global_context, self.deps.clock.now())
        if session_id is not None:  # a client-chosen id (an AG-UI thread); the store refuses a taken one
            s.session_id = session_id
        if identity is not None:
            s.global_context["_provider"] = identity.provider  # which packs' prompt text applies
        selection = await self.router.select(message, s.global_context, identity.provider if identity else None)
        s.selected_skill_ids = selection.skill_ids
        s.transcript.append({"role": "system", "content": ""})
        s.transcript.append({"role": "user", "content": message})
        turn = self.turns.turn(s, resumed=False, identity=identity)
        turn.emit(EventType.SESSION_STARTED, {"query": message, "title": s.title})
        turn.emit(EventType.SKILLS_SELECTED, selection.to_event())
        turn.open()
        if not wait or session_id is not None:  # else the turn's first commit stores it (loop.py)
            await turn.commit()  # a caller told the id at once, or one it chose that may be taken
        lock = await self.drivers.claim(s.session_id)  # a new id: never contended
        return await self.drivers.launch(s.session_id, lock, self.turns.drive(turn), wait, at_once=s)

    async def start_tool_session(
        self, who: Identity, tool_name: str, arguments: dict[str, Any], title: str, via: str
    ) -> AgentSession:
        """A session begun by one direct tool call from another protocol (``via``: "mcp"): the call
        is the turn's only step, through the same pipeline, identity and grants as a model's call,
        and no model runs. A question, form or proposal leaves the session waiting for its person
        exactly as a turn's would (a proposal's op belongs to this session; a person confirms it
        through ``/api/ops``); any other result ends it — an error result as FAILED."""
        check_message(title)
        s = AgentSession.new(who.owner, title, {"_provider": who.provider, "_via": via}, self.deps.clock.now())
        s.transcript.append({"role": "system", "content": ""})
        s.transcript.append({"role": "user", "content": title})
        turn = self.turns.turn(s, resumed=False, identity=who)
        turn.emit(EventType.SESSION_STARTED, {"query": title, "title": s.title, "via": via})
        turn.open()
        turn.allowed = frozenset({tool_name})
        async with self.drivers.lock(s.session_id):
            await turn.commit()
            call = ToolCall(new_id("call"), tool_name, json.dumps(arguments, ensure_ascii=False))
            done = await turn.act(ModelReply(tool_calls=[call], meta={"via": via}))
            step = s.step(call.id)
            failed = None
            if step is not None and step.status == "FAILED":
                error = step.result.get("error") if isinstance(step.result, dict) else None
                failed = str(error or "")
            decision = decide_direct_call(done, tool_name, failed)
            if isinstance(decision, Final):
                s.append({"role": "assistant", "content": decision.text})
            await turn.finish(decision)
            return s

    async def post_message(
        self, session_id: str, who: Owner | Identity, message: str, wait: bool = True
    ) -> AgentSession:
        """Continue a session with a user message (answering a pending question if there is one);
        with ``wait=False`` the turn runs in the background."""
        check_message(message)
        owner, identity = split_caller(who)
        lock = await self.drivers.claim(session_id)
        try:
            s = await self.store.load(session_id, owner)
            if s.status not in (*FINISHED, Status.WAITING_USER_INPUT) or (
                s.status is Status.WAITING_USER_INPUT and not s.pending_interaction
            ):
                raise Conflict(s.busy_reason())
        except BaseException:
            lock.release()
            raise
        return await self.drivers.launch(session_id, lock, self._post(s, message, identity), wait, at_once=s)

    async def _post(self, s: AgentSession, message: str, identity: Identity | None) -> AgentSession:
        pending = s.pending_interaction
        if s.status is Status.WAITING_USER_INPUT and pending and pending["kind"] != "login":
            reply = {"answer": message}
            return await answer(self.turns, s, pending["interactionId"], reply, identity, message=message)
        turn = self.turns.turn(s, resumed=False, identity=identity)
        if pending and pending["kind"] == "login":
            close_lapsed_login(s, pending, turn.now())  # the message is a new request, sent with the new token
        s.transition(Status.RUNNING)
        s.append({"role": "user", "content": message})
        turn.emit(EventType.USER_MESSAGE, {"content": message})
        selection = await self.router.select(message, s.global_context, identity.provider if identity else None)
        added = [i for i in selection.skill_ids if i not in s.selected_skill_ids]
        s.selected_skill_ids = s.selected_skill_ids + added  # a follow-up keeps what was chosen
        turn.emit(
            EventType.SKILLS_SELECTED,
            {**selection.to_event(), "selectedSkillIds": s.selected_skill_ids, "added": added},
        )
        turn.open()
        return await self.turns.drive(turn)  # stored with the turn's first round (loop.py)

    async def resume(self, session_id: str, who: Owner | Identity) -> AgentSession:
        owner, identity = split_caller(who)
        lock = await self.drivers.claim(session_id)
        return await self.drivers.launch(session_id, lock, self._resume(session_id, owner, identity))

    async def _resume(self, session_id: str, owner: Owner, identity: Identity | None) -> AgentSession:
        s = await self.store.load(session_id, owner)
        await apply_jobs(self.turns.turn(s, resumed=True))
        if s.status is Status.RUNNING and s.session_id in await self.store.expired_running():
            return await self.turns.recover(s, identity)
        if s.status is not Status.WAITING_ASYNC_CALLBACK or s.waiting_job_ids:
            raise Conflict(s.busy_reason())
        return await self.turns.proceed(s, identity)  # every job is in: continue the turn

    async def complete_interaction(
        self, session_id: str, who: Owner | Identity | None, interaction_id: str, result: dict[str, Any]
    ) -> AgentSession:
        """Answer a question / form, or deliver a confirmed proposal's outcome, and resume."""
        owner, identity = split_caller(who) if who is not None else (None, None)
        lock = await self.drivers.claim(session_id)

        async def body() -> AgentSession:
            s = await self.store.load(session_id, owner)
            return await answer(self.turns, s, interaction_id, result, identity)

        return await self.drivers.launch(session_id, lock, body())

    async def cancel(self, session_id: str, who: Owner | Identity, withdraw: bool = False) -> AgentSession:
        """Stop the session's turn: the task driving it is cancelled wherever it is (the model
        call, a tool in flight), every call left open gets an error result, and the session ends
        ``CANCELLED`` with a ``TURN_FINISHED`` event. A session waiting for a callback, an answer
        or a confirmation is cancelled the same way, and its draft write proposals with it (the op
        queue's policy). ``Conflict`` when it has already finished, or while a confirmed write of it
        is being carried out (its outcome ends the turn), or awaits approval and ``withdraw`` is not
        set (``AwaitingApproval``: stopping is not withdrawing)."""
        owner, identity = split_caller(who)
        await self.store.load(session_id, owner)  # NotFound unless the caller owns it
        if self.ops is not None:
            await self.ops.check_cancel(session_id, owner, withdraw)
        s = await self._cancel(session_id, owner)
        if self.ops is not None:
            await self.ops.cancel_drafts(session_id, identity or Identity(owner))
        return s

    async def _cancel(self, session_id: str, owner: Owner) -> AgentSession:
        stopped_here, stopped = await self.drivers.stop(session_id, CANCELLED_REASON)
        if stopped is not None and stopped.status is Status.CANCELLED:
            return stopped
        async with self.drivers.lock(session_id):
            s = await self.store.load(session_id, owner)
            if s.status in FINISHED:
                raise Conflict(f"the session is {s.status.value}; there is no turn to cancel")
            if (
                s.status is Status.RUNNING
                and not stopped_here
                and s.session_id not in await self.store.expired_running()
            ):
                raise Conflict("the session's turn runs in another tether process; cancel it there")
            return await close_cancelled(self.turns.turn(s, resumed=True))

    async def deliver_outcome(
        self,
        session_id: str,
        interaction_id: str | None,
        result: dict[str, Any],
        events: list[tuple[str, dict[str, Any]]],
        who: Owner | Identity | None = None,
        guard: CommitGuard | None = None,
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
                        return await answer(
                            self.turns, s, str(interaction_id), result, identity, leading=events, guard=guard
                        )
                    except GuardRefused:
                        raise
                    except Conflict:  # nothing committed yet: another process moved the session on
                        if s.version != version or attempt == 2:
                            raise
                        continue
                turn = self.turns.turn(s, resumed=True, identity=identity, guard=guard)
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

        lock = self.drivers.lock(session_id)
        await lock.acquire()
        # as the session's driver: the model's round that follows can be stopped like any turn
        return await self.drivers.held(session_id, lock, body())

    async def amend_interaction(
        self,
        session_id: str,
        interaction_id: str | None,
        update: dict[str, Any],
        events: list[tuple[str, dict[str, Any]]],
        who: Owner | Identity | None = None,
    ) -> bool:
        """``update`` merged into a pending interaction (``core.amending``), ``events`` committed with it."""
        owner = split_caller(who)[0] if who is not None else None
        async with self.drivers.lock(session_id):  # not while a turn of it runs here
            for attempt in range(3):
                s = await self.store.load(session_id, owner)
                amended = amend_pending(s, interaction_id, update)
                turn = self.turns.turn(s, resumed=True)
                for type_, data in events:
                    turn.emit(type_, data)
                try:
                    await turn.commit()
                    return amended
                except Conflict:  # another process moved the session on: reload, amend again
                    if attempt == 2:
                        raise
        return False

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
        lock = self.drivers.lock(session_id)
        await lock.acquire()
        return await self.drivers.held(session_id, lock, self.turns.claim_and_apply(session_id))

    async def recover(self) -> int:
        """Resume every RUNNING session whose lease expired (its runner died): each is claimed
        first, so of all the replicas sweeping at once exactly one recovers it."""
        ids = await self.store.claim_expired()
        for sid in ids:
            if not self.drivers.lock(sid).locked():
                self.spawn(self._recover_locked(sid))
        for sid in await self.store.sessions_with_unapplied_jobs():
            if not self.drivers.lock(sid).locked():
                self.spawn(self.apply_jobs(sid))
        return len(ids)

    async def _recover_locked(self, session_id: str) -> AgentSession:
        lock = self.drivers.lock(session_id)
        await lock.acquire()

        async def body() -> AgentSession:
            s = await self.store.load(session_id)
            return await self.turns.recover(s) if s.status is Status.RUNNING else s

        return await self.drivers.held(session_id, lock, body())

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
        left = await self.drivers.shutdown(grace_s)
        handed = await self.store.hand_back_leases()
        if left or handed:
            log.warning("shutdown: %d turn(s) stopped, %d lease(s) handed back", left, handed)
        return left
