"""OpenAICompatModel against a real local Chat Completions server: bodies, streaming, retries, errors."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tether.core import summary
from tether.core.messages import ModelRequest, ToolCall, Usage
from tether.errors import ModelError
from tether.models.openai_compat import OpenAICompatModel, as_function_tool, build_openai_model

from .chat_server import (
    ChatServer,
    Reply,
    chunk,
    completion,
    error,
    text_stream,
    tool_call_delta,
    unused_port,
    usage_chunk,
)

pytestmark = pytest.mark.anyio

KEY = "sk-test-secret-0123456789abcdef"
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "北京天气?"}]

ModelFactory = Callable[..., OpenAICompatModel]


def build(server_url: str, **options: Any) -> OpenAICompatModel:
    options = {"timeout_s": 5.0, **options}
    return build_openai_model("test", base_url=server_url, model="test-model", api_key=KEY, **options)


@pytest.fixture
async def make_model() -> AsyncIterator[ModelFactory]:
    """``build`` that closes every model it made when the test ends."""
    made: list[OpenAICompatModel] = []

    def factory(server_url: str, **options: Any) -> OpenAICompatModel:
        made.append(build(server_url, **options))
        return made[-1]

    yield factory
    for model in made:
        await model.aclose()


def request(tools: list[dict[str, Any]] | None = None, tokens: list[str] | None = None) -> ModelRequest:
    async def on_token(delta: str) -> None:
        assert tokens is not None
        tokens.append(delta)

    return ModelRequest(
        messages=[dict(m) for m in MESSAGES],
        tools=tools if tools is not None else [WEATHER_TOOL],
        on_token=on_token if tokens is not None else None,
    )


async def test_plain_json_reply_and_request_body(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(completion("晴，25°C", usage=(12, 5)))
    tokens: list[str] = []
    reply = await make_model(chat_server.base_url, stream=False).chat(request(tokens=tokens))

    assert reply.content == "晴，25°C"
    assert reply.tool_calls == []
    assert reply.usage == Usage(prompt_tokens=12, completion_tokens=5)
    assert reply.meta["finish_reason"] == "stop"
    assert tokens == ["晴，25°C"]  # a non-streamed reply still reaches the sink, once
    [received] = chat_server.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert received.body["model"] == "test-model"
    assert received.body["messages"] == MESSAGES
    assert received.body["tools"] == [WEATHER_TOOL]
    assert "stream" not in received.body
    chat_server.assert_consumed()


async def test_plain_json_tool_calls(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(completion(None, tool_calls=[("call_a", "get_weather", '{"city": "北京"}')]))
    reply = await make_model(chat_server.base_url, stream=False).chat(request())
    assert reply.content is None
    assert reply.tool_calls == [ToolCall("call_a", "get_weather", '{"city": "北京"}')]
    assert reply.usage is None
    assert reply.meta["finish_reason"] == "tool_calls"


async def test_tools_omitted_when_empty_and_bare_tools_wrapped(
    chat_server: ChatServer, make_model: ModelFactory
) -> None:
    chat_server.push(completion("a"), completion("b"))
    model = make_model(chat_server.base_url, stream=False, temperature=0.2)
    await model.chat(request(tools=[]))
    await model.chat(request(tools=[WEATHER_TOOL["function"]]))
    first, second = chat_server.bodies
    assert "tools" not in first
    assert first["temperature"] == 0.2
    assert second["tools"] == [WEATHER_TOOL]
    assert as_function_tool(WEATHER_TOOL) is WEATHER_TOOL


async def test_streamed_text_arrives_in_order_with_usage(chat_server: ChatServer, make_model: ModelFactory) -> None:
    pieces = ["今天", "北京", "晴", "，", " 25°C"]
    chat_server.push(text_stream(pieces, usage=(20, 7), event_delay_s=0.01))
    tokens: list[str] = []
    reply = await make_model(chat_server.base_url).chat(request(tokens=tokens))

    assert tokens == pieces
    assert reply.content == "".join(pieces)
    assert reply.usage == Usage(prompt_tokens=20, completion_tokens=7)
    assert reply.meta["finish_reason"] == "stop"
    body = chat_server.bodies[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == MESSAGES and body["model"] == "test-model"


async def test_stream_without_usage_chunk(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(text_stream(["hi"]))
    reply = await make_model(chat_server.base_url, stream_usage=False).chat(request())
    assert reply.content == "hi" and reply.usage is None
    assert "stream_options" not in chat_server.bodies[0]


async def test_streamed_parallel_tool_calls_split_across_chunks(
    chat_server: ChatServer, make_model: ModelFactory
) -> None:
    events: list[dict[str, Any] | str] = [
        chunk({"role": "assistant", "content": None}),
        chunk(tool_call_delta(0, id="call_bj", name="get_weather", arguments="")),
        chunk(tool_call_delta(0, arguments='{"ci')),
        chunk(tool_call_delta(1, id="call_sh", name="get_weather", arguments='{"city"')),
        chunk(tool_call_delta(0, arguments='ty": "北')),
        chunk(tool_call_delta(1, arguments=': "上海"}')),
        chunk(tool_call_delta(0, arguments='京"}')),
        chunk({}, finish_reason="tool_calls"),
        usage_chunk(30, 18),
    ]
    chat_server.push(Reply(events=events))
    tokens: list[str] = []
    reply = await make_model(chat_server.base_url).chat(request(tokens=tokens))

    assert tokens == []
    assert reply.content is None
    assert reply.tool_calls == [
        ToolCall("call_bj", "get_weather", '{"city": "北京"}'),
        ToolCall("call_sh", "get_weather", '{"city": "上海"}'),
    ]
    assert [json.loads(c.arguments) for c in reply.tool_calls] == [{"city": "北京"}, {"city": "上海"}]
    assert reply.usage == Usage(prompt_tokens=30, completion_tokens=18)
    assert reply.meta["finish_reason"] == "tool_calls"


async def test_streamed_content_then_tool_call_without_arguments(
    chat_server: ChatServer, make_model: ModelFactory
) -> None:
    events: list[dict[str, Any] | str] = [
        chunk({"content": "Let me check. "}),
        chunk({"reasoning_content": "need the clock"}),
        chunk(tool_call_delta(0, id="call_t", name="now")),
        chunk({}, finish_reason="tool_calls"),
    ]
    chat_server.push(Reply(events=events))
    tokens: list[str] = []
    reply = await make_model(chat_server.base_url).chat(request(tokens=tokens))
    assert tokens == ["Let me check. "]
    assert reply.content == "Let me check. "
    assert reply.tool_calls == [ToolCall("call_t", "now", "{}")]
    assert reply.reasoning == "need the clock" and "reasoning" not in reply.meta


async def test_429_is_retryable_and_says_how_long_to_wait(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(error(429, "slow down", headers={"retry-after": "2"}))
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request())
    assert info.value.retryable is True and info.value.retry_after_s == 2.0
    assert len(chat_server.requests) == 1  # the turn retries (one policy), the adapter tries once


async def test_a_500_is_retryable_and_tried_once(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(error(500, "upstream exploded"))
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request())
    assert info.value.retryable is True
    assert "(500)" in info.value.message and "upstream exploded" in info.value.message
    assert len(chat_server.requests) == 1
    chat_server.assert_consumed()


async def test_401_is_not_retried_and_never_shows_the_key(
    chat_server: ChatServer, caplog: pytest.LogCaptureFixture, make_model: ModelFactory
) -> None:
    chat_server.push(error(401, f"Incorrect API key provided: {KEY}", code="invalid_api_key"))
    with caplog.at_level(logging.DEBUG), pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request())
    err = info.value
    assert err.retryable is False
    assert "rejected the API key (401)" in err.message
    assert KEY not in str(err) and KEY not in repr(err)
    assert err.__cause__ is None and err.__suppress_context__
    assert all(KEY not in r.getMessage() for r in caplog.records)
    assert len(chat_server.requests) == 1


@pytest.mark.parametrize(("status", "phrase"), [(400, "rejected the request (400)"), (404, "'test-model'")])
async def test_client_errors_are_not_retried(
    chat_server: ChatServer, status: int, phrase: str, make_model: ModelFactory
) -> None:
    chat_server.push(error(status, "nope"))
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request())
    assert info.value.retryable is False
    assert phrase in info.value.message
    assert len(chat_server.requests) == 1


async def test_insufficient_quota_is_not_retried(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(error(429, "You exceeded your current quota", code="insufficient_quota"))
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request())
    assert info.value.retryable is False and "quota" in info.value.message
    assert len(chat_server.requests) == 1


async def test_connection_refused(make_model: ModelFactory) -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    with pytest.raises(ModelError) as info:
        await make_model(url).chat(request())
    assert info.value.retryable is True
    assert "could not reach model endpoint" in info.value.message
    assert KEY not in str(info.value)


async def test_slow_response_times_out(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(Reply(body=completion("late").body, delay_s=3.0))
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url, timeout_s=0.3, stream=False).chat(request())
    assert time.monotonic() - started < 2.5
    assert info.value.retryable is True and "timed out after 0.3s" in info.value.message


async def test_error_event_before_output_is_retryable(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(Reply(events=[{"error": {"message": "overloaded"}}]))
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request(tokens=[]))
    assert info.value.retryable is True and "overloaded" in info.value.message


async def test_stream_broken_after_output_is_not_retried(chat_server: ChatServer, make_model: ModelFactory) -> None:
    events: list[dict[str, Any] | str] = [chunk({"content": "Half"}), {"error": {"message": "overloaded"}}]
    chat_server.push(Reply(events=events, done=False), text_stream(["never"]))
    tokens: list[str] = []
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request(tokens=tokens))
    assert tokens == ["Half"]
    assert info.value.retryable is False  # a retry would show the text twice
    assert "overloaded" in info.value.message and "not retried" in info.value.message
    assert len(chat_server.requests) == 1


async def test_malformed_stream_becomes_model_error(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(Reply(events=["{not json"]))
    with pytest.raises(ModelError) as info:
        await make_model(chat_server.base_url).chat(request())
    assert "malformed" in info.value.message


def test_one_model_serves_successive_event_loops() -> None:
    with ChatServer([completion("one"), completion("two")]) as server:
        model = build(server.base_url, stream=False)

        async def call_and_close() -> str | None:
            try:
                return (await model.chat(request())).content
            finally:
                await model.aclose()

        assert asyncio.run(call_and_close()) == "one"
        assert asyncio.run(call_and_close()) == "two"


def test_name_and_repr_hide_the_key() -> None:
    model = build_openai_model("deepseek", api_key=KEY)
    assert model.name == "deepseek:deepseek-chat"
    assert KEY not in repr(model) and KEY not in repr(model.config)


async def test_sink_failure_propagates_untranslated(chat_server: ChatServer, make_model: ModelFactory) -> None:
    chat_server.push(text_stream(["a", "b"]))

    async def broken_sink(delta: str) -> None:
        raise KeyError("sink broke")

    req = request()
    req.on_token = broken_sink
    with pytest.raises(KeyError):
        await make_model(chat_server.base_url).chat(req)
    assert len(chat_server.requests) == 1


async def test_unscripted_request_is_flagged(chat_server: ChatServer, make_model: ModelFactory) -> None:
    with pytest.raises(ModelError, match="no reply scripted") as info:
        await make_model(chat_server.base_url).chat(request())
    assert info.value.retryable is False
    with pytest.raises(AssertionError, match="no reply scripted"):
        chat_server.assert_consumed()


async def test_the_rolling_summary_is_an_ordinary_request_and_a_refused_one_falls_back(
    chat_server: ChatServer, make_model: ModelFactory
) -> None:
    folded = [
        {"role": "user", "content": "My name is Zhang Wei, order ORD-58213."},
        {"role": "assistant", "content": "Noted."},
    ]
    chat_server.push(completion("Zhang Wei asked about order ORD-58213."), error(400, "context length exceeded"))
    model = make_model(chat_server.base_url, stream=False)
    assert await summary.fold(model, None, folded, 4000) == "Zhang Wei asked about order ORD-58213."
    body = chat_server.bodies[0]
    assert [m["role"] for m in body["messages"]] == ["system", "user"] and "tools" not in body
    assert "ORD-58213" in body["messages"][1]["content"]
    fallback = await summary.fold(model, "earlier", folded, 4000)
    assert fallback == "earlier\n- user: My name is Zhang Wei, order ORD-58213. | answer: Noted."
    chat_server.assert_consumed()
