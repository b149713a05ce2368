"""The conformance suite: each server's answers as it sends them (tests/models/wire/, composed from
the servers' docs and source), each read by the adapter and run as a whole turn against a fake
that enforces that server's request-side rules (server_rules.py) — and those rules, each broken
on purpose, answered with an error that says what to change."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.core.harness import ALICE, assert_valid_transcript, harness
from tether.core.messages import ModelRequest
from tether.core.session import Status
from tether.errors import ModelError
from tether.models.openai_compat import build_openai_model

from .chat_server import ChatServer, Reply, completion, text_stream
from .server_rules import dashscope, deepseek_thinking, llamacpp, ollama, strict_template, vllm

WIRE = Path(__file__).parent / "wire"
ADD = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
WHOAMI = {"name": "whoami", "description": "Who is asking.", "parameters": {"type": "object", "properties": {}}}


@dataclass(frozen=True)
class Case:
    fixture: str  # under wire/
    provider: str
    model: str
    rules: Any = None
    content: str | None = None
    reasoning: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    recovered: bool = False

    @property
    def streamed(self) -> bool:
        return self.fixture.endswith(".sse")

    def reply(self) -> Reply:
        text = (WIRE / self.fixture).read_text()
        return Reply(raw=text) if self.streamed else Reply(body=json.loads(text))

    def answer(self) -> Reply:
        return text_stream(["Done."]) if self.streamed else completion("Done.")


ADD_2_3 = [("add", {"a": 2, "b": 3})]
CASES = [
    Case("openai/parallel_tool_calls.sse", "openai", "gpt-4o-mini", calls=[*ADD_2_3, ("add", {"a": 5, "b": 1})]),
    Case(
        "deepseek/thinking_tool_call.sse",
        "deepseek",
        "deepseek-reasoner",
        deepseek_thinking,
        reasoning="The user wants 2 plus 3; call add.",
        calls=ADD_2_3,
    ),
    Case(
        "deepseek/thinking_answer.json",
        "deepseek",
        "deepseek-reasoner",
        deepseek_thinking,
        content="2 + 3 = 5.",
        reasoning="Simple sum; no tool needed.",
    ),
    Case("dashscope/tool_call.sse", "qwen", "qwen-plus", dashscope(False), reasoning="要算2加3。", calls=ADD_2_3),
    Case(
        "ollama/tool_call.sse",
        "ollama",
        "qwen3:14b",
        ollama("qwen3:14b", tools=True),
        reasoning="Add 2 and 3 with the tool.",
        calls=ADD_2_3,
    ),
    Case("ollama/answer.json", "ollama", "qwen3:14b", ollama("qwen3:14b", True), "2 + 3 = 5.", "Trivial."),
    Case("vllm/hermes_tool_call.sse", "vllm", "Qwen/Qwen2.5-7B-Instruct", vllm(True), calls=[("whoami", {})]),
    Case(
        "vllm/qwen3_unparsed.sse",
        "vllm",
        "Qwen/Qwen3-8B",
        vllm(True),
        reasoning="\nNeed add(2, 3).\n",
        calls=ADD_2_3,
        recovered=True,
    ),
    Case(
        "vllm/r1_distill_no_parser.sse",
        "vllm",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
        vllm(True),
        content="2 + 3 = 5.",
        reasoning="Okay, the user wants 2 + 3. That is 5.\n",
    ),
    Case(
        "llamacpp/tool_call.sse",
        "llamacpp",
        "qwen3-8b",
        llamacpp(jinja=True),
        reasoning="Who is the user? Use whoami.",
        calls=[("whoami", {})],
    ),
    Case("llamacpp/answer.json", "llamacpp", "qwen3-8b", llamacpp(jinja=True), "2 + 3 = 5.", "Easy."),
]
IDS = [c.fixture for c in CASES]


def model_for(case: Case, server: ChatServer, **options: Any) -> Any:
    return build_openai_model(
        case.provider, base_url=server.base_url, model=case.model, api_key="sk-test", stream=case.streamed, **options
    )


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_the_adapter_reads_each_servers_answer(case: Case) -> None:
    tokens: list[str] = []

    async def on_token(delta: str) -> None:
        tokens.append(delta)

    with ChatServer([case.reply()], rules=case.rules) as server:
        model = model_for(case, server)
        request = ModelRequest([{"role": "user", "content": "add 2 and 3"}], [ADD, WHOAMI], on_token=on_token)
        reply = await model.chat(request)
        await model.aclose()
        assert not server.refused, server.refused[0].body if server.refused else None
    assert reply.content == case.content
    assert reply.reasoning == case.reasoning
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == case.calls
    assert len({c.id for c in reply.tool_calls}) == len(reply.tool_calls) and all(c.id for c in reply.tool_calls)
    assert ("recovered" in reply.meta) is case.recovered
    assert "".join(tokens) == (case.content or "")
    assert not any("<think>" in t or "<tool_call>" in t for t in tokens)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_whole_turn_on_each_server(sqlite_url: str, case: Case) -> None:  # the store is not under test
    script = [case.reply()] + ([case.answer()] if case.calls else [])
    with ChatServer(script, rules=case.rules) as server:

        async def main() -> None:
            model = model_for(case, server)
            async with harness(sqlite_url, [], model=model) as h:
                s = await h.runtime.start_session(ALICE, "run the test: add 2 and 3", {})
                assert s.status is Status.SUCCEEDED, s.last_error
                assert_valid_transcript(s)
                ran = {name: sum(1 for n, _ in case.calls if n == name) for name, _ in case.calls}
                assert h.counters.runs == {k: v for k, v in ran.items() if k != "whoami"}
                assert s.transcript[-1]["content"] == (case.content or "Done.")
            await model.aclose()

        asyncio.run(main())
        assert not server.refused, server.refused[0].body if server.refused else None
        server.assert_consumed()


# ---- each server's request-side rules ----------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("provider", "rules", "says", "retryable"),
    [
        ("vllm", vllm(auto_tool_choice=False), "--enable-auto-tool-choice and --tool-call-parser", False),
        ("llamacpp", llamacpp(jinja=False), "started with --jinja", False),
        ("ollama", ollama("qwen2.5:7b", tools=False), "Ollama model qwen2.5:7b does not support tools", False),
    ],
)
async def test_a_misconfigured_server_is_reported_with_what_to_change(
    provider: str, rules: Any, says: str, retryable: bool
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "add 2 and 3"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
            "reasoning_content": "need add",
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    ]
    with ChatServer([], rules=rules) as server:
        model = build_openai_model(provider, base_url=server.base_url, model="qwen2.5:7b", stream=False)
        with pytest.raises(ModelError) as info:
            await model.chat(ModelRequest(history, [ADD]))
        await model.aclose()
    assert says in info.value.message and info.value.retryable is retryable


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("provider", "model", "thinking", "stream", "sent", "streamed"),
    [
        ("qwen", "qwen3-32b", "on", False, {"enable_thinking": True}, True),  # thinking forces a stream
        ("qwen", "qwen3-32b", "auto", False, {"enable_thinking": False}, False),  # else DashScope refuses
        ("qwen", "qwen3-32b", "auto", True, {}, True),
        ("deepseek", "deepseek-chat", "on", True, {"thinking": {"type": "enabled"}}, True),
        ("deepseek", "deepseek-reasoner", "off", True, {"thinking": {"type": "disabled"}}, True),
        ("vllm", "Qwen/Qwen3-8B", "off", True, {"chat_template_kwargs": {"enable_thinking": False}}, True),
        ("llamacpp", "qwen3", "on", True, {"chat_template_kwargs": {"enable_thinking": True}}, True),
        ("ollama", "qwen3:14b", "off", True, {"reasoning_effort": "none"}, True),
        ("openai", "gpt-4o-mini", "on", True, {}, True),
    ],
)
async def test_thinking_is_switched_as_each_server_wants(
    provider: str, model: str, thinking: str, stream: bool, sent: dict[str, Any], streamed: bool
) -> None:
    rules = dashscope(thinks_by_default=True) if provider == "qwen" else None
    with ChatServer([text_stream(["ok"]) if streamed else completion("ok")], rules=rules) as server:
        llm = build_openai_model(
            provider, base_url=server.base_url, model=model, api_key="k", thinking=thinking, stream=stream
        )
        assert (await llm.chat(ModelRequest([{"role": "user", "content": "hi"}], []))).content == "ok"
        await llm.aclose()
        assert not server.refused
    body = server.bodies[0]
    switches = ("enable_thinking", "thinking", "chat_template_kwargs", "reasoning_effort")
    assert {k: body[k] for k in switches if k in body} == sent
    assert bool(body.get("stream")) is streamed


@pytest.mark.anyio
async def test_ollama_never_gets_the_fields_it_ignores() -> None:
    with ChatServer([completion("ok")], rules=ollama("qwen3:14b", tools=True)) as server:
        llm = build_openai_model("ollama", base_url=server.base_url, model="qwen3:14b", stream=False)
        draft = await llm.complete(
            [{"role": "user", "content": "hi"}], [ADD], tool_choice="required", parallel_tool_calls=True
        )
        await llm.aclose()
    assert draft.content == "ok" and not server.refused
    assert "tool_choice" not in server.bodies[0] and "parallel_tool_calls" not in server.bodies[0]


def test_system_messages_reach_a_strict_template_as_one() -> None:
    messages = [
        {"role": "system", "content": "You are tether."},
        {"role": "system", "content": "Summary of the earlier conversation: …"},
        {"role": "user", "content": "hi"},
    ]
    with ChatServer([completion("ok")], rules=strict_template) as server:

        async def main() -> None:
            llm = build_openai_model("vllm", base_url=server.base_url, model="m", stream=False)
            await llm.chat(ModelRequest(messages, []))
            await llm.aclose()

        asyncio.run(main())
    [system, user] = server.bodies[0]["messages"]
    assert system["content"] == "You are tether.\n\nSummary of the earlier conversation: …" and user["content"] == "hi"
