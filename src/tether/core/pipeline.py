"""The one governed path every tool call takes, live or replayed.

Order: allowed-set check → authorisation → argument parsing and validation (unknown keys
rejected) → execute with timeout and retry policy → normalise → record step → audit → events.
Every failure becomes that call's error result, so the model can correct itself; nothing here
raises for a bad call. Tool output reaches the model framed as data.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from tether.core import error_messages as said
from tether.core.events import EventType
from tether.core.messages import ToolCall
from tether.core.ports import Clock, NoBudget, SystemClock, UsageBudget
from tether.core.session import Step
from tether.core.telemetry import TOOL_CALL, NoTelemetry, Telemetry
from tether.core.tools import (
    AsyncJobStarted,
    ErrorResult,
    Handle,
    Interaction,
    Table,
    Tool,
    ToolContext,
    ToolRegistry,
)
from tether.errors import InvalidInput, ToolError, Unavailable

Emit = Callable[[str, dict[str, Any]], None]
SUMMARY_CHARS = 80


class AuditSink(Protocol):
    """Append-only record of reads and writes of business data."""

    async def record(self, ctx: ToolContext, tool_id: str, args: dict[str, Any], outcome: str) -> None: ...


@dataclass(slots=True)
class Outcome:
    """What a call produced: ``content`` is the tool message the model sees; ``data`` the
    normalised value recorded on the step (and referenced by DSL steps)."""

    kind: str  # value | table | handle | async_job | interaction | error
    content: str
    data: Any
    step: Step
    job_ticket: Any = None
    interaction: Interaction | None = None


def frame(tool_id: str, kind: str, data: Any) -> str:
    """The tool message body: JSON data labelled as a tool's output, never as instructions."""
    return json.dumps({"tool": tool_id, "kind": kind, "data": data}, ensure_ascii=False, default=str)


_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def summarise(data: Any) -> str:
    """A short preview for events and progress displays; the full result is in the transcript.
    Only the front of ``data`` that the preview shows is encoded (``_front``), not every row."""
    text = _compact(_front(data, SUMMARY_CHARS)[0])
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _front(value: Any, budget: int) -> tuple[Any, int]:
    """``value`` with its lists and dicts cut once their JSON is surely past ``budget`` characters,
    and a lower bound of that cut value's JSON length. Lengths are counted from below (a string's
    characters and quotes, escapes not counted), so a cut happens only where the full JSON is also
    past ``budget``: the two JSON texts agree on their first ``budget`` characters, and both are
    longer than that when anything was cut."""
    if isinstance(value, (list, tuple)):
        items: list[Any] = []
        used = 1  # "["
        for item in value:
            if used > budget:
                return items, used
            part, length = _front(item, budget - used)
            items.append(part)
            used += length + 1  # the item, then "," or "]"
        return items, used
    if isinstance(value, dict):
        pairs: dict[Any, Any] = {}
        used = 1  # "{"
        for key, item in value.items():
            if used > budget:
                return pairs, used
            key_chars = len(str(key)) + 3  # '"key":'
            part, length = _front(item, budget - used - key_chars)
            pairs[key] = part
            used += key_chars + length + 1
        return pairs, used
    if isinstance(value, str):
        return value, len(value) + 2
    if value is None or isinstance(value, (bool, int, float)):
        return value, len(repr(value)) if not isinstance(value, bool) else 4
    return value, 0  # encoded through str(): nothing known about its length


def _normalise(result: Any, max_rows: int) -> tuple[str, Any, Any, Interaction | None]:
    """-> (kind, data, job_ticket, interaction)"""
    if isinstance(result, ErrorResult):
        data: dict[str, Any] = {"error": result.message, "retryable": result.retryable}
        if result.code:
            data |= {"code": result.code, "params": result.params}
        return "error", data, None, None
    if isinstance(result, AsyncJobStarted):
        return (
            "async_job",
            {"externalJobId": result.ticket.job_id, "message": result.message},
            result.ticket,
            None,
        )
    if isinstance(result, Interaction):
        return "interaction", {"kind": result.kind, "payload": result.payload}, None, result
    if isinstance(result, Table):
        rows = result.rows[:max_rows]
        data = {
            "columns": result.columns,
            "rows": rows,
            "total": result.total,
            "truncated": len(rows) < len(result.rows),
            "nextCursor": result.next_cursor,
        }
        return "table", data, None, None
    if isinstance(result, Handle):
        return "handle", {"handle_id": result.handle_id, **result.summary}, None, None
    if hasattr(result, "__dataclass_fields__"):
        return "value", asdict(result), None, None
    return "value", result, None, None


class ToolPipeline:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        default_timeout_s: float = 60.0,
        max_rows: int = 200,
        audit: AuditSink | None = None,
        telemetry: Telemetry | None = None,
        budget: UsageBudget | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.registry = registry
        self.clock: Clock = clock or SystemClock()
        self.budget: UsageBudget = budget or NoBudget()
        self.default_timeout_s = default_timeout_s
        self.max_rows = max_rows
        self.audit = audit
        self.telemetry: Telemetry = telemetry or NoTelemetry()

    async def run(
        self,
        call: ToolCall,
        allowed: frozenset[str],
        ctx: ToolContext,
        emit: Emit,
        before_execute: Callable[[], Awaitable[None]] | None = None,
    ) -> Outcome:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "tether.session.id": ctx.session_id,
            "tether.turn.id": ctx.turn_id,
            "enduser.id": ctx.owner.user_id,
            "tether.tenant": ctx.owner.tenant,
        }
        with self.telemetry.span(TOOL_CALL, attributes) as span:
            span.content("gen_ai.tool.call.arguments", lambda: call.arguments)
            outcome = await self._run(call, allowed, ctx, emit, before_execute)
            span.set("tether.tool.outcome", outcome.kind)
            if outcome.kind == "error":
                span.fail(str(outcome.data.get("error", "")))
            span.content("gen_ai.tool.call.result", lambda: outcome.content)
            return outcome

    async def _run(
        self,
        call: ToolCall,
        allowed: frozenset[str],
        ctx: ToolContext,
        emit: Emit,
        before_execute: Callable[[], Awaitable[None]] | None,
    ) -> Outcome:
        started = self.clock.now()
        step = Step(ctx.turn_id, call.id, call.name, {}, "FAILED", started_at=started)
        emit(EventType.TOOL_EXECUTION_STARTED, {"toolCallId": call.id, "toolId": call.name})
        try:
            t, args = self._admit(call, allowed, ctx)
            step.args = args
            refused = await self.budget.take_tool_call(ctx.owner)  # the user's tool calls per minute
            if refused:
                raise refused
            if before_execute is not None and not (t.read_only or t.proposes):
                await before_execute()
            result = await self._execute(t, args, ctx)
        except ToolError as exc:
            result = ErrorResult(exc.message, exc.retryable, exc.error_code, dict(exc.params))
        except InvalidInput as exc:  # a tool refusing its input in its own words (its code, where it gives one)
            coded = (exc.code, dict(exc.params)) if exc.code else (said.INVALID_ARGUMENTS, {"tool": call.name})
            result = ErrorResult(exc.message, False, *coded)
        kind, data, ticket, interaction = _normalise(result, self.max_rows)
        step.finished_at = self.clock.now()
        step.result = data
        step.status = {"error": "FAILED", "async_job": "PENDING", "interaction": "PENDING"}.get(kind, "SUCCEEDED")
        content = frame(call.name, kind, data)
        registered = self.registry.get(call.name)
        if self.audit is not None and registered is not None and registered.audited:
            audited = {**step.args, "_audit": ctx.audit_notes} if ctx.audit_notes else step.args
            await self.audit.record(ctx, call.name, audited, kind)
        ms = round((step.finished_at - started) * 1000, 2)
        if kind == "error":
            emit(
                EventType.TOOL_EXECUTION_FAILED,
                {
                    "toolCallId": call.id,
                    "toolId": call.name,
                    "error": data["error"],
                    "durationMs": ms,
                    **{k: data[k] for k in ("code", "params") if k in data},
                },
            )
        elif kind not in ("async_job", "interaction"):
            emit(
                EventType.TOOL_EXECUTION_FINISHED,
                {
                    "toolCallId": call.id,
                    "toolId": call.name,
                    "kind": kind,
                    "summary": summarise(data),
                    "durationMs": ms,
                },
            )
        return Outcome(kind, content, data, step, ticket, interaction)

    def _admit(self, call: ToolCall, allowed: frozenset[str], ctx: ToolContext) -> tuple[Tool, dict[str, Any]]:
        named = {"tool": call.name}
        t = self.registry.get(call.name)
        if t is None:
            raise ToolError(
                f"unknown tool {call.name!r}; available tools: {', '.join(sorted(allowed))}",
                code=said.UNKNOWN_TOOL,
                params=named,
            )
        if call.name not in allowed:
            raise ToolError(
                f"tool {call.name!r} is not allowed in this turn; allowed: {', '.join(sorted(allowed))}",
                code=said.NOT_ALLOWED,
                params=named,
            )
        missing = t.required_grants - ctx.grants
        if missing:
            raise ToolError(
                f"not authorised to use {call.name!r}: missing grant(s) {', '.join(sorted(missing))}",
                code=said.NOT_AUTHORISED,
                params={**named, "grants": ", ".join(sorted(missing))},
            )
        try:
            raw = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError(
                f"arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object",
                retryable=True,
                code=said.BAD_ARGUMENTS,
                params=named,
            ) from None
        if not isinstance(raw, dict):
            raise ToolError("arguments must be a JSON object", retryable=True, code=said.BAD_ARGUMENTS, params=named)
        try:
            return t, t.validate(raw)
        except InvalidInput as exc:  # the model's message names each problem; a person gets the gist
            raise ToolError(exc.message, code=said.INVALID_ARGUMENTS, params=named) from None

    async def _execute(self, t: Tool, args: dict[str, Any], ctx: ToolContext) -> Any:
        timeout = t.timeout_s or self.default_timeout_s
        attempt = 0
        while True:
            try:
                async with asyncio.timeout(timeout):  # in this task: no task of its own per call
                    return await t.run(args, ctx)
            except TimeoutError:
                if attempt >= t.retries:
                    raise ToolError(
                        f"tool {t.name!r} timed out after {timeout:g}s",
                        retryable=True,
                        code=said.TIMEOUT,
                        params={"tool": t.name, "seconds": f"{timeout:g}"},
                    ) from None
            except ToolError as exc:
                if not exc.retryable or attempt >= t.retries:
                    raise
            except Unavailable as exc:  # an outage mid-turn: retryable, and not the tool's bug
                if attempt >= t.retries:
                    raise ToolError(
                        f"tool {t.name!r} could not reach {exc.upstream or 'a system it needs'}: {exc.message}",
                        retryable=True,
                        code=said.UNAVAILABLE,
                        params={
                            "system": exc.upstream.upper() if exc.upstream else t.name,
                            "seconds": exc.retry_after_s,
                        },
                    ) from None
            except (InvalidInput, asyncio.CancelledError):
                raise
            except Exception as exc:  # a tool's own bug: reported to the model, not raised
                raise ToolError(
                    f"tool {t.name!r} failed: {type(exc).__name__}: {exc}", code=said.FAILED, params={"tool": t.name}
                ) from None
            attempt += 1
            await asyncio.sleep(min(0.2 * 2**attempt, 2.0))
