"""One running turn of a session: the helpers the loop calls, and the commit discipline.

A ``Turn`` owns the in-memory session while it runs. Events are queued with the next sequence
number and written with the session state in one commit, then published, so a stream never shows
what the store does not hold.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tether.core import summary, window
from tether.core.decision import WAITS, Fail, Final, NextStep, Round, WaitCallback, WaitConfirmation, WaitUser
from tether.core.error_messages import TURN_TOOL_CALLS
from tether.core.events import EventType, RuntimeEvent
from tether.core.messages import ModelReply, ModelRequest, ToolCall, tool_message
from tether.core.pipeline import Outcome, ToolPipeline, frame
from tether.core.ports import (
    AsyncJob,
    ChatModel,
    Clock,
    Commit,
    CommitGuard,
    EventBus,
    NoBudget,
    OpQueue,
    SessionStore,
    SystemClock,
    UsageBudget,
)
from tether.core.prompt import system_prompt
from tether.core.session import ANSWERED, ASKED, OUTCOMES, AgentSession, Identity, Status
from tether.core.skills import SkillRegistry
from tether.core.telemetry import MODEL_CALL, NoTelemetry, Telemetry
from tether.core.tools import InteractionKind, JobTicket, ToolContext
from tether.errors import ContextTooLong, ModelError

MAX_RETRY_AFTER_S = 60.0  # a longer Retry-After is ignored in favour of the turn's own backoff


@dataclass
class Limits:
    max_rounds: int = 12
    max_tool_calls: int = 40
    turn_timeout_s: float = 600.0
    tool_timeout_s: float = 120.0
    model_retries: int = 2
    model_backoff_s: float = 0.5
    job_timeout_s: float = 1800.0
    context_tokens: int = 24000  # what one model request may carry, as core/window.py estimates it


@dataclass(frozen=True)
class TurnDeps:
    """What every turn of a runtime uses; built once (``tether.factory.build_runtime``), never changed."""

    store: SessionStore
    bus: EventBus
    model: ChatModel
    skills: SkillRegistry
    pipeline: ToolPipeline
    limits: Limits
    callback_url: str
    grants: frozenset[str] = frozenset()
    credential: str | None = None
    # packs' extra system-prompt text, each for the sessions of the listed identity providers (empty: all)
    prompt_sections: list[tuple[tuple[str, ...], Callable[[frozenset[str]], str]]] | None = None
    telemetry: Telemetry = field(default_factory=NoTelemetry)  # spans and metrics (tether.telemetry)
    budget: UsageBudget = field(default_factory=NoBudget)  # the user's model budgets (tether.abuse)
    clock: Clock = field(default_factory=SystemClock)  # the one source of time for the core


OnFinal = Callable[[AgentSession, str], Awaitable[str | None]]  # (session, turn id) -> the DSL's id
ALWAYS_ALLOWED = frozenset({"load_skill", "ask_user"})  # built-in tools every turn may call
INTERACTION_EVENTS: dict[InteractionKind, str] = {
    "question": EventType.QUESTION,
    "form": EventType.FORM_COLLECT,
    "proposal": EventType.WRITE_PROPOSAL,
    "login": EventType.LOGIN_EXPIRED,  # the business system refused the user's token: they must log in again
}


def _retry_delay(exc: ModelError, backoff_s: float) -> float:
    wait = exc.retry_after_s
    return wait if wait is not None and 0 <= wait <= MAX_RETRY_AFTER_S else backoff_s


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Turn:
    def __init__(
        self,
        session: AgentSession,
        deps: TurnDeps,
        turn_id: str,
        resumed: bool,
        identity: Identity | None = None,
        guard: CommitGuard | None = None,
        on_final: OnFinal | None = None,
        ops: OpQueue | None = None,
    ) -> None:
        self.session = session
        # the caller's grants and credential for this turn only; a background resume has none
        self.grants = identity.grants if identity is not None else deps.grants
        self.credential = identity.credential if identity is not None else deps.credential
        self.deps = deps
        self.limits = deps.limits
        self.turn_id = turn_id
        self.resumed = resumed
        self.pending: list[RuntimeEvent] = []
        self.new_jobs: list[AsyncJob] = []
        self.guard = guard  # a store precondition the next commit carries (``Commit.guard``)
        self.on_final = on_final  # compiles the turn's DSL when it succeeds -> its id
        self.ops = ops  # the op queue a proposing tool records its draft in
        self.tool_calls = sum(1 for s in session.executed_steps if s.turn_id == turn_id)
        self.outcome = ANSWERED  # a final answer's, as its model says it
        self.allowed = frozenset[str]()
        self.opened = False
        self.committing = asyncio.Lock()
        self.sizes: window.Sizes = {}  # the window's token estimates, kept across the turn's rounds

    # ---- events and commits ------------------------------------------------------------------

    def now(self) -> float:
        """The runtime's clock (``TurnDeps.clock``): every time the core records comes from it."""
        return self.deps.clock.now()

    def emit(self, type_: str, data: dict[str, Any]) -> None:
        s = self.session
        s.last_seq += 1
        self.pending.append(RuntimeEvent(s.last_seq, s.session_id, self.turn_id, type_, self.now(), data))

    async def commit(self, *, applied_job_ids: list[str] | None = None) -> None:
        """Write the session and the queued events in one commit (a session never stored is
        created by it), then publish the events: the one place a session's state is committed.
        One commit at a time: the loop may store a round's start while the model answers."""
        async with self.committing:
            s = self.session
            s.updated_at = self.now()
            events, self.pending = self.pending, []
            jobs, self.new_jobs = self.new_jobs, []
            commit = Commit(s, events, jobs, applied_job_ids=applied_job_ids or [], guard=self.guard)
            await (self.deps.store.create(commit) if s.version == 0 else self.deps.store.commit(commit))
            self.guard = None
        for e in events:
            self.deps.bus.publish(e)

    # ---- the loop's helpers --------------------------------------------------------------------

    def open(self) -> None:
        """Start the turn in memory; the next commit stores it (loop.py: with the first round)."""
        if self.opened:
            return
        self.opened = True
        self.session.current_turn_id = self.turn_id
        self.session.outcome = None  # the last turn's no longer: a cancel or failure leaves none
        self.emit(EventType.TURN_STARTED, {"resumed": self.resumed})
        self._refresh_tools()

    def _refresh_tools(self) -> None:
        skills = self.deps.skills
        self.allowed = skills.allowed_tools(self.session.selected_skill_ids) | ALWAYS_ALLOWED
        registry = self.deps.pipeline.registry
        tools = [t for n in registry.names() if n in self.allowed and (t := registry.get(n)) is not None]
        provider = self.session.global_context.get("_provider")
        sections = [
            fn(self.grants) for audience, fn in self.deps.prompt_sections or [] if not audience or provider in audience
        ]
        prompt = {"role": "system", "content": system_prompt(self.session, skills, tools, sections)}
        if not self.session.transcript or self.session.transcript[0].get("role") != "system":
            self.session.transcript.insert(0, prompt)
        elif self.session.transcript[0] != prompt:
            self.session.set_message(0, prompt)

    async def ask_model(self) -> ModelReply:
        deps, s = self.deps, self.session
        skills = [k for k in (deps.skills.get(i) for i in s.selected_skill_ids) if k is not None]
        tools = deps.pipeline.registry.specs(self.allowed)
        budget = self.limits.context_tokens
        messages = await self._window(tools, budget)
        request = ModelRequest(messages, tools, skills, s.global_context, on_token=self._on_token)
        attempt, shrunk = 0, False
        while True:
            try:
                return await self._chat(request)
            except ContextTooLong as exc:
                if shrunk:
                    raise
                shrunk, budget = True, window.smaller_budget(budget, exc.limit_tokens)
                request.messages = await self._window(tools, budget)
                message = f"{exc.message}; retrying with a {budget}-token window"
                self.emit(EventType.ERROR, {"message": message, "recovered": True})
            except ModelError as exc:
                # the one retry policy for model calls (TETHER_MODEL_RETRIES); adapters try once
                if not exc.retryable or attempt >= self.limits.model_retries:
                    raise
                attempt += 1
                self.emit(EventType.ERROR, {"message": f"model call failed, retrying ({attempt}): {exc.message}"})
                await asyncio.sleep(_retry_delay(exc, self.limits.model_backoff_s * 2 ** (attempt - 1)))

    async def _chat(self, request: ModelRequest) -> ModelReply:
        """One model call inside a span (GenAI conventions: operation, provider, model, usage)."""
        s, model = self.session, self.deps.model
        provider, _, name = model.name.partition(":")
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": name or provider,
            "tether.session.id": s.session_id,
            "tether.turn.id": self.turn_id,
            "enduser.id": s.owner.user_id,
            "tether.tenant": s.owner.tenant,
        }
        with self.deps.telemetry.span(MODEL_CALL, attributes) as span:
            span.content("gen_ai.input.messages", lambda: request.messages)
            try:
                reply = await model.chat(request)
            except ModelError as exc:
                span.fail(exc.message)
                raise
            if reply.meta.get("model"):
                span.set("gen_ai.response.model", str(reply.meta["model"]))
            if reply.meta.get("finish_reason"):
                span.set("gen_ai.response.finish_reasons", [str(reply.meta["finish_reason"])])
            if reply.usage is not None:
                span.set("gen_ai.usage.input_tokens", reply.usage.prompt_tokens)
                span.set("gen_ai.usage.output_tokens", reply.usage.completion_tokens)
            await self.deps.budget.charge_model(s.owner, reply.usage)
            span.content("gen_ai.output.messages", lambda: [reply.to_message()])
            return reply

    async def _window(self, tools: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
        """The part of the transcript this request carries; turns that fell out of it are folded
        into the session's summary first (committed with the round)."""
        s = self.session
        upto, messages = window.plan(s.transcript, s.summary, s.summary_upto, budget, tools, self.sizes)
        if messages is not None:
            return messages
        if upto > s.summary_upto:
            start = max(s.summary_upto, 1)  # message 0 is the system prompt
            s.summary = await summary.fold(self.deps.model, s.summary, s.transcript[start:upto], budget)
            s.summary_upto = upto
        return window.window(s.transcript, s.summary, s.summary_upto, budget, tools)

    async def _on_token(self, delta: str) -> None:
        self.emit(EventType.TOKEN, {"delta": delta})
        if len(self.pending) >= 32:
            await self.commit()

    async def act(self, reply: ModelReply) -> Round:
        """Act on the model's reply: record it, run its tool calls through the pipeline, queue the
        events. What to do next is ``decision.decide``'s, from the ``Round`` returned."""
        s = self.session
        thinking = {"reasoning": reply.reasoning} if reply.reasoning else {}
        if not reply.tool_calls:
            content = reply.content or ""
            s.append({**reply.to_message(), "content": content})
            self.outcome = str(reply.meta["outcome"]) if reply.meta.get("outcome") in OUTCOMES else ANSWERED
            self.emit(EventType.MODEL_DECISION, {"action": "final", **reply.meta, **thinking})
            self.emit(EventType.ASSISTANT_MESSAGE, {"content": content, **reply.meta, "outcome": self.outcome})
            return Round(final_text=content)
        s.append(reply.to_message())
        self.emit(
            EventType.MODEL_DECISION,
            {"action": "tool_calls", "tools": [c.name for c in reply.tool_calls], **reply.meta, **thinking},
        )
        for c in reply.tool_calls:
            self.emit(
                EventType.TOOL_CALL_REQUESTED,
                {"toolCallId": c.id, "toolId": c.name, "arguments": c.arguments},
            )
        refused: Fail | None = None
        jobs: list[str] = []
        for c in reply.tool_calls:
            if self.tool_calls >= (limit := self.limits.max_tool_calls):
                self._refuse(c, f"tool-call budget of {limit} per turn is spent")
                reason = f"the turn used its {limit} tool calls (TETHER_MAX_TOOL_CALLS) without finishing"
                refused = Fail(reason, TURN_TOOL_CALLS, {"calls": limit})
                continue
            self.tool_calls += 1
            outcome = await self.deps.pipeline.run(c, self.allowed, self._context(c), self.emit, self.commit)
            job_id = self._record(c, outcome)
            if job_id is not None:
                jobs.append(job_id)
        # the results are committed by the loop (run again) or by ``finish`` with the new status
        return Round(refused=refused, interaction=s.pending_interaction, job_ids=tuple(jobs))

    def _refuse(self, call: ToolCall, reason: str) -> None:
        self.session.append(tool_message(call.id, frame(call.name, "error", {"error": reason, "retryable": False})))
        self.emit(EventType.TOOL_EXECUTION_FAILED, {"toolCallId": call.id, "toolId": call.name, "error": reason})

    def _record(self, call: ToolCall, outcome: Outcome) -> str | None:
        """Append the call's tool message and step; -> the id of the async job it left pending."""
        s = self.session
        s.append(tool_message(call.id, outcome.content))
        s.executed_steps.append(outcome.step)
        if call.name == "load_skill" and outcome.kind == "value":
            name = outcome.data.get("skill") if isinstance(outcome.data, dict) else None
            if name and name not in s.selected_skill_ids:
                s.selected_skill_ids.append(name)
                self._refresh_tools()
        if outcome.kind == "async_job":
            job_id = outcome.data["externalJobId"]
            s.waiting_job_ids.append(job_id)
            self.emit(
                EventType.WAITING_ASYNC_CALLBACK,
                {"toolCallId": call.id, "toolId": call.name, "externalJobId": job_id},
            )
            return str(job_id)
        if outcome.interaction is not None:
            it = outcome.interaction
            iid = it.interaction_id or f"int-{secrets.token_hex(8)}"
            entry = {
                "interactionId": iid,
                "kind": it.kind,
                "toolCallId": call.id,
                "toolId": call.name,
                "payload": it.payload,
            }
            s.queue_interaction(entry)  # several of one message wait in order, each answered by id
            self.emit(INTERACTION_EVENTS.get(it.kind, EventType.QUESTION), dict(entry))
        return None

    def _context(self, call: ToolCall) -> ToolContext:
        s = self.session

        async def issue_job() -> JobTicket:
            ticket = JobTicket(f"job-{secrets.token_urlsafe(18)}", secrets.token_urlsafe(24), self.deps.callback_url)
            self.new_jobs.append(
                AsyncJob(
                    ticket.job_id,
                    s.session_id,
                    call.id,
                    call.name,
                    hash_token(ticket.token),
                    deadline=self.now() + self.limits.job_timeout_s,
                    created_at=self.now(),
                    kind="replay" if s.global_context.get("_replayOf") else "session",
                )
            )
            await self.commit()  # the job row exists before anyone can call back
            return ticket

        return ToolContext(
            s.owner,
            s.session_id,
            self.turn_id,
            call.id,
            s.global_context,
            self.grants,
            self.credential,
            issue_job,
            ops=self.ops,
            transcript=s.transcript,
        )

    async def finish(self, step: NextStep) -> NextStep:
        """End the turn as ``step`` says (a final answer, a failure or a wait) in one commit."""
        s = self.session
        if isinstance(step, Fail):
            s.transition(Status.FAILED)
            s.last_error = step.reason
            coded = step.coded()  # the person's language: the page says the code's text
            s.last_error_code, s.outcome = coded or None, None
            self.emit(EventType.ERROR, {"message": step.reason, **coded})
            self.emit(EventType.TURN_FINISHED, {"status": s.status.value, "reason": step.reason, **coded})
            await self.commit()
            return step
        if isinstance(step, Final):
            s.transition(Status.SUCCEEDED)
            s.last_error = s.last_error_code = None
            s.outcome = self.outcome
            if self.on_final is not None:
                dsl_id = await self.on_final(s, self.turn_id)
                if dsl_id:
                    s.last_dsl_id = dsl_id
                    self.emit(EventType.DSL_COMPILED, {"dslId": dsl_id})
        elif isinstance(step, WAITS):
            s.transition(WAIT_STATUS[type(step)])
            s.outcome = None if isinstance(step, WaitCallback) else ASKED  # waiting on a person, or not
        else:
            raise ValueError(f"a turn cannot finish with {step!r}")
        self.emit(EventType.TURN_FINISHED, {"status": s.status.value, **({"outcome": s.outcome} if s.outcome else {})})
        await self.commit()
        return step


WAIT_STATUS: dict[type, Status] = {
    WaitCallback: Status.WAITING_ASYNC_CALLBACK,
    WaitUser: Status.WAITING_USER_INPUT,
    WaitConfirmation: Status.WAITING_CONFIRMATION,
}
