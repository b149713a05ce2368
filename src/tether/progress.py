"""A readable terminal view of a session's event stream (used by ``tether ask`` and the demo)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, TextIO

import httpx

TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED", "WAITING_USER_INPUT", "WAITING_CONFIRMATION"}


class Progress:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.t0 = time.monotonic()
        self.streaming = False
        self.last_id = 0  # the last event shown: a later follow continues after it

    def line(self, text: str) -> None:
        if self.streaming:
            self.out.write("\n")
            self.streaming = False
        self.out.write(f"[{time.monotonic() - self.t0:6.2f}s] {text}\n")
        self.out.flush()

    def show(self, event: dict[str, Any]) -> None:
        self.last_id = max(self.last_id, int(event.get("id") or 0))
        kind, data = event["type"], event.get("data") or {}
        if kind == "TOKEN":
            self.out.write(data.get("delta", ""))
            self.out.flush()
            self.streaming = True
            return
        text = {
            "SESSION_STARTED": lambda: f"session started: {data.get('title', '')}",
            "SKILLS_SELECTED": lambda: (
                f"skills: {', '.join(data.get('selectedSkillIds') or []) or 'none'} "
                f"({data.get('path')}: {data.get('reason')})"
            ),
            "TURN_STARTED": lambda: "turn resumed" if data.get("resumed") else "turn started",
            "MODEL_DECISION": lambda: "model → " + (", ".join(data.get("tools") or []) or "final answer"),
            "TOOL_EXECUTION_STARTED": lambda: f"  ▶ {data.get('toolId')}",
            "TOOL_EXECUTION_FINISHED": lambda: f"  ✔ {data.get('toolId')} ({_took(data)})",
            "TOOL_EXECUTION_FAILED": lambda: f"  ✘ {data.get('toolId')}: {data.get('error')}",
            "WAITING_ASYNC_CALLBACK": lambda: f"  … waiting for async job {data.get('externalJobId', '')[:16]}…",
            "TOOL_CALLBACK_RECEIVED": lambda: f"  ↩ callback for {data.get('toolId')}: {data.get('status')}",
            "QUESTION": lambda: f"? {json.dumps(data.get('payload'), ensure_ascii=False)}",
            "FORM_COLLECT": lambda: f"? form {(data.get('payload') or {}).get('formName', '')}: fill it in (/chat)",
            "WRITE_PROPOSAL": lambda: "\n".join(proposal_lines(data.get("payload") or {})),
            "OP_RESULT": lambda: (
                f"  ⚑ op {str(data.get('opId', ''))[:12]}…: {data.get('state')} {data.get('text') or ''}"
            ),
            "LINK": lambda: f"  → {data.get('url')}",
            "ASSISTANT_MESSAGE": lambda: "answer:\n" + str(data.get("content", "")),
            "DSL_COMPILED": lambda: f"workflow compiled: {data.get('dslId')}",
            "LOGIN_EXPIRED": lambda: (
                f"! {(data.get('payload') or {}).get('message', 'login expired')} (tether login <user>)"
            ),
            "ERROR": lambda: f"! {data.get('message')}",
            "TURN_FINISHED": lambda: (
                f"turn finished: {data.get('status')}" + (f" — {data['reason']}" if data.get("reason") else "")
            ),
        }.get(kind)
        if text is not None:
            self.line(text())


def proposal_lines(proposal: dict[str, Any]) -> list[str]:
    """A write proposal as the person sees it: what, then field: before → after (lines too)."""
    kind = "auto: the ERP executes it on confirm" if proposal.get("auto") else "manual: confirm, then save in the ERP"
    out = [f"✎ proposal {proposal.get('summary', '')} ({kind}); nothing is written until it is confirmed:"]
    for f in proposal.get("diff") or []:
        out.append(f"    {f.get('label') or f.get('field')}: {_shown(f.get('before'))} → {_shown(f.get('after'))}")
    for line in proposal.get("lines") or []:
        fields = ", ".join(
            f"{f.get('label') or f.get('field')} {_shown(f.get('before'))} → {_shown(f.get('after'))}"
            if f.get("before") is not None
            else f"{f.get('label') or f.get('field')} {_shown(f.get('after'))}"
            for f in line.get("fields") or []
        )
        out.append(f"    line {line.get('lineNo', '+')} ({line.get('change')}): {fields}")
    out.append(f"  confirm: POST /api/ops/{proposal.get('opId')}/confirm   cancel: …/cancel")
    return out


def _took(data: dict[str, Any]) -> str:
    """A finished call's time; a background job's result came by callback, timed by the lines above."""
    ms = data.get("durationMs")
    return f"{ms} ms" if ms is not None else "in the background, result by callback"


def _shown(value: Any) -> str:
    return "∅" if value is None or value == "" else str(value)


def stream_events(
    http: httpx.Client, session_id: str, timeout_s: float = 900, after: int = 0
) -> Iterator[dict[str, Any]]:
    """Every event envelope of a session's SSE stream after ``after``, in order, reconnecting after
    the last one seen when the connection drops; ends when ``timeout_s`` has passed."""
    last = after
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with http.stream(
                "GET",
                f"/api/agent/sessions/{session_id}/events",
                params={"after": last},
                timeout=httpx.Timeout(30, read=60),
            ) as r:
                r.raise_for_status()
                event_type = ""
                for raw in r.iter_lines():
                    if raw.startswith("event:"):
                        event_type = raw[6:].strip()
                    elif raw.startswith("data:") and event_type:
                        event = json.loads(raw[5:].strip())
                        last = event["id"]
                        yield event
        except httpx.TransportError:
            time.sleep(0.5)  # reconnect and continue after the last event seen


def follow_session(http: httpx.Client, session_id: str, progress: Progress, timeout_s: float = 900) -> str:
    """Show events (after the last one ``progress`` showed) until a turn finishes in a state that
    needs no more waiting; -> the status."""
    return follow_turn(http, session_id, progress, timeout_s)[0]


def follow_turn(
    http: httpx.Client, session_id: str, progress: Progress, timeout_s: float = 900
) -> tuple[str, str | None]:
    """``follow_session``'s, with the turn's outcome (``answered``, ``no_rows``, …; none: failed)."""
    for event in stream_events(http, session_id, timeout_s, after=progress.last_id):
        progress.show(event)
        data = event.get("data") or {}
        status = data.get("status")
        if event["type"] == "TURN_FINISHED" and status in TERMINAL:
            outcome = data.get("outcome")
            return str(status), str(outcome) if outcome else None
    return "TIMEOUT", None
