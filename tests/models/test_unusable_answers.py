"""Answers that cannot be used as they stand: a tool call left in ``content`` (recovered when it
is sound, else one corrective retry, never the raw tag as an answer), a tool call cut off by the
output limit (not run, asked again once), and a request refused as longer than the server's
context (rebuilt with a smaller window, once, and recorded)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.core.harness import ALICE, harness, tool_messages
from tether.core.messages import ModelRequest
from tether.core.session import Status
from tether.errors import ContextTooLong, ModelError
from tether.models.openai_compat import CUT_OFF, build_openai_model

from .chat_server import ChatServer, Reply, chunk, completion, text_stream, tool_call_delta
from .server_rules import llamacpp

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
HERMES = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'


def content_stream(pieces: list[str], finish: str = "stop") -> Reply:
    return Reply(events=[chunk({"content": p}) for p in pieces] + [chunk({}, finish_reason=finish)])


async def ask(server: ChatServer, tokens: list[str] | None = None, provider: str = "vllm") -> Any:
    async def on_token(delta: str) -> None:
        if tokens is not None:
            tokens.append(delta)

    streamed = bool(server.script) and server.script[0].body is None  # as the first scripted reply is sent
    model = build_openai_model(provider, base_url=server.base_url, model="Qwen/Qwen2.5-7B-Instruct", stream=streamed)
    try:
        return await model.chat(ModelRequest([{"role": "user", "content": "2+3?"}], [ADD], on_token=on_token))
    finally:
        await model.aclose()


pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "reply",
    [
        content_stream(["<tool", '_call>\n{"name": "add", ', '"arguments": {"a": 2, "b": 3}}\n</tool_call>']),
        completion(HERMES),
        content_stream(['{"name": "add", "arguments": ', '{"a": 2, "b": 3}}']),  # bare JSON
        completion('{"name": "add", "parameters": {"a": 2, "b": 3}}'),
    ],
)
async def test_a_sound_tool_call_left_in_content_is_recovered(chat_server: ChatServer, reply: Reply) -> None:
    chat_server.push(reply)
    tokens: list[str] = []
    got = await ask(chat_server, tokens)
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [("add", {"a": 2, "b": 3})]
    assert got.meta["recovered"] in ("tool_call_text", "tool_call_json")
    assert got.content is None and tokens == []
    assert len(chat_server.requests) == 1


async def test_json_that_is_no_tool_call_is_the_answer(chat_server: ChatServer) -> None:
    chat_server.push(content_stream(['{"total": ', "5}"]))
    tokens: list[str] = []
    got = await ask(chat_server, tokens)
    assert got.content == '{"total": 5}' and got.tool_calls == [] and tokens == ['{"total": 5}']


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ('<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>', "no tool named"),
        ('<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>', "needs the argument(s) b"),
        ('<tool_call>{"name": "add", "arguments": {"a": 2,</tool_call>', "does not parse"),
    ],
)
async def test_an_unusable_tool_call_text_gets_one_correction(chat_server: ChatServer, bad: str, reason: str) -> None:
    chat_server.push(completion(bad), completion("2 + 3 = 5"))
    tokens: list[str] = []
    got = await ask(chat_server, tokens)
    assert got.content == "2 + 3 = 5" and got.meta["corrected"] == "unreadable_tool_call"
    assert not any("tool_call" in t for t in tokens)
    said, correction = chat_server.bodies[1]["messages"][-2:]
    assert said["role"] == "assistant" and "<tool_call>" in said["content"]
    assert correction["role"] == "user" and reason in correction["content"]


async def test_a_second_unusable_tool_call_is_an_error_never_the_answer(chat_server: ChatServer) -> None:
    bad = completion('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    chat_server.push(bad, completion('<tool_call>{"name": "nope"}</tool_call>'))
    with pytest.raises(ModelError) as info:
        await ask(chat_server)
    assert info.value.retryable is False and "<tool_call>" not in info.value.message
    assert len(chat_server.requests) == 2


async def test_a_tool_call_cut_off_by_the_output_limit_is_not_returned_and_asked_again(
    chat_server: ChatServer,
) -> None:
    cut = Reply(
        events=[
            chunk(tool_call_delta(0, id="call_1", name="add", arguments='{"a": 2, ')),
            chunk({}, finish_reason="length"),
        ]
    )
    whole = Reply(events=[chunk(tool_call_delta(0, id="call_2", name="add", arguments='{"a": 2, "b": 3}'))])
    chat_server.push(cut, whole)
    got = await ask(chat_server)
    assert [c.id for c in got.tool_calls] == ["call_2"] and got.meta["corrected"] == "cut_off_tool_call"
    assert chat_server.bodies[1]["messages"][-1] == {"role": "user", "content": CUT_OFF}


async def test_a_refusal_for_length_names_the_window(chat_server: ChatServer) -> None:
    chat_server.rules = llamacpp(jinja=True, n_ctx=2)
    with pytest.raises(ContextTooLong) as info:
        await ask(chat_server, provider="llamacpp")
    assert info.value.limit_tokens == 2 and "exceeds the available context size" in info.value.message


# ---- whole turns ---------------------------------------------------------------------------------


def test_a_turn_runs_a_recovered_tool_call_and_records_it(db_url: str) -> None:
    with ChatServer([completion(HERMES), completion("The sum is 5.")]) as server:

        async def main() -> None:
            model = build_openai_model("vllm", base_url=server.base_url, model="Qwen/Qwen3-8B", stream=False)
            async with harness(db_url, [], model=model) as h:
                s = await h.runtime.start_session(ALICE, "run the test: add 2 and 3", {})
                assert s.status is Status.SUCCEEDED and h.counters.runs == {"add": 1}
                assert json.loads(tool_messages(s)[0]["content"])["data"] == {"sum": 5}
                events = await h.events(s.session_id)
                decisions = [e.data for e in events if e.type == "MODEL_DECISION"]
                assert decisions[0]["action"] == "tool_calls" and decisions[0]["recovered"] == "tool_call_text"
                assert not any(
                    "tool_call>" in json.dumps(e.data) for e in events if e.type in ("TOKEN", "ASSISTANT_MESSAGE")
                )
            await model.aclose()

        asyncio.run(main())


def test_a_turn_never_runs_a_cut_off_call(db_url: str) -> None:
    cut = Reply(
        events=[
            chunk(tool_call_delta(0, id="call_1", name="add", arguments='{"a": 2')),
            chunk({}, finish_reason="length"),
        ]
    )
    script = [cut, cut, text_stream(["unused"])]
    with ChatServer(script) as server:

        async def main() -> None:
            model = build_openai_model("vllm", base_url=server.base_url, model="m")
            async with harness(db_url, [], model=model) as h:
                s = await h.runtime.start_session(ALICE, "run the test: add 2 and 3", {})
                assert s.status is Status.FAILED and h.counters.runs == {}
                assert "cut_off_tool_call" in (s.last_error or "")
            await model.aclose()

        asyncio.run(main())
        assert len(server.requests) == 2  # asked again once; a 2nd cut-off is not retried by the turn


def test_a_context_overflow_is_retried_once_with_a_smaller_window_and_recorded(db_url: str) -> None:
    long_answer = "lorem ipsum dolor sit amet " * 700  # ~19k characters, ~4.7k estimated tokens
    script = [
        text_stream([long_answer]),  # turn 1
        text_stream(["The user asked for a long text."]),  # the fold of turn 1 into the summary
        text_stream(["short again"]),  # turn 2, retried with the smaller window
    ]
    with ChatServer(script, rules=llamacpp(jinja=True, n_ctx=3000)) as server:

        async def main() -> None:
            model = build_openai_model("llamacpp", base_url=server.base_url)
            async with harness(db_url, [], model=model) as h:
                server.rules = None
                s = await h.runtime.start_session(ALICE, "write a long text", {})
                assert s.status is Status.SUCCEEDED
                server.rules = llamacpp(jinja=True, n_ctx=3000)
                s = await h.runtime.post_message(s.session_id, ALICE, "now something short")
                assert s.status is Status.SUCCEEDED and s.transcript[-1]["content"] == "short again"
                assert s.summary == "The user asked for a long text."
                errors = [e.data["message"] for e in await h.events(s.session_id) if e.type == "ERROR"]
                assert len(errors) == 1 and "exceeds the available context size (3000 tokens)" in errors[0]
                assert "2250-token window" in errors[0]
            await model.aclose()

        asyncio.run(main())
        assert len(server.refused) == 1
        server.assert_consumed()


async def test_a_bare_json_call_cut_off_is_not_shown_as_the_answer(chat_server: ChatServer) -> None:
    chat_server.push(content_stream(['{"name": "add", "arguments": {"a": 2,'], finish="length"), content_stream(["5"]))
    tokens: list[str] = []
    got = await ask(chat_server, tokens)
    assert got.content == "5" and got.meta["corrected"] == "cut_off_tool_call" and "name" not in "".join(tokens)


async def test_an_answer_cut_off_while_thinking_is_asked_again_to_think_briefly(chat_server: ChatServer) -> None:
    thinking_only = Reply(
        events=[chunk({"reasoning_content": "Let me consider every"}), chunk({}, finish_reason="length")]
    )
    chat_server.push(thinking_only, content_stream(["5"]))
    got = await ask(chat_server)
    assert got.content == "5" and got.meta["corrected"] == "cut_off_thinking"
    assert "Think briefly" in chat_server.bodies[1]["messages"][-1]["content"]
