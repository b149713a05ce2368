"""Answering a session that waits for a person: a question's or form's answer, or a confirmed
proposal's outcome, settles its interaction, and the turn goes on — or keeps waiting when the same
message asked more, or for an async job. The runtime's entry points (``post_message``,
``complete_interaction``, ``deliver_outcome``) come here.

Whether an answer is acceptable is decided once, in ``core.answer_check.accept_answer``: an answer is
checked before anything changes, so a refused one (422) leaves the session waiting as it was. Never
answer an interaction twice, and never a lapsed login: that one is closed, and the user's next
message is a new request.
"""

from __future__ import annotations

from typing import Any

from tether.core.answer_check import accept_answer_of
from tether.core.closing import settle_call
from tether.core.decision import waiting_status
from tether.core.events import EventType
from tether.core.ports import CommitGuard
from tether.core.running import TurnRunner
from tether.core.session import AgentSession, Identity, Status
from tether.core.tools import ToolRegistry
from tether.core.turn import Turn
from tether.errors import Conflict

# what a settled call's tool message is labelled: a question's or form's result is what the person
# typed ("answer": theirs, never marked tainted in a proposal — ops.taint); a proposal's outcome
# comes from the op queue ("value")
ANSWER_KINDS = {"question": "answer", "form": "answer"}
LOGIN_LAPSED = "the user's login had expired; they logged in again and sent a new message"


async def answer(
    runner: TurnRunner,
    s: AgentSession,
    interaction_id: str,
    result: dict[str, Any],
    identity: Identity | None = None,
    message: str | None = None,
    leading: list[tuple[str, dict[str, Any]]] | None = None,
    guard: CommitGuard | None = None,
) -> AgentSession:
    """Settle the interaction with ``result`` and go on; ``leading`` events (an op's outcome) are
    emitted first, in the same commit, which also carries ``guard`` (``Commit.guard``)."""
    pending = s.pending_interaction
    if interaction_id in s.answered_interactions:
        raise Conflict(f"interaction {interaction_id!r} is already answered")
    if s.status not in (Status.WAITING_USER_INPUT, Status.WAITING_CONFIRMATION) or not pending:
        raise Conflict(f"the session is {s.status.value}, not waiting for an answer")
    entry = next((e for e in s.pending_entries() if e["interactionId"] == interaction_id), None)
    if entry is not None and entry["kind"] == "login":
        raise Conflict("the login expired: log in again, then send your request as a new message")
    if entry is not None:  # a refusal (422) here leaves the session waiting
        result = await _checked_answer(runner.deps.pipeline.registry, entry, result, identity)
    entry = s.take_interaction(interaction_id)
    call_id, tool_id = entry["toolCallId"], entry["toolId"]
    answered = {
        "interactionId": interaction_id,
        "kind": entry["kind"],
        "toolCallId": call_id,
        "toolId": tool_id,
        "result": result,
    }
    if s.pending_interaction is not None:  # the same message asked more: wait for the next one
        target = waiting_status(s.pending_interaction)
        if s.status is not target:
            s.transition(target)
        turn = runner.turn(s, resumed=True, guard=guard)
    elif s.waiting_job_ids:
        s.transition(Status.WAITING_ASYNC_CALLBACK)
        turn = runner.turn(s, resumed=True, guard=guard)
    else:
        s.transition(Status.RUNNING)
        turn = runner.turn(s, resumed=True, identity=identity, guard=guard)
    settle_call(s, call_id, tool_id, ANSWER_KINDS.get(entry["kind"], "value"), result, turn.now())
    _note_answer(turn, answered, message, leading)
    if s.status is Status.RUNNING:
        return await runner.drive(turn)  # stored with the resumed turn's first round (loop.py)
    await turn.commit()
    return s


async def _checked_answer(
    registry: ToolRegistry, entry: dict[str, Any], result: dict[str, Any], identity: Identity | None
) -> dict[str, Any]:
    """The answer checked against what asked for it (a form's values against its schema and,
    as the person answering, the business system); a proposal's outcome comes from the op
    queue, not from a person's text."""
    if entry["kind"] == "proposal":
        return result
    return await accept_answer_of(registry.get(str(entry["toolId"])), entry, result, identity)


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


def close_lapsed_login(s: AgentSession, pending: dict[str, Any], now: float) -> None:
    error = {"error": LOGIN_LAPSED, "retryable": True}
    settle_call(s, pending["toolCallId"], pending["toolId"], "error", error, now)
    s.pending_interaction = None
