"""Errors of an OpenAI-compatible endpoint, translated at the boundary into tether's own.

Every SDK exception becomes a ``ModelEndpointError`` (or ``ContextTooLong`` for a request the
server refused as longer than its window) whose message says what happened and, where the server's
words show a known misconfiguration, what to change (``advice_for``). Nothing from the SDK escapes,
and the API key never appears in a message, an exception chain or a log line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai

from tether.errors import ContextTooLong, ModelError
from tether.models.openai_config import OpenAICompatConfig

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

# A refusal for length, as each server words it; the group is the window when it is named.
_TOO_LONG = [
    re.compile(r"maximum context length is (\d+)", re.I),  # OpenAI, vLLM, DeepSeek
    re.compile(r"exceeds the available context size \((\d+) tokens\)", re.I),  # llama.cpp
    re.compile(r"range of input length should be \[1, (\d+)\]", re.I),  # DashScope
    re.compile(r"context_length_exceeded|exceed_context_size_error|context length exceeded|prompt is too long", re.I),
]

# (what the server says, what to do about it); ``{model}`` is the configured model.
_ADVICE = [
    (
        re.compile(r"enable-auto-tool-choice", re.I),
        "vLLM serves tools only when started with --enable-auto-tool-choice and --tool-call-parser "
        "(hermes for Qwen2.5/Qwen3); restart it with both",
    ),
    (
        re.compile(r"requires --jinja", re.I),
        "llama.cpp serves tools only when llama-server is started with --jinja; restart it with --jinja",
    ),
    (
        re.compile(r"does not support tools", re.I),
        "Ollama model {model} does not support tools: use qwen2.5:14b, qwen3:14b or another model with the "
        "tools tag (ollama.com/search?c=tools)",
    ),
    (
        re.compile(r"System message must be at the beginning", re.I),
        "the model's chat template takes one system message only; tether merges its system messages, so "
        "check the server's --chat-template",
    ),
    (
        re.compile(r"Missing `reasoning_content`", re.I),
        "DeepSeek thinking mode needs each tool-calling message's reasoning sent back: set "
        "TETHER_MODEL_PROVIDER=deepseek",
    ),
    (
        re.compile(r"enable_thinking must be set to false|enable thinking can not be support", re.I),
        "this Qwen model thinks only in streamed calls: set TETHER_MODEL_STREAM=true or TETHER_MODEL_THINKING=off",
    ),
]


class ModelEndpointError(ModelError):
    """A ``ModelError`` from an HTTP endpoint; ``status`` is the HTTP status when there was one."""

    def __init__(
        self, message: str, retryable: bool, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message, retryable, retry_after_s)
        self.status = status


def advice_for(text: str, model: str) -> str | None:
    """What to change, when the server's words name a known misconfiguration."""
    for pattern, advice in _ADVICE:
        if pattern.search(text):
            return advice.format(model=model)
    return None


def context_limit(text: str) -> tuple[bool, int | None]:
    """Whether ``text`` refuses a request for its length, and the window when it names one."""
    for pattern in _TOO_LONG:
        found = pattern.search(text)
        if found:
            return True, int(found.group(1)) if found.groups() else None
    return False, None


@contextmanager
def map_exceptions(config: OpenAICompatConfig) -> Iterator[None]:
    """Translate whatever the SDK raises into ``ModelEndpointError``, dropping the original chain
    (it carries the request, whose headers hold the API key)."""
    try:
        yield
    except (openai.OpenAIError, json.JSONDecodeError) as exc:
        raise translate_error(exc, config) from None


def translate_error(exc: Exception, config: OpenAICompatConfig) -> ModelError:
    """One readable, key-free ``ModelError`` for an SDK exception."""
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


def _status_error(exc: openai.APIStatusError, config: OpenAICompatConfig) -> ModelError:
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
    if status in (400, 413, 422):
        too_long, limit = context_limit(f"{detail} {json.dumps(exc.body, default=str)}")
        if too_long:
            return ContextTooLong(message, limit or _n_ctx(exc.body))
    advice = advice_for(detail, config.model) if status not in (401, 403) else None
    if advice:  # a misconfigured server answers the same however often it is asked
        message, retryable = f"{message} — {advice}", False
    return ModelEndpointError(message, retryable, status=status, retry_after_s=_retry_after(exc.response))


def _n_ctx(body: object) -> int | None:
    error = body.get("error", body) if isinstance(body, dict) else None
    value = error.get("n_ctx") if isinstance(error, dict) else None
    return value if isinstance(value, int) else None


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
