"""The core's boundaries. Adapters (store/, models/, app/) implement these; the core calls only them.

A pause (waiting for a callback, an answer, a confirmation) is plain data behind ``SessionStore``:
any process holding the store can resume it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tether.core.events import RuntimeEvent
from tether.core.messages import ModelReply, ModelRequest, Usage
from tether.core.session import AgentSession, Identity, Owner, Status
from tether.errors import ToolError


class ChatModel(Protocol):
    """A chat model. ``chat`` returns a final answer or tool calls; it raises ``ModelError`` for a
    failure after its own retry policy. Streaming adapters call ``request.on_token`` per delta."""

    name: str

    async def chat(self, request: ModelRequest) -> ModelReply: ...


@runtime_checkable
class Closable(Protocol):
    """An adapter holding connections (``OpenAICompatModel``): whoever shuts down calls ``aclose``."""

    async def aclose(self) -> None: ...


class OpQueue(Protocol):
    """The queue of write proposals whose drafts a person confirms (``tether.ops.OpService``): a
    tool records the write it proposes here (packs through ``tether.pack.propose_op``; the op is the
    ops package's ``Op``, the core only hands the port to the tool), and cancelling a session
    cancels its drafts here."""

    @property
    def ttl_s(self) -> float:
        """How long a draft waits for its person before it expires."""
        ...

    async def propose(self, op: Any) -> Any: ...

    async def check_cancel(self, session_id: str, owner: Owner, withdraw: bool = False) -> None:
        """``Conflict`` when a confirmed write of the session is being carried out: its outcome
        ends the turn, so the session cannot be cancelled now; and, unless ``withdraw``, when one
        awaits approval (stopping a turn is not withdrawing the request)."""
        ...

    async def cancel_drafts(self, session_id: str, who: Identity) -> None:
        """Cancel the cancelled session's draft proposals (one the business system already
        carried out keeps that outcome)."""
        ...


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.time()


@dataclass(slots=True)
class AsyncJob:
    """An external job a session (or a DSL replay) waits for. Only ``token_hash`` is stored."""

    job_id: str
    session_id: str
    tool_call_id: str
    tool_id: str
    token_hash: str
    status: str = "PENDING"  # PENDING | SUCCEEDED | FAILED
    result: Any = None
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    deadline: float = 0.0
    applied: bool = False
    kind: str = "session"  # "session" | "replay"


class CommitGuard(Protocol):
    """A store-level write run first in a commit's transaction (``tether.store.writer.Write``: an
    op's outcome on its row, with its audit row). Made and run by a store; the core only carries it."""

    @property
    def run(self) -> Callable[[Any], Any]: ...


@dataclass(slots=True)
class Commit:
    """Everything one step writes, committed atomically: the session's new and replaced messages,
    its row (version-checked), its events, new jobs and jobs whose result is now applied.

    ``guard`` is opaque to the core: a store-level write run first in the same transaction (an
    op's outcome on its row with its audit row); when it matches nothing the store raises
    ``GuardRefused`` and nothing of the commit lands. Only the store that made it can run it."""

    session: AgentSession
    events: list[RuntimeEvent] = field(default_factory=list)
    new_jobs: list[AsyncJob] = field(default_factory=list)
    applied_job_ids: list[str] = field(default_factory=list)
    guard: CommitGuard | None = None


@dataclass(slots=True)
class SessionSummary:
    """A session as its owner's conversation list shows it: no transcript, no steps."""

    session_id: str
    title: str
    status: Status
    archived: bool
    created_at: float
    updated_at: float


class SessionStore(Protocol):
    """Durable sessions, transcripts, steps, events and async jobs.

    ``commit`` writes incrementally, O(what changed): new message rows, replaced rows by index,
    new step rows, steps whose stored status was ``PENDING`` and that changed since (by index;
    ``SUCCEEDED`` and ``FAILED`` steps are final), one row holding the commit's events, and one
    session row update. It checks ``session.version``: a stale version raises ``Conflict`` and
    writes nothing, as does an event whose seq is not above the session's last stored one. On
    success it bumps ``version``, sets ``persisted_count`` and clears ``replaced``.
    A RUNNING session's lease is renewed by every commit; ``expired_running`` finds the ones
    whose runner died.

    ``title`` and ``archived`` are the owner's: set at creation (not archived), then changed only
    by ``rename`` and ``set_archived``, which neither bump the version nor touch ``updated_at``
    (a commit never writes them, so a rename during a running turn is kept).
    """

    lease_seconds: float  # how long a running session's lease lasts; its runner renews it every third

    async def create(self, commit: Commit) -> None: ...

    async def commit(self, commit: Commit) -> None: ...

    async def load(self, session_id: str, owner: Owner | None = None) -> AgentSession: ...

    async def get_summary(self, session_id: str, owner: Owner) -> SessionSummary:
        """``NotFound`` unless ``owner`` owns the session."""
        ...

    async def list_sessions(
        self, owner: Owner, limit: int, offset: int, query: str | None = None, archived: bool | None = False
    ) -> list[SessionSummary]:
        """The owner's sessions, most recently updated first. ``query``: only titles containing it
        (case-insensitive, taken literally: ``%`` and ``_`` are no wildcards); ``archived``: only
        archived (True), only not archived (False), or both (None)."""
        ...

    async def rename(self, session_id: str, owner: Owner, title: str) -> SessionSummary:
        """``NotFound`` unless ``owner`` owns the session."""
        ...

    async def set_archived(self, session_id: str, owner: Owner, archived: bool) -> SessionSummary:
        """``NotFound`` unless ``owner`` owns the session."""
        ...

    async def renew_lease(self, session_id: str, version: int) -> bool: ...

    async def expired_running(self) -> list[str]: ...

    async def claim_expired(self, limit: int = 100) -> list[str]:
        """RUNNING sessions whose lease passed, now leased to this process (no other process's
        claim returns the same one): the caller recovers them."""
        ...

    async def claim_session(self, session_id: str) -> bool:
        """Lease a session that is not RUNNING and held by no process; False otherwise."""
        ...

    async def release_session(self, session_id: str) -> bool:
        """Drop this process's claim on a session that is not RUNNING."""
        ...

    async def hand_back_leases(self) -> int:
        """Every lease this process holds lapses now (shutdown): another process takes over."""
        ...

    async def claim_overdue_jobs(self, reason: str, limit: int = 100) -> list[AsyncJob]:
        """PENDING jobs past their deadline, failed with ``reason`` by this call alone."""
        ...

    async def events_after(self, session_id: str, after: int, limit: int = 500) -> list[RuntimeEvent]: ...

    async def get_job(self, job_id: str) -> AsyncJob | None: ...

    async def finish_job(self, job_id: str, status: str, result: Any, error: str | None) -> bool:
        """Record a job's outcome once: True if this call moved it out of PENDING."""
        ...

    async def unapplied_jobs(self, session_id: str) -> list[AsyncJob]:
        """Finished jobs of the session whose result is not yet in its transcript."""
        ...

    async def sessions_with_unapplied_jobs(self) -> list[str]:
        """Sessions holding a finished job whose result is not yet in the transcript (a crash
        between storing a callback and applying it)."""
        ...


@dataclass(slots=True)
class DslStep:
    step_id: str
    tool_id: str
    args: dict[str, Any]  # literals, ${params.x} and ${steps.sN.path} references
    schema_hash: str


@dataclass(slots=True)
class DslSnapshot:
    dsl_id: str
    owner: Owner
    source_session_id: str
    title: str
    params: dict[str, Any]
    steps: list[DslStep]
    created_at: float = field(default_factory=time.time)


class DslStore(Protocol):
    async def save_dsl(self, dsl: DslSnapshot) -> None: ...

    def stage_dsl(self, session_id: str, dsl: DslSnapshot) -> None:
        """Save ``dsl`` with the session's next commit — for a store that also keeps the sessions
        (the runtime stages only then), so the snapshot and its DSL_COMPILED event land together."""
        ...

    async def get_dsl(self, dsl_id: str, owner: Owner | None = None) -> DslSnapshot: ...

    async def log_execution(
        self,
        dsl_id: str,
        execution_id: str,
        params: dict[str, Any],
        status: str,
        steps: list[dict[str, Any]],
        error: str | None,
    ) -> None: ...

    async def executions(self, dsl_id: str) -> list[dict[str, Any]]: ...


class WakeUp(Protocol):
    """What a subscriber is woken with: the event itself, or (from another replica) the seq stored."""

    @property
    def session_id(self) -> str: ...

    @property
    def seq(self) -> int: ...


class Subscription(Protocol):
    async def get(self, timeout: float) -> WakeUp | None:
        """The next wake-up, or None after ``timeout`` seconds (then read the store anyway)."""
        ...

    def close(self) -> None: ...


class EventBus(Protocol):
    """Live fan-out of already-persisted events (in-process; Redis when scaled out)."""

    def publish(self, event: RuntimeEvent) -> None: ...

    def subscribe(self, session_id: str) -> Subscription: ...


class UsageBudget(Protocol):
    """A user's budgets for model use and tool calls (implemented outside the core: ``tether.abuse``).
    The turn charges every model call it made; the pipeline asks before every tool call. Whether a
    turn may start at all is the entry points' question, answered before the core runs."""

    async def charge_model(self, owner: Owner, usage: Usage | None) -> None: ...

    async def take_tool_call(self, owner: Owner) -> ToolError | None:
        """None: the call may run (and is counted); otherwise why not, as the call's error (coded
        ``tool.budget`` with the limit and the seconds left, for the person's language)."""
        ...


class NoBudget:
    """No budgets: what the core runs with unless it is given one."""

    async def charge_model(self, owner: Owner, usage: Usage | None) -> None:
        return None

    async def take_tool_call(self, owner: Owner) -> ToolError | None:
        return None
