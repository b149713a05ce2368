"""Answering a session that waits for a person: a question's or form's answer, or a confirmed
proposal's outcome, settles its interaction, and the turn goes on — or keeps waiting when the same
message asked more, or for an async job. The runtime's entry points (``post_message``,
``complete_interaction``, ``deliver_outcome``) come here.

Whether an answer is acceptable is decided once, in ``core.answers.accept_answer``: an answer is
checked before anything changes, so a refused one (422) leaves the session waiting as it was. Never
answer an interaction twice, and never a lapsed login: that one is closed, and the user's next
message is a new request.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from tether.core.answers import accept_answer_of
from tether.core.events import EventType
from tether.core.messages import tool_message
from tether.core.pipeline import frame
from tether.core.session import AgentSession, Identity, Status
from tether.core.turn import Turn, TurnDeps
from tether.errors import Conflict

LOGIN_LAPSED = "the user's login had expired; they logged in again and sent a new message"


class Answering:
    """The runtime's part that settles a waiting session's interactions (mixed into ``Runtime``)."""

    deps: TurnDeps

    if TYPE_CHECKING:  # provided by Runtime

        def _turn(
            self, s: AgentSession, resumed: bool, identity: Identity | None = None, guard: Any = None
        ) -> Turn: ...

        async def _drive(self, turn: Turn) -> AgentSession: ...

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
            result = await self._checked_answer(entry, result, identity)  # 422 here leaves the session waiting
        entry = s.take_interaction(interaction_id)
        call_id, tool_id = entry["toolCallId"], entry["toolId"]
        settle_call(s, call_id, tool_id, "value", result)
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
            turn = self._turn(s, resumed=True, guard=guard)
            _note_answer(turn, answered, message, leading)
            await turn.commit()
            return s
        if s.waiting_job_ids:
            s.transition(Status.WAITING_ASYNC_CALLBACK)
            turn = self._turn(s, resumed=True, guard=guard)
            _note_answer(turn, answered, message, leading)
            await turn.commit()
            return s
        s.transition(Status.RUNNING)
        turn = self._turn(s, resumed=True, identity=identity, guard=guard)
        _note_answer(turn, answered, message, leading)  # committed with the resumed turn's start
        return await self._drive(turn)

    async def _checked_answer(
        self, entry: dict[str, Any], result: dict[str, Any], identity: Identity | None
    ) -> dict[str, Any]:
        """The answer checked against what asked for it (a form's values against its schema and,
        as the person answering, the business system); a proposal's outcome comes from the op
        queue, not from a person's text."""
        if entry["kind"] == "proposal":
            return result
        return await accept_answer_of(self.deps.pipeline.registry.get(str(entry["toolId"])), entry, result, identity)


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


def settle_call(s: AgentSession, call_id: str, tool_id: str, kind: str, data: Any) -> None:
    """A call's outcome arrived later (a job's callback, a person's answer, a lapsed login): its tool
    message is replaced in place and its step finished, both with ``data``."""
    index = s.tool_message_index(call_id)
    if index is not None:
        s.set_message(index, tool_message(call_id, frame(tool_id, kind, data)))
    step = s.step(call_id)
    if step is not None:
        step.status, step.result, step.finished_at = ("FAILED" if kind == "error" else "SUCCEEDED"), data, time.time()


def close_lapsed_login(s: AgentSession, pending: dict[str, Any]) -> None:
    settle_call(s, pending["toolCallId"], pending["toolId"], "error", {"error": LOGIN_LAPSED, "retryable": True})
    s.pending_interaction = None
