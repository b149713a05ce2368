"""Closing tool calls a turn left without a result — cut off by a cancel, a crash or the turn's
time limit — so the transcript stays valid for any model (every call answered right after it)
and the call's step and events say it failed. Never re-run a call: its effect is reported as
unknown when it may have started. ``settle_call`` gives a call the outcome that came later (a job's
callback, a person's answer, a lapsed login).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tether.core.events import EventType
from tether.core.messages import tool_message
from tether.core.pipeline import frame
from tether.core.session import AgentSession, Step

if TYPE_CHECKING:
    from tether.core.turn import Turn


def unanswered_calls(s: AgentSession) -> list[tuple[dict[str, Any], bool]]:
    """Tool calls with no tool message, each with whether it may have started: calls of one
    message run in order, so only the first unanswered one can have been in flight."""
    answered = {m.get("tool_call_id") for m in s.transcript if m.get("role") == "tool"}
    calls: list[tuple[dict[str, Any], bool]] = []
    for m in s.transcript:
        if m.get("role") == "assistant":
            missing = [c for c in m.get("tool_calls") or [] if c["id"] not in answered]
            calls += [(c, n == 0) for n, c in enumerate(missing)]
    return calls


def call_arguments(arguments: str | None) -> dict[str, Any]:
    """A tool call's JSON arguments as a dict (``{}`` when they are not a JSON object)."""
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def close_call(
    turn: Turn,
    call_id: str,
    tool_id: str,
    reason: str,
    args: dict[str, Any] | None = None,
    mark: dict[str, Any] | None = None,
) -> None:
    """Give the call an error result (in place of its tool message when it has one), end its step
    FAILED and emit TOOL_EXECUTION_FAILED (``mark``: extra event fields)."""
    s, now = turn.session, turn.now()
    index = s.tool_message_index(call_id)
    message = tool_message(call_id, frame(tool_id, "error", {"error": reason, "retryable": False}))
    if index is None:
        s.append(message)
    else:
        s.set_message(index, message)
    step = s.step(call_id)
    if step is None:
        s.executed_steps.append(Step(turn.turn_id, call_id, tool_id, args or {}, "FAILED", {"error": reason}, now, now))
    else:
        step.status, step.result, step.finished_at = "FAILED", {"error": reason}, now
    turn.emit(
        EventType.TOOL_EXECUTION_FAILED, {"toolCallId": call_id, "toolId": tool_id, "error": reason, **(mark or {})}
    )


def close_open_calls(turn: Turn, in_flight: str, not_run: str, mark: dict[str, Any] | None = None) -> None:
    """Close every unanswered call: ``in_flight`` for the one that may have started, ``not_run``
    for those after it."""
    for call, started in unanswered_calls(turn.session):
        fn = call["function"]
        close_call(
            turn, call["id"], fn["name"], in_flight if started else not_run, call_arguments(fn.get("arguments")), mark
        )


def settle_call(s: AgentSession, call_id: str, tool_id: str, kind: str, data: Any, now: float) -> None:
    """A call's outcome arrived later (a job's callback, a person's answer, a lapsed login): its tool
    message is replaced in place and its step finished, both with ``data``."""
    index = s.tool_message_index(call_id)
    if index is not None:
        s.set_message(index, tool_message(call_id, frame(tool_id, kind, data)))
    step = s.step(call_id)
    if step is not None:
        step.status, step.result, step.finished_at = ("FAILED" if kind == "error" else "SUCCEEDED"), data, now
