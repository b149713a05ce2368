"""The tracing and metrics port: the core says *what* it is doing (a turn, a model call, a tool
call, an op's confirm or execution) and adapters decide what to record (``tether.telemetry``:
OpenTelemetry spans, Prometheus metrics). The core imports no telemetry SDK.

``telemetry.span(name, attributes)`` is a context manager around the work; the handle it yields
takes more attributes as they become known (``set``), content that only a deployment that opted
in may record (``content``: prompts, completions, business data — given as a callable so nothing
is serialised when no one records it), and the failure (``fail``). An exception leaving the block
marks the span failed too. Never pass a credential: attributes are not filtered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, Protocol

# span names: one vocabulary for every adapter
TURN = "tether.turn"
MODEL_CALL = "tether.model"
TOOL_CALL = "tether.tool"
OP_CONFIRM = "tether.op.confirm"
OP_EXECUTE = "tether.op.execute"


class Span(Protocol):
    def set(self, key: str, value: Any) -> None: ...

    def content(self, key: str, value: Callable[[], Any]) -> None: ...

    def fail(self, message: str) -> None: ...


class Telemetry(Protocol):
    def span(self, name: str, attributes: dict[str, Any]) -> AbstractContextManager[Span]: ...


class _NoSpan:
    def set(self, key: str, value: Any) -> None:
        pass

    def content(self, key: str, value: Callable[[], Any]) -> None:
        pass

    def fail(self, message: str) -> None:
        pass


NO_SPAN = _NoSpan()


class NoTelemetry:
    """The default: records nothing."""

    @contextmanager
    def span(self, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
        yield NO_SPAN


class _Fan:
    def __init__(self, spans: list[Span]) -> None:
        self.spans = spans

    def set(self, key: str, value: Any) -> None:
        for s in self.spans:
            s.set(key, value)

    def content(self, key: str, value: Callable[[], Any]) -> None:
        for s in self.spans:
            s.content(key, value)

    def fail(self, message: str) -> None:
        for s in self.spans:
            s.fail(message)


class MultiTelemetry:
    """Several adapters at once (traces and metrics): one span in the core, one in each."""

    def __init__(self, parts: Sequence[Telemetry]) -> None:
        self.parts = list(parts)

    @contextmanager
    def span(self, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
        with ExitStack() as stack:
            spans = [stack.enter_context(p.span(name, dict(attributes))) for p in self.parts]
            yield _Fan(spans)
