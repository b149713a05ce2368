"""Adapters of the core's telemetry port (``tether.core.telemetry``): Prometheus metrics
(``metrics.py``) and OpenTelemetry traces exported over OTLP/HTTP (``tracing.py``)."""

from __future__ import annotations

from tether.core.telemetry import MultiTelemetry, Telemetry
from tether.settings import Settings
from tether.telemetry.metrics import Metrics
from tether.telemetry.tracing import Tracing, build_tracing

__all__ = ["Metrics", "Tracing", "build_telemetry"]


def build_telemetry(settings: Settings) -> tuple[Telemetry, Metrics, Tracing | None]:
    """Metrics always (served at ``/metrics``); traces when ``TETHER_OTEL_ENDPOINT`` is set."""
    metrics = Metrics()
    tracing = build_tracing(settings)
    parts: list[Telemetry] = [metrics] if tracing is None else [tracing, metrics]
    return MultiTelemetry(parts), metrics, tracing
