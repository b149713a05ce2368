"""OpenTelemetry traces of the core's spans, exported over OTLP/HTTP (``TETHER_OTEL_ENDPOINT``).

Spans follow the GenAI semantic conventions where they apply (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``, ``gen_ai.tool.*``) and carry
the session and user ids. Prompts, completions, tool arguments and results (business data) are
recorded only with ``TETHER_OTEL_CAPTURE_CONTENT=true``; the core never hands a credential to a
span, and the exporter's headers (``TETHER_OTEL_HEADERS``) are never logged.

The tracer provider is tether's own, not the process-global one, so two apps in one process
(tests) and a host application's own OpenTelemetry set-up do not interfere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span as OtelSpan
from opentelemetry.trace import SpanKind, StatusCode

from tether import __version__
from tether.core import telemetry as t
from tether.settings import Settings

TRACES_PATH = "/v1/traces"
KINDS = {t.MODEL_CALL: SpanKind.CLIENT, t.TOOL_CALL: SpanKind.INTERNAL}


def traces_url(endpoint: str) -> str:
    """``TETHER_OTEL_ENDPOINT`` is the OTLP/HTTP base URL (as ``OTEL_EXPORTER_OTLP_ENDPOINT``):
    ``/v1/traces`` is appended unless it is already there."""
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def parse_headers(raw: str) -> dict[str, str]:
    """``key=value,key2=value2`` (the OTLP exporters' own format; values may contain ``=``)."""
    headers: dict[str, str] = {}
    for part in raw.split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            headers[key.strip()] = value.strip()
    return headers


def _attr(value: Any) -> Any:
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return json.dumps(value, ensure_ascii=False, default=str)


class _Span:
    def __init__(self, span: OtelSpan, capture_content: bool) -> None:
        self.span = span
        self.capture_content = capture_content

    def set(self, key: str, value: Any) -> None:
        self.span.set_attribute(key, _attr(value))

    def content(self, key: str, value: Callable[[], Any]) -> None:
        if self.capture_content:
            self.span.set_attribute(key, _attr(value()))

    def fail(self, message: str) -> None:
        self.span.set_status(StatusCode.ERROR, message)
        self.span.set_attribute("error.type", "tether.error")


class Tracing:
    """A ``Telemetry`` adapter: one OpenTelemetry span per core span."""

    def __init__(self, exporter: SpanExporter, *, capture_content: bool = False, service_name: str = "tether") -> None:
        resource = Resource.create({"service.name": service_name, "service.version": __version__})
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=1000))
        self.tracer = self.provider.get_tracer("tether", __version__)
        self.capture_content = capture_content

    @contextmanager
    def span(self, name: str, attributes: dict[str, Any]) -> Iterator[t.Span]:
        display = _display_name(name, attributes)
        kind = KINDS.get(name, SpanKind.INTERNAL)
        attrs = {k: _attr(v) for k, v in attributes.items()}
        with self.tracer.start_as_current_span(display, kind=kind, attributes=attrs) as span:
            yield _Span(span, self.capture_content)

    def flush(self, timeout_ms: int = 5000) -> bool:
        return self.provider.force_flush(timeout_ms)

    def shutdown(self) -> None:
        self.provider.shutdown()


def _display_name(name: str, a: dict[str, Any]) -> str:
    """GenAI span names are ``{operation} {model}`` and ``execute_tool {tool}``."""
    if name == t.MODEL_CALL:
        return f"chat {a.get('gen_ai.request.model', '')}".strip()
    if name == t.TOOL_CALL:
        return f"execute_tool {a.get('gen_ai.tool.name', '')}".strip()
    return name


def build_tracing(settings: Settings) -> Tracing | None:
    if not settings.otel_endpoint:
        return None
    headers = parse_headers(settings.otel_headers.get_secret_value()) if settings.otel_headers else {}
    exporter = OTLPSpanExporter(endpoint=traces_url(settings.otel_endpoint), headers=headers, timeout=10)
    return Tracing(exporter, capture_content=settings.otel_capture_content, service_name=settings.otel_service_name)
