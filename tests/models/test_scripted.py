"""ScriptedModel: replay, request snapshots, callables, failures, and loud misuse."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether.core.messages import ModelReply, ModelRequest, ToolCall, Usage
from tether.errors import ModelError
from tether.models import ScriptedModel, ScriptExhausted, calls, failure, text

pytestmark = pytest.mark.anyio


def ask(content: str) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": content}], tools=[])


async def test_replays_in_order_and_records_requests() -> None:
    model = ScriptedModel([calls(("search", {"q": "华东"}, "call_1")), text("done", usage=Usage(3, 1))])
    first = await model.chat(ask("find"))
    second = await model.chat(ask("and?"))

    assert first.tool_calls == [ToolCall("call_1", "search", '{"q": "华东"}')]
    assert first.content is None
    assert second == ModelReply(content="done", usage=Usage(3, 1))
    assert [r.messages[-1]["content"] for r in model.requests] == ["find", "and?"]
    model.assert_consumed()


async def test_requests_are_snapshots_of_what_the_model_saw() -> None:
    model = ScriptedModel([text("a")])
    request = ask("one")
    await model.chat(request)
    request.messages.append({"role": "assistant", "content": "a"})
    assert len(model.requests[0].messages) == 1


async def test_callables_see_the_request() -> None:
    def reply(request: ModelRequest) -> ModelReply:
        assert request.messages[-1]["content"] == "2+2?"
        return text("4")

    async def async_reply(request: ModelRequest) -> ModelReply:
        return text(f"echo {request.messages[-1]['content']}")

    model = ScriptedModel([reply, async_reply])
    assert (await model.chat(ask("2+2?"))).content == "4"
    assert (await model.chat(ask("hi"))).content == "echo hi"


async def test_extra_call_fails_loudly() -> None:
    model = ScriptedModel([text("only")], name="planner-test")
    await model.chat(ask("first"))
    with pytest.raises(ScriptExhausted, match=r"got call #2 but its script has only 1 entries") as info:
        await model.chat(ask("second"))
    assert isinstance(info.value, AssertionError)
    assert "second" in str(info.value)


async def test_unconsumed_script_is_reported() -> None:
    model = ScriptedModel([text("a"), text("b")])
    await model.chat(ask("x"))
    assert model.remaining == 1
    with pytest.raises(AssertionError, match="1 of 2 script entries were never requested"):
        model.assert_consumed()


async def test_fail_times_and_exception_entries() -> None:
    model = ScriptedModel([failure("boom", retryable=False), text("ok")], fail_times=2)
    for _ in range(2):
        with pytest.raises(ModelError) as info:
            await model.chat(ask("x"))
        assert info.value.retryable is True
    with pytest.raises(ModelError, match="boom") as info:
        await model.chat(ask("x"))
    assert info.value.retryable is False
    assert (await model.chat(ask("x"))).content == "ok"
    assert len(model.requests) == 4
    model.assert_consumed()


async def test_content_is_streamed_to_the_sink() -> None:
    tokens: list[str] = []

    async def sink(delta: str) -> None:
        tokens.append(delta)

    model = ScriptedModel([text("the answer is 42")])
    request = ask("q")
    request.on_token = sink
    await model.chat(request)
    assert "".join(tokens) == "the answer is 42"
    assert tokens == ["the", " answer", " is", " 42"]


def test_calls_helper() -> None:
    reply = calls(("a", {"x": 1}), ("b", "{not json", "call_b"), content="thinking")
    assert reply.content == "thinking"
    first, second = reply.tool_calls
    assert json.loads(first.arguments) == {"x": 1} and first.id.startswith("call_")
    assert second == ToolCall("call_b", "b", "{not json")
    assert first.id != calls(("a", {})).tool_calls[0].id


async def test_bad_entry_type_is_reported() -> None:
    def wrong(request: ModelRequest) -> Any:
        return "not a reply"

    model = ScriptedModel([wrong])
    with pytest.raises(TypeError, match="not ModelReply"):
        await model.chat(ask("x"))
