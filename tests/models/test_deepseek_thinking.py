"""DeepSeek thinking mode on the wire: each tool-calling assistant message must go back with its
``reasoning_content`` or the server answers 400; the older deepseek-r1 rule refuses it anywhere.

The fake server enforces the rule exactly as DeepSeek words it (server_rules.py). As a new user
would: ``tether serve`` with ``TETHER_MODEL=openai TETHER_MODEL_PROVIDER=deepseek`` against it,
a finance question that needs two tool rounds succeeds; without the profile it fails on the 400.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.core.harness import ALICE, harness
from tests.packs.finance_cs.conftest import FinanceServer
from tests.servers import runtime_events, wait_status
from tether.core.session import Status
from tether.models.openai_compat import build_openai_model

from .chat_server import ChatServer, Reply, chunk, tool_call_delta
from .server_rules import deepseek_r1, deepseek_thinking

QUESTION = "查一下客户C10001最近的会话，再抽样几条手续费相关的会话"


def thinking_stream(reasoning: str, call: tuple[str, str, dict[str, Any]] | None = None, answer: str = "") -> Reply:
    """A DeepSeek thinking-mode stream: ``: keep-alive`` comments, reasoning deltas, then one tool
    call or the answer, usage in the last chunk, as api.deepseek.com sends them."""
    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    events += [chunk({"content": None, "reasoning_content": part}) for part in (reasoning[:6], reasoning[6:])]
    if call is not None:
        call_id, name, args = call
        text = json.dumps(args, ensure_ascii=False)
        events.append(chunk({"content": None, **tool_call_delta(0, id=call_id, name=name, arguments="")}))
        events += [chunk(tool_call_delta(0, arguments=piece)) for piece in (text[:5], text[5:])]
        events.append(chunk({"content": None}, finish_reason="tool_calls"))
    else:
        events += [chunk({"content": piece, "reasoning_content": None}) for piece in (answer[:4], answer[4:])]
        events.append(chunk({"content": ""}, finish_reason="stop"))
    events.append(chunk(None, usage={"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160}))
    sse = "".join(f": keep-alive\n\ndata: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
    return Reply(raw=sse + "data: [DONE]\n\n")


def finance_script() -> list[Reply]:
    return [
        thinking_stream(
            "用户要查客户C10001的会话，先查询。",
            ("call_00_q1", "query_customer_sessions_mysql", {"customer_id": "C10001", "limit": 5}),
        ),
        thinking_stream(
            "已拿到会话；再按手续费抽样。",
            ("call_00_s2", "sample_sessions_by_keywords", {"keywords": ["手续费"], "size": 3}),
        ),
        thinking_stream("两步都完成了，可以回答。", answer="已查询客户C10001的会话，并抽样了3条手续费相关会话。"),
    ]


def start(server: FinanceServer, message: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with server.client() as alice:
        r = alice.post("/api/agent/sessions", json={"message": message})
        assert r.status_code in (200, 201), r.text
        session = wait_status(alice, r.json()["sessionId"], timeout=60)
        return session, runtime_events(alice, session["sessionId"])


def deepseek_env(chat: ChatServer, provider: str) -> dict[str, str]:
    return {
        "TETHER_MODEL": "openai",
        "TETHER_MODEL_PROVIDER": provider,
        "TETHER_MODEL_BASE_URL": chat.base_url,
        "TETHER_MODEL_NAME": "deepseek-reasoner",
        "TETHER_MODEL_API_KEY": "sk-deepseek-test-0123456789",
        "TETHER_SKILL_ROUTING": "rules",
    }


def test_a_finance_turn_with_two_tool_rounds_succeeds_on_deepseek_thinking_mode(tmp_path: Path) -> None:
    with ChatServer(finance_script(), rules=deepseek_thinking) as chat:
        server = FinanceServer(tmp_path, **deepseek_env(chat, "deepseek")).start()
        try:
            session, events = start(server, QUESTION)
        finally:
            server.stop()
        assert session["status"] == "SUCCEEDED", session.get("lastError")
        assert not chat.refused
        chat.assert_consumed()
    third = chat.bodies[2]["messages"]
    sent_back = [m["reasoning_content"] for m in third if m["role"] == "assistant"]
    assert sent_back == ["用户要查客户C10001的会话，先查询。", "已拿到会话；再按手续费抽样。"]
    decisions = [e for e in events if e["type"] == "MODEL_DECISION"]
    assert [d["data"].get("reasoning") for d in decisions] == [
        "用户要查客户C10001的会话，先查询。",
        "已拿到会话；再按手续费抽样。",
        "两步都完成了，可以回答。",
    ]
    tokens = "".join(e["data"]["delta"] for e in events if e["type"] == "TOKEN")
    assert tokens == "已查询客户C10001的会话，并抽样了3条手续费相关会话。"  # no reasoning in the tokens
    [answer] = [e for e in events if e["type"] == "ASSISTANT_MESSAGE"]
    assert answer["data"]["content"] == tokens and "reasoning" not in answer["data"]


def test_behind_a_gateway_the_rule_is_learned_from_the_400_and_kept(tmp_path: Path) -> None:
    """A provider tether does not know (a gateway, LiteLLM, one-api): the second round is refused
    once, sent again with the reasoning, and the third goes out right at once."""
    with ChatServer(finance_script(), rules=deepseek_thinking) as chat:
        server = FinanceServer(tmp_path, **deepseek_env(chat, "custom")).start()
        try:
            session, _ = start(server, QUESTION)
        finally:
            server.stop()
        chat.assert_consumed()
    assert session["status"] == "SUCCEEDED", session.get("lastError")
    assert len(chat.refused) == 1 and "message index 2" in str(chat.refused[0].body)
    refused, again, third = chat.bodies[1], chat.bodies[2], chat.bodies[3]
    assert "reasoning_content" not in refused["messages"][2]
    assert again["messages"][2]["reasoning_content"] == "用户要查客户C10001的会话，先查询。"
    sent_back = [m["reasoning_content"] for m in third["messages"] if m["role"] == "assistant"]
    assert sent_back == ["用户要查客户C10001的会话，先查询。", "已拿到会话；再按手续费抽样。"]
    assert len(chat.requests) == 4


def test_an_older_r1_behind_the_deepseek_name_is_learned_too(tmp_path: Path) -> None:
    """deepseek-reasoner that is still R1 (an old gateway route): it refuses the reasoning; the
    adapter strips it, asks again once, and keeps stripping it."""
    script = [
        thinking_stream("先加。", ("call_1", "add", {"a": 2, "b": 3})),
        thinking_stream("再加。", ("call_2", "add", {"a": 5, "b": 1})),
        thinking_stream("好了。", answer="The sum is 6."),
    ]
    with ChatServer(script, rules=deepseek_r1) as chat:

        async def main() -> tuple[Status, str | None]:
            llm = build_openai_model("deepseek", base_url=chat.base_url, model="deepseek-reasoner", api_key="sk-x-key")
            async with harness(f"sqlite:///{tmp_path}/tether.db", [], model=llm) as h:
                s = await h.runtime.start_session(ALICE, "run the test: add 2 and 3, then add 1", {})
            await llm.aclose()
            return s.status, llm.learned_echo

        assert asyncio.run(main()) == (Status.SUCCEEDED, "never")
        chat.assert_consumed()
    assert len(chat.refused) == 1
    assert not any("reasoning_content" in m for body in chat.bodies[2:] for m in body["messages"])


@pytest.mark.parametrize(
    ("model", "rules"), [("deepseek-reasoner", deepseek_thinking), ("deepseek-r1-distill", deepseek_r1)]
)
def test_the_reasoning_goes_back_only_where_the_model_requires_it(db_url: str, model: str, rules: Any) -> None:
    script = [
        thinking_stream("先加。", ("call_1", "add", {"a": 2, "b": 3})),
        thinking_stream("再加。", ("call_2", "add", {"a": 5, "b": 1})),
        thinking_stream("好了。", answer="The sum is 6."),
    ]
    with ChatServer(script, rules=rules) as chat:

        async def main() -> Status:
            llm = build_openai_model("deepseek", base_url=chat.base_url, model=model, api_key="sk-test-key")
            async with harness(db_url, [], model=llm) as h:
                s = await h.runtime.start_session(ALICE, "run the test: add 2 and 3, then add 1", {})
                assistant = [m for m in s.transcript if m["role"] == "assistant"]
                assert [m.get("reasoning_content") for m in assistant] == ["先加。", "再加。", "好了。"]
            await llm.aclose()
            return s.status

        assert asyncio.run(main()) is Status.SUCCEEDED
        assert not chat.refused
    first_assistant = next(m for m in chat.bodies[2]["messages"] if m["role"] == "assistant")
    assert ("reasoning_content" in first_assistant) is (model == "deepseek-reasoner")
