"""Prometheus metrics, fed by the core's spans and by the app (SSE clients), served at ``/metrics``.

Each app has its own ``CollectorRegistry`` (no module globals: tests build several apps in one
process). Labels are tool names, model names and outcomes only — never a user, a session or data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from tether.core import telemetry as t

CONTENT_TYPE = CONTENT_TYPE_LATEST
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class _MetricSpan:
    def __init__(self) -> None:
        self.attributes: dict[str, Any] = {}
        self.failed = False

    def set(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def content(self, key: str, value: Callable[[], Any]) -> None:
        pass  # metrics never hold content

    def fail(self, message: str) -> None:
        self.failed = True


class Metrics:
    """A ``Telemetry`` adapter that turns spans into counters and histograms."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.turns = Counter(
            "tether_turns", "Turns by outcome (the session's status at the turn's end)", ["outcome"], registry=r
        )
        self.model_seconds = Histogram(
            "tether_model_call_seconds",
            "Latency of one model call",
            ["model", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.tool_seconds = Histogram(
            "tether_tool_call_seconds",
            "Latency of one tool call",
            ["tool", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.tool_errors = Counter(
            "tether_tool_errors", "Tool calls that ended in an error result", ["tool"], registry=r
        )
        self.op_actions = Counter(
            "tether_op_actions", "Op confirms and executions by outcome", ["action", "outcome"], registry=r
        )
        self.limit_refusals = Counter(
            "tether_limit_refusals", "Logins, turns and tool calls refused by an abuse limit", ["kind"], registry=r
        )
        self.jobs_waiting = Gauge("tether_async_jobs_waiting", "Async jobs waiting for their callback", registry=r)
        self.ops = Gauge("tether_ops", "Write ops by state", ["state"], registry=r)
        self.sse_clients = Gauge("tether_sse_clients", "Open SSE event streams", registry=r)

    @contextmanager
    def span(self, name: str, attributes: dict[str, Any]) -> Iterator[t.Span]:
        span = _MetricSpan()
        span.attributes.update(attributes)
        started = time.perf_counter()
        try:
            yield span
        except BaseException:
            span.failed = True
            raise
        finally:
            self._observe(name, span, time.perf_counter() - started)

    def _observe(self, name: str, span: _MetricSpan, seconds: float) -> None:
        a = span.attributes
        outcome = "error" if span.failed else "ok"
        if name == t.TURN:
            self.turns.labels(str(a.get("tether.turn.outcome") or "ERROR")).inc()
        elif name == t.MODEL_CALL:
            model = str(a.get("gen_ai.request.model") or "unknown")
            self.model_seconds.labels(model, outcome).observe(seconds)
        elif name == t.TOOL_CALL:
            tool = str(a.get("gen_ai.tool.name") or "unknown")
            self.tool_seconds.labels(tool, outcome).observe(seconds)
            if span.failed:
                self.tool_errors.labels(tool).inc()
        elif name in (t.OP_CONFIRM, t.OP_EXECUTE):
            action = "confirm" if name == t.OP_CONFIRM else "execute"
            self.op_actions.labels(action, outcome).inc()

    def set_ops(self, counts: dict[str, int]) -> None:
        self.ops.clear()
        for state, n in counts.items():
            self.ops.labels(state).set(n)

    def refused(self, kind: str) -> None:
        """One refusal by an abuse limit (``tether.abuse``): login_user, login_address,
        daily_tokens, daily_model_calls or tool_calls_per_minute."""
        self.limit_refusals.labels(kind).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
