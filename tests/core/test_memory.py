"""The prompt window: the budget, whole turns, cut tool results, the rolling summary.

Unit tests of ``core/memory.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.core.harness import assert_valid_messages
from tether.core import memory
from tether.core.memory import (
    ELIDED,
    clip_result,
    deterministic_summary,
    estimate_tokens,
    fold_point,
    request_tokens,
    turns,
    window,
)
from tether.core.messages import Fold, ModelRequest
from tether.models.planner import PlannerModel
from tether.models.scripted import ScriptedModel, failure, text

Message = dict[str, Any]
SYSTEM: Message = {"role": "system", "content": "You are tether. " * 20}
BUDGET = 3000


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def said(content: str) -> Message:
    return {"role": "assistant", "content": content}


def call(call_id: str, name: str = "echo", args: str = '{"text": "x"}') -> Message:
    fn = {"name": name, "arguments": args}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": fn}]}


def result(call_id: str, data: Any, tool: str = "echo", kind: str = "value") -> Message:
    body = json.dumps({"tool": tool, "kind": kind, "data": data}, ensure_ascii=False)
    return {"role": "tool", "tool_call_id": call_id, "content": body}


def conversation(n: int, filler: int = 40) -> list[Message]:
    """The system prompt, then ``n`` turns: a request, a tool call, its result, an answer."""
    msgs = [SYSTEM]
    for i in range(n):
        msgs += [
            user(f"request {i}: " + "word " * filler),
            call(f"c{i}"),
            result(f"c{i}", {"order_id": f"ORD-{i}", "n": i}),
            said(f"Answer {i}.\nmore detail"),
        ]
    return msgs


def folded_window(msgs: list[Message], budget: int = BUDGET) -> tuple[list[Message], str | None, int]:
    """Fold as the turn does (with the deterministic summary), then build the window."""
    summary, upto = None, 0
    point = fold_point(msgs, summary, upto, budget)
    if point > upto:
        summary = deterministic_summary(summary, msgs[max(upto, 1) : point], memory.summary_cap(budget))
        upto = point
    return window(msgs, summary, upto, budget), summary, upto


# ---- estimates and cuts ----------------------------------------------------------------------------


def test_the_estimate_counts_cjk_characters_one_each_and_other_text_four_to_a_token() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("订单 ORD-1") == 2 + 2  # two CJK, then " ORD-1" (6 characters)
    assert request_tokens([user("abcd")]) == memory.MESSAGE_OVERHEAD + 1


def test_a_cut_tool_result_stays_valid_json_with_its_frame_and_a_head() -> None:
    big = result("c1", {"rows": ["x" * 50 for _ in range(400)]})
    cut = clip_result(big, 200)
    assert request_tokens([cut]) <= 200 and cut["tool_call_id"] == "c1"
    body = json.loads(cut["content"])
    assert body["tool"] == "echo" and body["kind"] == "value" and "truncated" in body
    assert body["head"].startswith('{"rows": ["xxx')
    assert clip_result(big, 10_000_000) is big  # fits: unchanged
    raw = {"role": "tool", "tool_call_id": "c2", "content": "not json " * 500}
    cut_raw = json.loads(clip_result(raw, 100)["content"])
    assert cut_raw["head"].startswith("not json") and "tool" not in cut_raw


def test_turns_begin_at_user_messages_and_never_part_a_call_from_its_result() -> None:
    msgs = [SYSTEM, user("a"), call("c1"), result("c1", 1), said("done"), user("b"), said("ok")]
    assert turns(msgs, 1) == [(1, 5), (5, 7)]
    # a user message while a call is unanswered (a crash before recovery) does not start a turn
    odd = [SYSTEM, user("a"), call("c1"), user("b"), result("c1", 1), user("c")]
    assert turns(odd, 1) == [(1, 5), (5, 6)]
    assert turns(msgs, len(msgs)) == []


# ---- the window ----------------------------------------------------------------------------------


def test_a_short_conversation_is_sent_whole() -> None:
    msgs = conversation(3)
    assert fold_point(msgs, None, 0, BUDGET) == 0
    assert window(msgs, None, 0, BUDGET) == msgs


def test_a_long_conversation_keeps_the_newest_whole_turns_under_the_budget_with_a_summary() -> None:
    msgs = conversation(60)
    sent, summary, upto = folded_window(msgs)
    assert summary and upto > 1 and msgs[upto]["role"] == "user"
    assert request_tokens(sent) <= BUDGET
    assert sent[0] == SYSTEM and sent[1]["role"] == "system" and summary in sent[1]["content"]
    assert sent[2] == msgs[upto] and sent[-1] == msgs[-1]
    assert sent[2:] == msgs[upto:]  # the kept turns as they are (their results are small)
    assert_valid_messages(sent[2:])
    assert "request 0:" in summary and "ORD-0" in summary  # the first turn survives in the summary


def test_folding_happens_in_batches_not_every_turn() -> None:
    msgs = conversation(60)
    _, summary, upto = folded_window(msgs)
    grown = msgs + conversation(3)[1:]
    assert fold_point(grown, summary, upto, BUDGET) == upto  # three more turns still fit
    more = msgs + conversation(30)[1:]
    assert fold_point(more, summary, upto, BUDGET) > upto


def test_an_earlier_turns_large_result_is_cut_and_the_current_turns_kept_while_it_fits() -> None:
    rows = {"rows": [f"row {i} " + "v" * 30 for i in range(60)]}  # about 700 tokens
    msgs = [SYSTEM, user("first"), call("c1"), result("c1", rows), said("one"), user("second"), call("c2")]
    msgs.append(result("c2", rows))
    sent = window(msgs, None, 0, BUDGET)
    assert request_tokens(sent) <= BUDGET
    old, current = sent[3], sent[-1]
    assert "truncated" in json.loads(old["content"]) and msgs[3]["content"] != old["content"]
    assert current == msgs[-1]  # the current turn's result is whole


def test_the_current_turns_results_are_cut_evenly_when_they_cannot_fit_whole() -> None:
    huge = {"text": "z" * 40_000}
    msgs = [SYSTEM, user("earlier"), said("fine"), user("now"), call("c1"), result("c1", huge)]
    msgs += [call("c2"), result("c2", {"small": 1}), call("c3"), result("c3", huge)]
    point = fold_point(msgs, None, 0, BUDGET)
    assert point == 3  # history yields to the current turn: the earlier turn is folded
    sent = window(msgs, "- user: earlier", point, BUDGET)
    assert request_tokens(sent) <= BUDGET
    assert_valid_messages(sent[2:])
    tools = [m for m in sent if m["role"] == "tool"]
    assert json.loads(tools[1]["content"])["data"] == {"small": 1}  # small results stay whole
    heads = [json.loads(m["content"])["head"] for m in (tools[0], tools[2])]
    assert all(h.startswith('{"text": "zzz') for h in heads) and abs(len(heads[0]) - len(heads[1])) < 50


# ---- the summaries -------------------------------------------------------------------------------


def test_the_deterministic_summary_keeps_requests_answers_tools_and_ids_within_its_bound() -> None:
    msgs = conversation(1)[1:]
    msgs[0] = user("My name is Zhang Wei, order ORD-58213. 请记住。")
    line = deterministic_summary(None, msgs, 300)
    assert (
        line
        == "- user: My name is Zhang Wei, order ORD-58213. 请记住。 | answer: Answer 0. | tools: echo | data: order_id=ORD-0, n=0"
    )
    failed = [user("again"), call("c9"), result("c9", {"error": "down"}, kind="error")]
    assert deterministic_summary("- earlier", failed, 300) == "- earlier\n- user: again | tools: echo (failed)"
    summary: str | None = None
    for i in range(100):  # folded a turn at a time, as a long session does
        summary = deterministic_summary(summary, conversation(1, filler=5)[1:] if i else msgs, 300)
    assert summary is not None and estimate_tokens(summary) <= 300
    lines = summary.splitlines()
    assert lines[0] == line and ELIDED in lines and "ORD-58213" in summary  # the oldest lines stay
    assert lines[-1].startswith("- user: request 0:")  # and the newest


def test_the_planner_answers_a_summary_request_with_the_deterministic_summary() -> None:
    msgs = conversation(4)[1:]
    fold = Fold("- user: hello | answer: hi", msgs, 250)
    reply = asyncio.run(PlannerModel().chat(ModelRequest([], [], purpose="summary", fold=fold)))
    assert reply.content == deterministic_summary(fold.previous, msgs, 250)
    assert reply.content.startswith("- user: hello") and reply.meta["model"] == "planner"


def test_fold_asks_the_model_a_chunk_at_a_time_within_the_budget_and_falls_back_on_failure() -> None:
    msgs = conversation(30, filler=60)[1:]  # about 3000 tokens to fold into a 1000-token budget
    model = ScriptedModel([lambda r: text(f"S{len(r.fold.messages)}"), failure("503"), text("  ")] * 5)  # type: ignore[union-attr]
    summary = asyncio.run(memory.fold(model, None, msgs, 1000))
    summaries = model.requests
    assert len(summaries) > 3 and all(r.purpose == "summary" and not r.tools for r in summaries)
    assert all(request_tokens(r.messages) <= 1000 for r in summaries)
    assert sum(len(r.fold.messages) for r in summaries if r.fold) == len(msgs)  # every turn, once
    assert summaries[1].fold and summaries[1].fold.previous == f"S{len(summaries[0].fold.messages)}"  # type: ignore[union-attr]
    assert summaries[2].fold and summaries[2].fold.previous and "- user: request" in summaries[2].fold.previous
    assert estimate_tokens(summary) <= memory.summary_cap(1000)
