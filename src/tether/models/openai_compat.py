"""The ``ChatModel`` adapter for any OpenAI-compatible Chat Completions endpoint.

DeepSeek, Qwen (DashScope compatible mode), Ollama, vLLM, llama.cpp and OpenAI all speak this
protocol, each with its own rules; the server's ``Provider`` profile (providers.py) shapes each
request, and completions.py reads each answer. The official ``openai`` SDK does the HTTP.

One call tries the endpoint once: the retry policy for failures is the turn's
(``TETHER_MODEL_RETRIES``, core/turn.py), so there is exactly one. What this adapter does repeat,
once, is a call whose answer cannot be used as it stands: a tool call written as text that does not
read as a call, or one cut off by the output limit. The model is told what was wrong and asked
again; a second such answer is an error, never shown as the answer. The other thing it repeats,
once, is a request a server refused for its reasoning round trip (DeepSeek thinking mode asking for
``reasoning_content`` back, the older deepseek-r1 refusing it): whatever the provider is called (a
gateway hides it), the adapter learns the rule from the 400, keeps it for this endpoint and model,
and sends the request again the way the server wants it. Every SDK exception is translated at the
boundary (endpoint_errors.py); the API key never appears in a message or log.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

try:
    import openai
except ImportError as _missing:  # pragma: no cover - depends on the installation
    raise ImportError(
        "tether's OpenAI-compatible model adapter needs the `openai` package; "
        "install it with `uv add openai` or `pip install 'openai>=1.40'`"
    ) from _missing

from tether.core.messages import ModelReply, ModelRequest, TokenSink
from tether.models.completions import Draft, StreamAssembler, parse_completion
from tether.models.endpoint_errors import ModelEndpointError, map_exceptions
from tether.models.openai_config import OpenAICompatConfig, resolve_openai_config
from tether.models.providers import Echo, echo_asked_for, outgoing_messages
from tether.models.tool_text import Unreadable, bare_json_call, recover_tool_calls

log = logging.getLogger(__name__)

_SDK_FIELDS = {"model", "messages", "tools", "temperature", "stream", "stream_options", "tool_choice"}
_SDK_FIELDS |= {"parallel_tool_calls", "max_tokens"}

CUT_OFF = (
    "Your previous reply was cut off by the output limit in the middle of a tool call, so the call was "
    "not made. Be brief: think briefly, call one tool at a time and keep its arguments short."
)


_WHAT = {
    "unreadable_tool_call": "a tool call written as text that could not be read",
    "cut_off_tool_call": "a tool call cut off by the output limit (raise the server's max tokens)",
    "cut_off_thinking": "only thinking, cut off by the output limit (raise the server's max tokens)",
}

CUT_OFF_THINKING = (
    "Your previous reply reached the output limit while thinking, before any answer or tool call. "
    "Think briefly, then answer or call a tool."
)


def unreadable_call(reason: str) -> str:
    return (
        f"Your previous reply wrote a tool call as text, and it could not be used: {reason}. Call the tool "
        "through the tools interface with complete JSON arguments, or answer in plain words."
    )


@dataclass(slots=True)
class _Problem:
    kind: str  # "unreadable_tool_call" | "cut_off_tool_call"
    correction: str
    said: str  # what the model wrote, sent back before the correction


class OpenAICompatModel:
    """A ``ChatModel`` over ``openai.AsyncOpenAI``; one instance per configured endpoint."""

    def __init__(self, config: OpenAICompatConfig) -> None:
        self.config = config
        self.name = f"{config.provider}:{config.model}"
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self.learned_echo: Echo | None = None  # the round-trip rule this server's own 400 asked for

    def __repr__(self) -> str:
        return f"OpenAICompatModel({self.name!r}, base_url={self.config.display_url!r})"

    async def chat(self, request: ModelRequest) -> ModelReply:
        """One answer; raises ``ModelError`` (retryable or not) when there is none to give."""
        reply, problem = await self._answer(request.messages, request)
        if problem is None:
            return reply
        log.info("model %s: %s; asking again once", self.name, problem.kind)
        retry = [*request.messages]
        if problem.said:
            retry.append({"role": "assistant", "content": problem.said})
        retry.append({"role": "user", "content": problem.correction})
        reply, again = await self._answer(retry, request)
        if again is not None:
            raise ModelEndpointError(
                f"the model answered twice with {_WHAT[again.kind]}; it was not run ({again.kind})",
                retryable=False,
            )
        reply.meta["corrected"] = problem.kind
        return reply

    async def _answer(
        self, messages: list[dict[str, Any]], request: ModelRequest
    ) -> tuple[ModelReply, _Problem | None]:
        draft = await self.complete(messages, request.tools, request.on_token)
        reply, problem = self._settle(draft, request)
        if problem is None and draft.held and not reply.tool_calls:
            await _Sink(request.on_token)(draft.held)  # held back as a possible call; it is the answer
        return reply, problem

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_token: TokenSink | None = None,
        **extra: Any,
    ) -> Draft:
        """One request as this server wants it (``extra``: more body fields, e.g. ``tool_choice``);
        the answer read but not yet judged. Raises ``ModelError``."""
        sink = _Sink(on_token)
        try:
            with map_exceptions(self.config):
                try:
                    return await self._attempt(self._request_body(messages, tools, extra), sink)
                except openai.BadRequestError as refused:
                    if not self._learn_echo(refused):
                        raise
                return await self._attempt(self._request_body(messages, tools, extra), sink)
        except ModelEndpointError as err:
            if err.retryable and sink.used:
                raise ModelEndpointError(
                    f"{err.message} (the stream broke after output began; not retried)",
                    retryable=False,
                    status=err.status,
                ) from None
            raise

    def _learn_echo(self, refused: openai.BadRequestError) -> bool:
        """Whether the server's 400 names a reasoning round-trip rule other than the one followed;
        then that rule holds for this endpoint and model from now on."""
        asked = echo_asked_for(f"{refused.message} {refused.body}")
        if asked is None or asked == self._echo:
            return False
        log.warning(
            "model %s at %s: the server %s reasoning_content; %s from now on (learned from its 400)",
            self.name,
            self.config.display_url,
            "asks for" if asked == "tool_calls" else "refuses",
            "sending it back on tool-calling messages" if asked == "tool_calls" else "stripping it",
        )
        self.learned_echo = asked
        return True

    @property
    def _echo(self) -> Echo:
        return self.learned_echo or self.config.profile.echo_for(self.config.model)

    async def list_models(self) -> list[dict[str, Any]]:
        """``GET /models``: what the server says it serves, each entry as sent. Raises ``ModelError``."""
        with map_exceptions(self.config):
            listed = await self._client_for_loop().models.list()
            return [entry.model_dump() for entry in listed.data]

    async def aclose(self) -> None:
        """Close the HTTP client and its connections; call it at shutdown."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    @property
    def _starts_thinking(self) -> bool:
        return self.config.profile.starts_thinking(self.config.model)

    @property
    def streams(self) -> bool:
        """Streamed calls: as configured, or forced where the server thinks only when streaming."""
        c = self.config
        return c.stream or (c.profile.thinking_needs_stream and c.profile.thinking_on(c.thinking, c.model))

    async def _attempt(self, body: dict[str, Any], sink: _Sink) -> Draft:
        # The SDK's overloads key on a literal ``stream``; one Any-typed call covers both shapes.
        create: Any = self._client_for_loop().chat.completions.create
        if body.get("stream"):
            stream = await create(**body)
            assembler = StreamAssembler(self._starts_thinking)
            async with stream:  # closes the response on error or cancellation too
                async for chunk in stream:
                    await sink(assembler.add(chunk))
            await sink(assembler.close())
            return assembler.draft()
        draft = parse_completion(await create(**body), self._starts_thinking)
        await sink(draft.content)
        return draft

    def _settle(self, draft: Draft, request: ModelRequest) -> tuple[ModelReply, _Problem | None]:
        """What the answer means: a reply, or the problem to tell the model about."""
        meta: dict[str, Any] = {"provider": self.config.provider, "model": draft.model}
        meta["finish_reason"] = draft.finish_reason
        reply = ModelReply(draft.content or None, draft.tool_calls, draft.usage, meta, draft.reasoning or None)
        if draft.cut_off_in_a_call():
            said = draft.content if not draft.tool_calls else ""
            return reply, _Problem("cut_off_tool_call", CUT_OFF, said)
        if draft.cut_off_while_thinking():
            return reply, _Problem("cut_off_thinking", CUT_OFF_THINKING, "")
        if draft.tool_calls:
            return reply, None  # the server's own calls win over any text around them
        if draft.call_blocks:
            recovered = recover_tool_calls(draft.call_blocks, request.tools)
            if isinstance(recovered, Unreadable):
                said = "".join(f"<tool_call>{b}</tool_call>" for b in draft.call_blocks)
                return reply, _Problem("unreadable_tool_call", unreadable_call(recovered.reason), said)
            reply.tool_calls, meta["recovered"] = recovered, "tool_call_text"
            return reply, None
        if draft.held:
            call = bare_json_call(draft.held, request.tools)
            if isinstance(call, Unreadable):
                return reply, _Problem("unreadable_tool_call", unreadable_call(call.reason), draft.held)
            if call is not None:
                reply.tool_calls, meta["recovered"] = [call], "tool_call_json"
                return reply, None
            reply.content = (draft.content + draft.held) or None
        return reply, None

    def _request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], extra: dict[str, Any]
    ) -> dict[str, Any]:
        c = self.config
        profile = c.profile
        thinking_on = profile.thinking_on(c.thinking, c.model) or self.learned_echo == "tool_calls"
        body: dict[str, Any] = {"model": c.model, "messages": outgoing_messages(messages, self._echo, thinking_on)}
        if tools:
            body["tools"] = [as_function_tool(tool) for tool in tools]
        if c.temperature is not None:
            body["temperature"] = c.temperature
        if self.streams:
            body["stream"] = True
            if c.stream_usage:
                body["stream_options"] = {"include_usage": True}
        fields = {**profile.thinking_fields(c.thinking, self.streams), **extra}
        for name in profile.ignored_params:
            fields.pop(name, None)
        extra_body = {k: v for k, v in fields.items() if k not in _SDK_FIELDS}
        body.update({k: v for k, v in fields.items() if k in _SDK_FIELDS})
        if extra_body:
            body["extra_body"] = extra_body
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
    """Forwards visible deltas to the request's token sink and remembers whether any went out."""

    def __init__(self, on_token: TokenSink | None) -> None:
        self._on_token = on_token
        self.used = False

    async def __call__(self, delta: str) -> None:
        if delta and self._on_token is not None:
            self.used = True
            await self._on_token(delta)


__all__ = ["ModelEndpointError", "OpenAICompatModel", "as_function_tool", "build_openai_model"]
