"""The ``ChatModel`` adapter for any OpenAI-compatible Chat Completions endpoint.

DeepSeek, Qwen (DashScope compatible mode), Ollama, vLLM and OpenAI all speak this protocol; the
official ``openai`` SDK does the HTTP. This module owns the retry policy (the SDK's own retries
are off, so there is exactly one policy), assembles streamed deltas into a ``ModelReply``, and
translates every SDK exception into ``ModelError`` at the boundary: nothing from the SDK escapes,
and the API key never appears in a message, an exception chain or a log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

try:
    import openai
except ImportError as _missing:  # pragma: no cover - depends on the installation
    raise ImportError(
        "tether's OpenAI-compatible model adapter needs the `openai` package; "
        "install it with `uv add openai` or `pip install 'openai>=1.40'`"
    ) from _missing

from tether.core.messages import ModelReply, ModelRequest, TokenSink, ToolCall, Usage
from tether.errors import ModelError
from tether.models.openai_config import OpenAICompatConfig, resolve_openai_config

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 60.0  # a longer Retry-After is ignored in favour of our own backoff
_DETAIL_LIMIT = 300

_STATUS_TEXT = {
    400: "rejected the request",
    401: "rejected the API key",
    403: "refused access with this API key",
    404: "does not know this model or path",
    408: "timed out handling the request",
    409: "reported a conflict",
    413: "rejected the request as too large",
    422: "could not process the request",
    429: "is rate-limiting requests",
}


class ModelEndpointError(ModelError):
    """A ``ModelError`` from an HTTP endpoint; ``status`` is the HTTP status when there was one."""

    def __init__(
        self, message: str, retryable: bool, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message, retryable)
        self.status = status
        self.retry_after_s = retry_after_s


class OpenAICompatModel:
    """A ``ChatModel`` over ``openai.AsyncOpenAI``; one instance per configured endpoint."""

    def __init__(self, config: OpenAICompatConfig) -> None:
        self.config = config
        self.name = f"{config.provider}:{config.model}"
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAICompatModel({self.name!r}, base_url={self.config.display_url!r})"

    async def chat(self, request: ModelRequest) -> ModelReply:
        """Send one request, retrying per policy; raise ``ModelError`` when it cannot succeed.

        A stream that fails after it has passed tokens to ``request.on_token`` is not retried,
        so the sink never sees the same text twice.
        """
        attempt = 0
        while True:
            sink = _Sink(request.on_token)
            try:
                with map_exceptions(self.config):
                    return await self._attempt(request, sink)
            except ModelEndpointError as err:
                if err.retryable and sink.used:
                    raise ModelEndpointError(
                        f"{err.message} (the stream broke after output began; not retried)",
                        retryable=True,
                        status=err.status,
                    ) from None
                if not err.retryable or attempt >= self.config.max_retries:
                    raise
                delay = self._backoff(attempt, err.retry_after_s)
                attempt += 1
                log.warning(
                    "model %s: %s; retry %d of %d in %.2fs",
                    self.name,
                    err.message,
                    attempt,
                    self.config.max_retries,
                    delay,
                )
                await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """Close the HTTP client and its connections; call it at shutdown."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _attempt(self, request: ModelRequest, sink: _Sink) -> ModelReply:
        # The SDK's overloads key on a literal ``stream``; one Any-typed call covers both shapes.
        create: Any = self._client_for_loop().chat.completions.create
        if self.config.stream:
            stream = await create(**self._request_body(request))
            assembler = StreamAssembler()
            async with stream:  # closes the response on error or cancellation too
                async for chunk in stream:
                    delta = assembler.add(chunk)
                    if delta:
                        await sink(delta)
            return assembler.reply(self.config.provider)
        reply = parse_completion(await create(**self._request_body(request)), self.config.provider)
        if reply.content:
            await sink(reply.content)
        return reply

    def _request_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.config.model, "messages": request.messages}
        if request.tools:
            body["tools"] = [as_function_tool(tool) for tool in request.tools]
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        if self.config.stream:
            body["stream"] = True
            if self.config.stream_usage:
                body["stream_options"] = {"include_usage": True}
        return body

    def _client_for_loop(self) -> openai.AsyncOpenAI:
        # A connection pool belongs to the event loop that first used it, so a new loop gets a new
        # client. We pass our own HTTP client: the SDK's default one closes itself from ``__del__``
        # by scheduling a task on whatever loop is running then, which fails for a finished loop.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = openai.AsyncOpenAI(
                api_key=self.config.api_key,
                base_url=self.config.base_url,
                timeout=self.config.timeout_s,
                max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(),
            )
            self._client_loop = loop
        return self._client

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None and 0 <= retry_after_s <= MAX_RETRY_AFTER_S:
            return retry_after_s
        delay = min(self.config.max_backoff_s, self.config.backoff_s * 2**attempt)
        return delay * random.uniform(0.75, 1.0)


def build_openai_model(
    provider: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> OpenAICompatModel:
    """Build the adapter from plain settings values (see ``resolve_openai_config`` for ``options``)."""
    return OpenAICompatModel(resolve_openai_config(provider, base_url, model, api_key, **options))


def as_function_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """Accept a tool either in OpenAI's ``{"type": "function", "function": {...}}`` form or bare."""
    if tool.get("type") == "function" and "function" in tool:
        return tool
    return {"type": "function", "function": tool}


class _Sink:
    """Forwards content deltas to the request's token sink and remembers whether any went out."""

    def __init__(self, on_token: TokenSink | None) -> None:
        self._on_token = on_token
        self.used = False

    async def __call__(self, delta: str) -> None:
        if self._on_token is not None:
            self.used = True
            await self._on_token(delta)


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Folds ``ChatCompletionChunk``s into one reply: content deltas in order, tool-call fragments
    by ``index`` (id and name arrive once, arguments in pieces), and the usage chunk if sent."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._usage: Usage | None = None
        self._finish_reason: str | None = None
        self._model: str | None = None

    def add(self, chunk: Any) -> str | None:
        """Take one chunk; return its content delta (to stream on) or None."""
        self._model = self._model or getattr(chunk, "model", None)
        if getattr(chunk, "usage", None) is not None:
            self._usage = _usage(chunk.usage)
        content: str | None = None
        for choice in getattr(chunk, "choices", None) or []:
            if choice.finish_reason:
                self._finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            reasoning = getattr(delta, "reasoning_content", None)
            if isinstance(reasoning, str):
                self._reasoning.append(reasoning)
            for fragment in delta.tool_calls or []:
                self._add_call_fragment(fragment)
            if delta.content:
                self._content.append(delta.content)
                content = delta.content if content is None else content + delta.content
        return content

    def _add_call_fragment(self, fragment: Any) -> None:
        index = fragment.index
        if index is None:  # some servers omit it: a new id starts a call, anything else continues
            known = {c.id for c in self._calls.values()}
            fresh = fragment.id and fragment.id not in known
            index = len(self._calls) if fresh or not self._calls else max(self._calls)
        call = self._calls.setdefault(index, _PartialCall())
        if fragment.id and not call.id:
            call.id = fragment.id
        function = fragment.function
        if function is not None:
            if function.name and not call.name:
                call.name = function.name
            if function.arguments:
                call.arguments.append(function.arguments)

    def reply(self, provider: str) -> ModelReply:
        """The assembled reply; raises ``ModelEndpointError`` if a tool call never got a name."""
        calls = []
        for index in sorted(self._calls):
            part = self._calls[index]
            if not part.name:
                raise ModelEndpointError(
                    f"model endpoint streamed tool call #{index} without a function name", retryable=True
                )
            calls.append(ToolCall(part.id or _new_call_id(), part.name, "".join(part.arguments) or "{}"))
        meta: dict[str, Any] = {"provider": provider, "model": self._model, "finish_reason": self._finish_reason}
        if self._reasoning:
            meta["reasoning"] = "".join(self._reasoning)
        return ModelReply(content="".join(self._content) or None, tool_calls=calls, usage=self._usage, meta=meta)


def parse_completion(completion: Any, provider: str) -> ModelReply:
    """Turn a non-streamed ``ChatCompletion`` into a ``ModelReply``."""
    if not completion.choices:
        raise ModelEndpointError("model endpoint returned no choices", retryable=True)
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCall(call.id or _new_call_id(), call.function.name, call.function.arguments or "{}")
        for call in message.tool_calls or []
        if getattr(call, "function", None) is not None
    ]
    meta: dict[str, Any] = {"provider": provider, "model": completion.model, "finish_reason": choice.finish_reason}
    reasoning = getattr(message, "reasoning_content", None)
    if isinstance(reasoning, str) and reasoning:
        meta["reasoning"] = reasoning
    usage = _usage(completion.usage) if completion.usage is not None else None
    return ModelReply(content=message.content or None, tool_calls=calls, usage=usage, meta=meta)


def _usage(raw: Any) -> Usage:
    return Usage(prompt_tokens=raw.prompt_tokens or 0, completion_tokens=raw.completion_tokens or 0)


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


@contextmanager
def map_exceptions(config: OpenAICompatConfig) -> Iterator[None]:
    """Translate whatever the SDK raises into ``ModelEndpointError``, dropping the original chain
    (it carries the request, whose headers hold the API key)."""
    try:
        yield
    except (openai.OpenAIError, json.JSONDecodeError) as exc:
        raise translate_error(exc, config) from None


def translate_error(exc: Exception, config: OpenAICompatConfig) -> ModelEndpointError:
    """One readable, key-free ``ModelEndpointError`` for an SDK exception."""
    where = config.display_url
    if isinstance(exc, openai.APITimeoutError):
        return ModelEndpointError(f"model endpoint {where} timed out after {config.timeout_s:g}s", True)
    if isinstance(exc, openai.APIConnectionError):
        cause = _redact(str(exc.__cause__ or exc), config)
        return ModelEndpointError(f"could not reach model endpoint {where} ({cause})", True)
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, config)
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelEndpointError(f"model endpoint {where} sent a response tether cannot read", True)
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        detail = _detail(exc.body, exc.message, config)
        return ModelEndpointError(f"model endpoint {where} reported an error: {detail}", True)
    if isinstance(exc, json.JSONDecodeError):
        return ModelEndpointError(f"model endpoint {where} sent malformed JSON", True)
    detail = _redact(str(exc), config)[:_DETAIL_LIMIT]
    return ModelEndpointError(f"model client failed ({type(exc).__name__}): {detail}", False)


def _status_error(exc: openai.APIStatusError, config: OpenAICompatConfig) -> ModelEndpointError:
    status = exc.status_code
    retryable = status in (408, 409, 429) or status >= 500
    text = _STATUS_TEXT.get(status, "failed" if status >= 500 else "refused the request")
    if status == 404:
        text = f"does not know model {config.model!r} or this path"
    if status == 429 and exc.code == "insufficient_quota":
        text, retryable = "reports the account's quota is used up", False
    message = f"model endpoint {config.display_url} {text} ({status})"
    detail = _detail(exc.body, "", config)
    if detail and status not in (401, 403):  # auth errors tend to echo the key back
        message += f": {detail}"
    return ModelEndpointError(message, retryable, status=status, retry_after_s=_retry_after(exc.response))


def _detail(body: object, fallback: str, config: OpenAICompatConfig) -> str:
    text: object = body
    if isinstance(text, dict):
        text = text.get("error", text)
    if isinstance(text, dict):
        text = text.get("message") or text.get("detail") or json.dumps(text, ensure_ascii=False)
    detail = str(text) if isinstance(text, str) and text else fallback
    return _redact(detail, config)[:_DETAIL_LIMIT]


def _redact(text: str, config: OpenAICompatConfig) -> str:
    key = config.api_key
    if len(key) >= 8:
        text = text.replace(key, "***")
    return text.replace(config.base_url, config.display_url)


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return float(raw) * scale
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None
