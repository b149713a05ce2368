"""AG-UI onto tether's sessions (``POST /api/agui``, route in ``app/routes/agui.py``).

An AG-UI thread *is* a tether session: ``threadId`` is the session id (a new thread id starts a
session with that id; an existing one continues it, owner-checked like every lookup). A run is one
turn: the input's last user message starts or continues the session, or ``resume`` answers its
interrupts — a question or form is answered, a write proposal is confirmed (``resolved``) or
cancelled (``cancelled``) through the op queue, exactly as ``POST /api/ops/{id}/confirm`` does. The
run's events are read from the store (as the SSE stream reads them) and translated:

| tether event | AG-UI events |
|---|---|
| ``TOKEN``, ``ASSISTANT_MESSAGE`` | ``TEXT_MESSAGE_START`` / ``_CONTENT`` / ``_END`` |
| ``TOOL_CALL_REQUESTED`` | ``TOOL_CALL_START``, ``TOOL_CALL_ARGS``, ``TOOL_CALL_END`` |
| ``TOOL_EXECUTION_FINISHED`` / ``_FAILED`` | ``TOOL_CALL_RESULT`` |
| ``QUESTION``, ``FORM_COLLECT``, ``WRITE_PROPOSAL`` | interrupts of ``RUN_FINISHED`` (outcome ``interrupt``) |
| ``OP_RESULT``, ``LINK``, ``SKILLS_SELECTED``, ``DSL_COMPILED`` | ``CUSTOM`` (``tether.<TYPE>``) |
| the turn's end | ``STATE_SNAPSHOT`` (the session), then ``RUN_FINISHED`` or ``RUN_ERROR`` |

Every event is an ``ag-ui-protocol`` model, encoded by its ``EventEncoder``.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import RunFinishedInterruptOutcome, RunFinishedSuccessOutcome

from tether.core.events import EventType, RuntimeEvent
from tether.core.session import AgentSession
from tether.errors import InvalidInput

THREAD_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
CUSTOM = frozenset({EventType.OP_RESULT, EventType.LINK, EventType.SKILLS_SELECTED, EventType.DSL_COMPILED})
INTERRUPTS = {EventType.QUESTION: "question", EventType.FORM_COLLECT: "form", EventType.WRITE_PROPOSAL: "proposal"}


def check_thread_id(thread_id: str) -> str:
    if not THREAD_ID.match(thread_id):
        raise InvalidInput("threadId must be 1-64 letters, digits, '_', '-', '.', ':'", field="threadId")
    return thread_id


def last_user_text(run: RunAgentInput) -> str | None:
    for m in reversed(run.messages):
        if getattr(m, "role", None) == "user":
            content: Any = getattr(m, "content", None)
            if isinstance(content, str):
                return content
            parts = content if isinstance(content, list) else []
            return "\n".join(str(getattr(p, "text", "")) for p in parts if getattr(p, "type", "") == "text")
    return None


def answer_of(kind: str, payload: Any) -> dict[str, Any]:
    """A resume entry's payload as a tether answer: ``{"answer": …}`` for a question (or a plain
    string), ``{"values": …}`` for a form (or the values object itself)."""
    if kind == "question":
        if isinstance(payload, dict) and "answer" in payload:
            return {"answer": payload["answer"]}
        return {"answer": payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)}
    if isinstance(payload, dict) and isinstance(payload.get("values"), dict):
        return {"values": payload["values"]}
    if isinstance(payload, dict):
        return {"values": payload}
    raise InvalidInput("a form's resume payload is its values object", field="resume")


def interrupt(entry: dict[str, Any]) -> Interrupt:
    """A pending tether interaction as an AG-UI interrupt (``id`` = the interaction id)."""
    kind, payload = entry["kind"], entry.get("payload") or {}
    schema: dict[str, Any]
    if kind == "question":
        message = str(payload.get("question") or "")
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    elif kind == "form":
        message = f"Fill in {payload.get('formName') or payload.get('formId')}"
        fields = payload.get("fields") or []
        schema = {
            "type": "object",
            "properties": {"values": {"type": "object", "properties": {str(f["column"]): {} for f in fields}}},
            "required": ["values"],
        }
    elif kind == "proposal":
        message = str(payload.get("summary") or "Confirm this write")
        schema = {"type": "object", "description": "resolved: confirm the write; cancelled: cancel it"}
    else:
        message = str(payload.get("message") or kind)
        schema = {"type": "object"}
    return Interrupt(
        id=str(entry["interactionId"]),
        reason=f"tether.{kind}",
        message=message,
        tool_call_id=entry.get("toolCallId"),
        response_schema=schema,
        metadata={"tether": {"kind": kind, "payload": payload}},
    )


def snapshot(s: AgentSession) -> dict[str, Any]:
    return {
        "sessionId": s.session_id,
        "status": s.status.value,
        "title": s.title,
        "pendingInteractions": s.pending_entries(),
        "waitingExternalJobIds": list(s.waiting_job_ids),
        "lastDslId": s.last_dsl_id,
        "lastError": s.last_error,
        "outcome": s.outcome,  # the turn's: answered | no_rows | not_granted | not_understood | asked
    }


class Translator:
    """tether events of one run → AG-UI events (text messages opened and closed in order)."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.message_id: str | None = None
        self.failed: str | None = None
        self.finished = False

    def start(self) -> list[BaseEvent]:
        return [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def _open(self) -> list[BaseEvent]:
        if self.message_id is not None:
            return []
        self.message_id = f"msg-{secrets.token_hex(8)}"
        return [TextMessageStartEvent(message_id=self.message_id, role="assistant")]

    def _close(self) -> list[BaseEvent]:
        if self.message_id is None:
            return []
        out: list[BaseEvent] = [TextMessageEndEvent(message_id=self.message_id)]
        self.message_id = None
        return out

    def event(self, e: RuntimeEvent) -> list[BaseEvent]:
        d, t = e.data, e.type
        if t == EventType.TOKEN:
            delta = str(d.get("delta") or "")
            return (
                [*self._open(), TextMessageContentEvent(message_id=str(self.message_id), delta=delta)] if delta else []
            )
        if t == EventType.ASSISTANT_MESSAGE:
            if self.message_id is not None:  # streamed already
                return self._close()
            content = str(d.get("content") or "")
            if not content:
                return []
            opened = self._open()
            return [*opened, TextMessageContentEvent(message_id=str(self.message_id), delta=content), *self._close()]
        if t == EventType.TOOL_CALL_REQUESTED:
            call_id, args = str(d["toolCallId"]), str(d.get("arguments") or "")
            out: list[BaseEvent] = [
                *self._close(),
                ToolCallStartEvent(tool_call_id=call_id, tool_call_name=str(d["toolId"])),
            ]
            if args:
                out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=args))
            return [*out, ToolCallEndEvent(tool_call_id=call_id)]
        if t in (EventType.TOOL_EXECUTION_FINISHED, EventType.TOOL_EXECUTION_FAILED):
            body: dict[str, Any] = {"summary": d.get("summary")}
            if t == EventType.TOOL_EXECUTION_FAILED:  # a coded failure keeps its code for the client
                body = {"error": d["error"], **{k: d[k] for k in ("code", "params") if k in d}}
            return [
                ToolCallResultEvent(
                    message_id=f"tool-{d['toolCallId']}",
                    tool_call_id=str(d["toolCallId"]),
                    content=json.dumps({"tool": d.get("toolId"), **body}, ensure_ascii=False),
                    role="tool",
                )
            ]
        if t in CUSTOM:
            return [CustomEvent(name=f"tether.{t}", value=d)]
        if t == EventType.TURN_FINISHED:
            self.finished = True
            if d.get("status") == "FAILED":
                self.failed = str(d.get("reason") or "the turn failed")
        return []

    def awaiting(self, views: list[dict[str, Any]]) -> list[BaseEvent]:
        """Confirmed ops an approval policy holds (``tether.APPROVAL_AWAITING``: the op's view with
        what it waits for); their outcome arrives later, on the thread's next run or the op's read."""
        return [*self._close(), *(CustomEvent(name="tether.APPROVAL_AWAITING", value=v) for v in views)]

    def end(self, s: AgentSession, error: str | None = None) -> list[BaseEvent]:
        out: list[BaseEvent] = [*self._close(), StateSnapshotEvent(snapshot=snapshot(s))]
        reason = error or self.failed
        if reason is not None:
            return [*out, RunErrorEvent(message=reason, code="TETHER_RUN_FAILED")]
        pending = s.pending_entries()
        outcome: Any = (
            RunFinishedInterruptOutcome(interrupts=[interrupt(p) for p in pending])
            if pending
            else RunFinishedSuccessOutcome()
        )
        return [*out, RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome)]


__all__ = ["INTERRUPTS", "Translator", "answer_of", "check_thread_id", "interrupt", "last_user_text", "snapshot"]
