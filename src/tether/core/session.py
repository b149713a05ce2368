"""AgentSession and its status machine.

The session is plain data; the store persists it incrementally (a row per transcript message),
so it tracks which messages are new or replaced since the last commit. Status changes go through
``transition`` and an illegal one raises; nothing is silently ignored.
"""

from __future__ import annotations

import enum
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from tether.errors import Conflict, IllegalTransition, NotFound


class Status(enum.StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    WAITING_ASYNC_CALLBACK = "WAITING_ASYNC_CALLBACK"
    WAITING_USER_INPUT = "WAITING_USER_INPUT"
    WAITING_CONFIRMATION = "WAITING_CONFIRMATION"
    CANCELLED = "CANCELLED"


# what a finished turn gave the person: an answer, nothing matching the filters, a form they are not
# granted, words not understood, or a question / form / proposal it waits on (none: failed, or
# waiting on a callback)
ANSWERED, NO_ROWS, NOT_GRANTED, NOT_UNDERSTOOD, ASKED = "answered", "no_rows", "not_granted", "not_understood", "asked"
OUTCOMES = frozenset({ANSWERED, NO_ROWS, NOT_GRANTED, NOT_UNDERSTOOD, ASKED})
MAX_ANSWERED = 100
WAITING = frozenset({Status.WAITING_ASYNC_CALLBACK, Status.WAITING_USER_INPUT, Status.WAITING_CONFIRMATION})

# from -> allowed targets. A failed or cancelled session goes on with a new user message.
_TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.RUNNING: frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, *WAITING}),
    Status.SUCCEEDED: frozenset({Status.RUNNING}),
    Status.FAILED: frozenset({Status.RUNNING}),
    Status.WAITING_ASYNC_CALLBACK: frozenset({Status.RUNNING, Status.CANCELLED, Status.FAILED}),
    # answered while async jobs of the same message are still out: back to waiting for them
    # several interactions of one message are answered one by one: between them the session waits
    # for the next (a question after a proposal, or the other way round)
    Status.WAITING_USER_INPUT: frozenset(
        {Status.RUNNING, Status.CANCELLED, Status.WAITING_ASYNC_CALLBACK, Status.WAITING_CONFIRMATION}
    ),
    Status.WAITING_CONFIRMATION: frozenset(
        {Status.RUNNING, Status.CANCELLED, Status.WAITING_ASYNC_CALLBACK, Status.WAITING_USER_INPUT}
    ),
    # stopped by the user: the conversation goes on with their next message
    Status.CANCELLED: frozenset({Status.RUNNING}),
}


def can_transition(current: Status, target: Status) -> bool:
    return target in _TRANSITIONS[current]


@dataclass(slots=True)
class Owner:
    """Who a session belongs to: every lookup is by owner + id."""

    user_id: str
    tenant: str


@dataclass(frozen=True)
class Identity:
    """Who is calling: the owner, the granted ids and — where the business system's token is the
    bearer token (the ERP) — that credential, held for this request and its tool calls only.
    ``credential`` is never stored, logged or shown (excluded from ``repr``)."""

    owner: Owner
    grants: frozenset[str] = frozenset()
    credential: str | None = field(default=None, repr=False, compare=False)
    provider: str = "dev"
    profile: dict[str, Any] = field(default_factory=dict, compare=False)  # display data, no secrets


def split_caller(who: Owner | Identity) -> tuple[Owner, Identity | None]:
    """A plain owner (tests, the Python API) runs with the runtime's default grants and credential."""
    return (who.owner, who) if isinstance(who, Identity) else (who, None)


@dataclass(slots=True)
class Step:
    """One executed tool call (seed: AgentExecutedStep). Successful steps feed the DSL compiler."""

    turn_id: str
    tool_call_id: str
    tool_id: str
    args: dict[str, Any]
    status: str  # SUCCEEDED | FAILED | PENDING
    result: Any = None
    started_at: float = 0.0
    finished_at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "turnId": self.turn_id,
            "toolCallId": self.tool_call_id,
            "toolId": self.tool_id,
            "args": self.args,
            "status": self.status,
            "result": self.result,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Step:
        return cls(
            turn_id=d["turnId"],
            tool_call_id=d["toolCallId"],
            tool_id=d["toolId"],
            args=d.get("args") or {},
            status=d["status"],
            result=d.get("result"),
            started_at=d.get("startedAt", 0.0),
            finished_at=d.get("finishedAt", 0.0),
        )


def new_id(prefix: str) -> str:
    """Time-ordered (ms) then random: rows of one session sit together in the store's indexes."""
    return f"{prefix}-{time.time_ns() // 1_000_000:011x}{secrets.token_hex(6)}"


@dataclass
class AgentSession:
    session_id: str
    owner: Owner
    title: str
    query: str
    global_context: dict[str, Any]
    status: Status = Status.RUNNING
    transcript: list[dict[str, Any]] = field(default_factory=list)
    executed_steps: list[Step] = field(default_factory=list)
    selected_skill_ids: list[str] = field(default_factory=list)
    pending_interaction: dict[str, Any] | None = None
    waiting_job_ids: list[str] = field(default_factory=list)
    current_turn_id: str | None = None
    last_error: str | None = None
    last_error_code: dict[str, Any] | None = None  # {code, params}: ``last_error`` in the person's language
    last_dsl_id: str | None = None
    outcome: str | None = None  # the last finished turn's: one of OUTCOMES
    summary: str | None = None  # the rolling summary of the turns folded out of the prompt (core/summary.py)
    summary_upto: int = 0  # transcript messages before this index are folded into ``summary``
    answered_interactions: list[str] = field(default_factory=list)  # the latest answered ids (a repeat is 409)
    version: int = 0
    last_seq: int = 0  # the last event sequence number assigned in this session
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    # persistence bookkeeping: messages [0, persisted_count) are stored; `replaced` are stored
    # rows whose content changed in memory since.
    persisted_count: int = 0
    replaced: set[int] = field(default_factory=set)

    @classmethod
    def new(cls, owner: Owner, query: str, global_context: dict[str, Any], now: float | None = None) -> AgentSession:
        """A new RUNNING session, created ``now`` (the runtime's clock; the system's when None)."""
        title = query.strip().splitlines()[0][:80] if query.strip() else "session"
        s = cls(new_id("ses"), owner, title, query, dict(global_context))
        if now is not None:
            s.created_at = s.updated_at = now
        return s

    @property
    def waiting_external_job_id(self) -> str | None:
        return self.waiting_job_ids[0] if self.waiting_job_ids else None

    def busy_reason(self) -> str:
        """Why the session cannot take a new message or resume now (a ``Conflict``'s message)."""
        if self.status is Status.RUNNING:
            return "the session is running a turn; wait for it to finish"
        if self.status is Status.WAITING_ASYNC_CALLBACK:
            return "the session is waiting for an async job's callback"
        if self.status is Status.WAITING_CONFIRMATION:
            return "the session is waiting for a write proposal to be confirmed or cancelled"
        return f"the session is {self.status.value}"

    def transition(self, target: Status) -> None:
        if not can_transition(self.status, target):
            raise IllegalTransition(f"session {self.session_id}: {self.status} -> {target} is not allowed")
        self.status = target

    def append(self, message: dict[str, Any]) -> int:
        self.transcript.append(message)
        return len(self.transcript) - 1

    def set_message(self, index: int, message: dict[str, Any]) -> None:
        """Replace a message in place (system prompt refresh, async result by tool_call_id)."""
        self.transcript[index] = message
        if index < self.persisted_count:
            self.replaced.add(index)

    def pending_entries(self) -> list[dict[str, Any]]:
        """Every interaction waiting for the user, in order: the head (``pending_interaction``)
        and those queued behind it by the same assistant message."""
        head = self.pending_interaction
        if not head:
            return []
        first = {k: v for k, v in head.items() if k != "queued"}
        return [first, *head.get("queued", [])]

    def queue_interaction(self, entry: dict[str, Any]) -> None:
        head = self.pending_interaction
        if head is None:
            self.pending_interaction = entry
        else:
            self.pending_interaction = {**head, "queued": [*head.get("queued", []), entry]}

    def take_interaction(self, interaction_id: str) -> dict[str, Any]:
        """Remove one pending interaction (answered): the next one becomes the head.
        An interaction answered before raises ``Conflict``; an unknown one ``NotFound``."""
        if interaction_id in self.answered_interactions:
            raise Conflict(f"interaction {interaction_id!r} is already answered")
        entries = self.pending_entries()
        entry = next((e for e in entries if e["interactionId"] == interaction_id), None)
        if entry is None:
            raise NotFound(f"interaction {interaction_id!r} is not pending in this session")
        rest = [e for e in entries if e is not entry]
        self.pending_interaction = {**rest[0], "queued": rest[1:]} if rest else None
        self.answered_interactions = [*self.answered_interactions[-(MAX_ANSWERED - 1) :], interaction_id]
        return entry

    def tool_message_index(self, tool_call_id: str) -> int | None:
        for i in range(len(self.transcript) - 1, -1, -1):
            m = self.transcript[i]
            if m.get("role") == "tool" and m.get("tool_call_id") == tool_call_id:
                return i
        return None

    def step(self, tool_call_id: str) -> Step | None:
        for s in reversed(self.executed_steps):
            if s.tool_call_id == tool_call_id:
                return s
        return None
