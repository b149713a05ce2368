"""Reasoning taken out of the answer: ``reasoning_content`` / ``reasoning`` fields and ``<think>``
tags in ``content``, streamed or not; a ``TOKEN`` never carries a tag or the thinking."""

from __future__ import annotations

import pytest

from tether.core.messages import ModelRequest
from tether.models.openai_compat import build_openai_model
from tether.models.tagged_content import ContentSplitter, split_content

from .chat_server import ChatServer, Reply, chunk, completion


def stream(pieces: list[str]) -> tuple[ContentSplitter, str]:
    """The splitter after the pieces, and all the text it let through to be streamed."""
    splitter = ContentSplitter()
    shown = [splitter.feed(p) for p in pieces]
    shown.append(splitter.close())
    return splitter, "".join(shown)


@pytest.mark.parametrize(
    "pieces",
    [
        ["<think>plan the query</think>\n\nThe answer is 42."],
        ["<thi", "nk>plan the ", "query</th", "ink>", "\n\nThe answer", " is 42."],
        list("<think>plan the query</think>\n\nThe answer is 42."),  # one character at a time
    ],
)
def test_think_tags_leave_the_content_however_the_stream_cuts_them(pieces: list[str]) -> None:
    s, shown = stream(pieces)
    assert s.reasoning == "plan the query"
    assert s.visible == "The answer is 42." == shown


def test_an_unclosed_leading_think_is_all_reasoning() -> None:
    s, shown = stream(["<think>still thinking when the stream", " ended"])
    assert s.reasoning == "still thinking when the stream ended"
    assert s.visible == "" == shown


def test_a_closing_tag_without_an_opening_one_makes_what_came_before_reasoning() -> None:
    # Qwen3's template opens <think> in the prompt, so the output starts inside it
    s = split_content("the user wants X</think>\n\nHere is X.")
    assert s.reasoning == "the user wants X" and s.visible == "Here is X."


def test_a_less_than_sign_that_is_no_tag_is_kept() -> None:
    s, shown = stream(["a < b and b <", "= c; <b>bold</b>"])
    assert s.visible == "a < b and b <= c; <b>bold</b>" == shown
    assert s.reasoning == ""


def test_tool_call_blocks_are_kept_apart_and_never_shown() -> None:
    s, shown = stream(["Checking.<tool_", 'call>\n{"name": "now", "arguments": {}}\n</tool_call>'])
    assert shown == "Checking." and s.visible == "Checking."
    assert [b.strip() for b in s.calls] == ['{"name": "now", "arguments": {}}']


def test_a_reply_starting_with_a_brace_is_held_back() -> None:
    s, shown = stream(['{"name": "now",', ' "arguments": {}}'])
    assert shown == "" and s.held == '{"name": "now", "arguments": {}}'


def request(tokens: list[str]) -> ModelRequest:
    async def on_token(delta: str) -> None:
        tokens.append(delta)

    return ModelRequest([{"role": "user", "content": "q"}], [], on_token=on_token)


@pytest.mark.anyio
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_fields_streamed_and_whole(chat_server: ChatServer, field: str) -> None:
    chat_server.push(
        Reply(events=[chunk({field: "think "}), chunk({field: "hard"}), chunk({"content": "ok"}, finish_reason="stop")])
    )
    whole = completion("ok")
    assert whole.body is not None
    whole.body["choices"][0]["message"][field] = "think hard"
    chat_server.push(whole)
    for stream_on in (True, False):
        model = build_openai_model("custom", base_url=chat_server.base_url, model="m", stream=stream_on)
        tokens: list[str] = []
        reply = await model.chat(request(tokens))
        await model.aclose()
        assert (reply.content, reply.reasoning, tokens) == ("ok", "think hard", ["ok"])
        assert reply.to_message() == {"role": "assistant", "content": "ok", "reasoning_content": "think hard"}


@pytest.mark.anyio
async def test_qwen3_without_a_reasoning_parser_streams_no_think_tag(chat_server: ChatServer) -> None:
    pieces = ["<think>", "\n用户问天气", "，直接答。\n", "</think>", "\n\n", "北京", "晴。"]
    chat_server.push(Reply(events=[chunk({"content": p}) for p in pieces] + [chunk({}, finish_reason="stop")]))
    model = build_openai_model("vllm", base_url=chat_server.base_url, model="Qwen/Qwen3-8B")
    tokens: list[str] = []
    reply = await model.chat(request(tokens))
    await model.aclose()
    assert reply.content == "北京晴。" and "".join(tokens) == "北京晴。"
    assert reply.reasoning == "\n用户问天气，直接答。\n"
    assert not any("think" in t for t in tokens)


def presumed(pieces: list[str]) -> tuple[ContentSplitter, str]:
    splitter = ContentSplitter(starts_thinking=True)
    shown = [splitter.feed(p) for p in pieces]
    shown.append(splitter.close())
    return splitter, "".join(shown)


def test_a_template_that_opened_think_in_the_prompt_streams_no_reasoning() -> None:
    # DeepSeek-R1 distills on vLLM without a reasoning parser: the output starts inside <think>
    s, shown = presumed(["The user asks", " 2+3.\n</th", "ink>\n\n", "It is ", "5."])
    assert s.reasoning == "The user asks 2+3.\n" and s.visible == "It is 5." and shown == "It is 5."


def test_a_presumed_thinking_that_never_closes_is_the_answer() -> None:
    s, shown = presumed(["Just ", "an answer <b>", "</b>"])
    assert s.reasoning == "" and shown == "Just an answer <b></b>" == s.visible


def test_an_explicit_think_tag_in_a_presumed_thinking_is_not_kept() -> None:
    s, shown = presumed(["<think>\nhmm</think>", "ok"])
    assert s.reasoning == "\nhmm" and shown == "ok"


@pytest.mark.anyio
async def test_a_server_that_parses_reasoning_ends_the_presumption(chat_server: ChatServer) -> None:
    events = [chunk({"reasoning_content": "thinking"}), chunk({"content": "Hel"}), chunk({"content": "lo"})]
    chat_server.push(Reply(events=[*events, chunk({}, finish_reason="stop")]))
    model = build_openai_model("vllm", base_url=chat_server.base_url, model="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
    tokens: list[str] = []
    reply = await model.chat(request(tokens))
    await model.aclose()
    assert (reply.content, reply.reasoning) == ("Hello", "thinking") and tokens == ["Hel", "lo"]
