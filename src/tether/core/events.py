"""Runtime events: the observable record of a session, persisted before they are published."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class EventType(enum.StrEnum):
    SESSION_STARTED = "SESSION_STARTED"
    TURN_STARTED = "TURN_STARTED"
    SKILLS_SELECTED = "SKILLS_SELECTED"
    MODEL_DECISION = "MODEL_DECISION"
    TOKEN = "TOKEN"
    TOOL_CALL_REQUESTED = "TOOL_CALL_REQUESTED"
    TOOL_EXECUTION_STARTED = "TOOL_EXECUTION_STARTED"
    TOOL_CALLBACK_RECEIVED = "TOOL_CALLBACK_RECEIVED"
    TOOL_EXECUTION_FINISHED = "TOOL_EXECUTION_FINISHED"
    TOOL_EXECUTION_FAILED = "TOOL_EXECUTION_FAILED"
    WAITING_ASYNC_CALLBACK = "WAITING_ASYNC_CALLBACK"
    QUESTION = "QUESTION"
    FORM_COLLECT = "FORM_COLLECT"
    WRITE_PROPOSAL = "WRITE_PROPOSAL"
    OP_RESULT = "OP_RESULT"
    LINK = "LINK"
    ASSISTANT_MESSAGE = "ASSISTANT_MESSAGE"
    LOGIN_EXPIRED = "LOGIN_EXPIRED"
    ERROR = "ERROR"
    TURN_FINISHED = "TURN_FINISHED"
    DSL_COMPILED = "DSL_COMPILED"
    # append only: the store codes event types by position (store/compact.py EVENT_TYPES)
    USER_MESSAGE = "USER_MESSAGE"  # a follow-up message (the first is SESSION_STARTED's query)
    INTERACTION_ANSWERED = "INTERACTION_ANSWERED"  # a question / form answered, a proposal's outcome delivered


@dataclass(slots=True)
class RuntimeEvent:
    """``seq`` is monotonic per session and assigned when the event is queued for commit."""

    seq: int
    session_id: str
    turn_id: str | None
    type: str
    ts: float
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.seq,
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "type": self.type,
            "ts": self.ts,
            "data": self.data,
        }
