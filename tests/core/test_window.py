"""The prompt window: the budget, whole turns, cut tool results, the rolling summary.

Unit tests of ``core/window.py`` and ``core/summary.py``, then long conversations through the
runtime on a real SQLite store with the scripted model (and the offline planner behind it),
asserting on the recorded requests with the same estimator the window uses.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.core.harness import assert_valid_messages, harness
from tether.core import window as memory
from tether.core.messages import Fold, ModelReply, ModelRequest
from tether.core.session import Status
from tether.core.skills import Skill
from tether.core.summary import ELIDED, deterministic_summary, fold
from tether.core.tools import ToolContext, tool
from tether.core.turn import Limits
from tether.core.window import clip_result, estimate_tokens, fold_point, request_tokens, turns, window
from tether.models.planner import PlannerModel
from tether.models.scripted import ScriptedModel, calls, failure, text

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


def test_the_tool_specs_estimate_follows_what_the_specs_say() -> None:
    """Kept per (names, descriptions, parameters objects): a changed spec is estimated afresh."""
    params: dict[str, Any] = {"type": "object", "properties": {"order_id": {"type": "string"}}}

    def specs(description: str) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": "t", "description": description, "parameters": params}}]

    def fresh(tools: list[dict[str, Any]]) -> int:
        return estimate_tokens(json.dumps(tools, ensure_ascii=False))

    short, long = specs("Look up an order."), specs("查询订单" * 50)
    assert memory.spec_tokens(short) == fresh(short)
    assert memory.spec_tokens(long) == fresh(long) > fresh(short)
    assert memory.spec_tokens(specs("Look up an order.")) == fresh(short)  # rebuilt around the same parameters
    other = {**params, "properties": {**params["properties"], "note": {"type": "string", "description": "x" * 400}}}
    wider = [{"type": "function", "function": {"name": "t", "description": "Look up an order.", "parameters": other}}]
    assert memory.spec_tokens(wider) == fresh(wider) > fresh(short)  # another parameters object: estimated afresh
    assert memory.spec_tokens([]) == 0


def test_a_cut_tool_result_stays_valid_json_with_its_frame_and_a_head() -> None:
    big = result("c1", {"total": 400, "handle_id": "h-1", "rows": ["x" * 50 for _ in range(400)]})
    cut = clip_result(big, 200)
    assert request_tokens([cut]) <= 200 and cut["tool_call_id"] == "c1"
    body = json.loads(cut["content"])
    assert body["tool"] == "echo" and body["kind"] == "value" and "truncated" in body
    assert body["data"] == {"total": 400, "handle_id": "h-1"}  # what a template or the model refers to
    assert body["head"].startswith('{"rows": ["xxx')
    rows_only = json.loads(clip_result(result("c1", {"rows": ["x" * 50] * 400}), 200)["content"])
    assert "data" not in rows_only and rows_only["head"].startswith('{"rows": ["xxx')
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


def test_a_turns_memo_of_estimates_plans_as_a_fresh_estimate_does_round_after_round() -> None:
    """The turn remembers each message's estimate across its rounds; a message replaced (a tool
    result settled, the system prompt refreshed) is a new dict and is measured again."""
    memo: memory.Sizes = {}
    msgs = conversation(40)
    for i in range(12):
        msgs.append(call(f"n{i}"))
        msgs.append(result(f"n{i}", {"rows": ["r" * 60] * (i * 4)}))
        if i == 6:  # replaced, as AgentSession.set_message does: the plan must see the new size
            msgs[-1] = result(f"n{i}", {"text": "y" * 9_000})
        assert memory.plan(msgs, None, 0, BUDGET, memo=memo) == memory.plan(msgs, None, 0, BUDGET)
    assert len(memo) >= len(msgs)  # every message was measured once and kept


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
    summary = asyncio.run(fold(model, None, msgs, 1000))
    summaries = model.requests
    assert len(summaries) > 3 and all(r.purpose == "summary" and not r.tools for r in summaries)
    assert all(request_tokens(r.messages) <= 1000 for r in summaries)
    assert sum(len(r.fold.messages) for r in summaries if r.fold) == len(msgs)  # every turn, once
    assert summaries[1].fold and summaries[1].fold.previous == f"S{len(summaries[0].fold.messages)}"  # type: ignore[union-attr]
    assert summaries[2].fold and summaries[2].fold.previous and "- user: request" in summaries[2].fold.previous
    assert estimate_tokens(summary) <= memory.summary_cap(1000)


# ---- through the runtime -------------------------------------------------------------------------


def under_budget(model: ScriptedModel, budget: int) -> None:
    for r in model.requests:
        assert request_tokens(r.messages, r.tools) <= budget, f"a {r.purpose} request is over the budget"
        if r.purpose == "turn":
            assert_valid_messages(r.messages)


def test_200_turns_stay_under_the_budget_and_remember_what_turn_3_said(sqlite_url: str) -> None:
    said_in_turn_3 = "My name is Zhang Wei and my order number is ORD-58213; please remember both."

    def summarise(request: ModelRequest) -> ModelReply:  # a model that keeps the requests, briefly
        assert request.fold is not None
        asked = [m["content"][:90] for m in request.fold.messages if m["role"] == "user"]
        return text("\n".join([*(request.fold.previous or "").splitlines(), *asked]))

    def turn(i: int) -> list[Any]:
        return [calls(("echo", {"text": f"lookup {i}"})), text(f"Turn {i}: done, nothing else to report.")]

    async def main() -> None:
        replies = [entry for i in range(1, 201) for entry in turn(i)]
        limits = Limits(context_tokens=BUDGET, model_backoff_s=0.01)
        async with harness(sqlite_url, replies, limits=limits, summaries=[summarise] * 200) as h:
            s = await h.start("hello, I have a question about my orders")
            for i in range(2, 201):
                message = said_in_turn_3 if i == 3 else f"question {i}: " + "and some context " * 10
                s = await h.runtime.post_message(s.session_id, s.owner, message)
                assert s.status is Status.SUCCEEDED
            h.model.assert_consumed()
            under_budget(h.model, BUDGET)
            folds = [r for r in h.model.requests if r.purpose == "summary"]
            assert 5 <= len(folds) <= 40  # in batches, not every round
            last = h.model.requests[-1].messages
            assert last[1]["content"].startswith(memory.SUMMARY_HEADER)
            assert "Zhang Wei" in last[1]["content"] and "ORD-58213" in last[1]["content"]
            assert last[2]["role"] == "user"
            stored = await h.load(s.session_id)
            assert len([m for m in stored.transcript if m["role"] == "user"]) == 200  # all of it is kept
            assert stored.summary and "ORD-58213" in stored.summary and stored.summary_upto > 100

    asyncio.run(main())


def test_a_huge_tool_result_is_cut_in_the_window_and_whole_in_the_stored_transcript(db_url: str) -> None:
    huge = "z" * 60_000

    @tool()
    async def dump(ctx: ToolContext, table: str) -> Any:
        """Return a whole table."""
        return {"table": table, "rows": huge}

    skill = Skill(name="dump", description="Dumps.", allowed_tools=("dump",), body="Dump.", keywords=("test",))

    async def main() -> None:
        replies = [calls(("dump", {"table": "orders"}, "c1")), text("that was long"), text("next")]
        limits = Limits(context_tokens=BUDGET)
        async with harness(db_url, replies, limits=limits, tools=[dump], skills=[skill], summaries=[]) as h:
            s = await h.start()
            assert s.status is Status.SUCCEEDED
            s = await h.runtime.post_message(s.session_id, s.owner, "and now?")
            under_budget(h.model, BUDGET)
            for request in h.model.requests[1:]:  # in the turn of the call, and in the next one
                sent = next(m for m in request.messages if m["role"] == "tool")
                body = json.loads(sent["content"])
                assert body["tool"] == "dump" and body["data"] == {"table": "orders"}  # short fields stay
                assert "truncated" in body and body["head"].startswith('{"rows": "zzz')
            stored = await h.load(s.session_id)
            whole = next(m for m in stored.transcript if m["role"] == "tool")
            assert json.loads(whole["content"])["data"]["rows"] == huge
            assert stored.executed_steps[0].result["rows"] == huge
            h.model.assert_consumed()

    asyncio.run(main())


ECHO_SKILL = Skill(
    name="echo-back",
    description="Echoes the last word.",
    allowed_tools=("echo",),
    body="Echo it.",
    keywords=("test",),
    plan=({"tool": "echo", "args": {"text": "${extract.word}"}},),
    answer="Echoed ${prev.text}.\nHandle ${prev.handle_id}.",
)


def last_word(query: str, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"word": query.split()[-1]}


def test_the_offline_planner_folds_old_turns_with_its_deterministic_summary(db_url: str) -> None:
    planner = PlannerModel([last_word])

    async def main() -> None:
        limits = Limits(context_tokens=BUDGET)
        script = [planner.chat] * 200
        async with harness(db_url, script, limits=limits, skills=[ECHO_SKILL], summaries=list(script)) as h:
            s = await h.start("run the test for ORD-1")
            s = await h.runtime.post_message(s.session_id, s.owner, "my customer is Zhang Wei, order ORD-58213")
            for i in range(3, 41):
                s = await h.runtime.post_message(s.session_id, s.owner, f"and now {'the next ' * 20} ORD-{i}")
                assert s.status is Status.SUCCEEDED and s.transcript[-1]["content"].startswith(f"Echoed ORD-{i}.")
            under_budget(h.model, BUDGET)
            folds = [r for r in h.model.requests if r.purpose == "summary"]
            assert folds and all(r.fold for r in folds)
            stored = await h.load(s.session_id)
            assert stored.summary is not None
            lines = stored.summary.splitlines()
            assert (
                lines[0]
                == "- user: run the test for ORD-1 | answer: Echoed ORD-1. | tools: echo | data: handle_id=h-ORD-1-0001"
            )
            assert lines[1].startswith("- user: my customer is Zhang Wei, order ORD-58213 | answer: Echoed ORD-58213.")
            assert estimate_tokens(stored.summary) <= memory.summary_cap(BUDGET)
            assert stored.summary in h.model.requests[-1].messages[1]["content"]

    asyncio.run(main())


def test_a_failing_summary_call_falls_back_to_the_deterministic_summary_and_the_turn_succeeds(db_url: str) -> None:
    async def main() -> None:
        replies = [entry for i in range(30) for entry in (calls(("add", {"a": i, "b": 1})), text(f"It is {i + 1}."))]
        summaries = [failure("503 from endpoint"), failure("401 bad key", retryable=False)] * 20
        limits = Limits(context_tokens=BUDGET)
        async with harness(db_url, replies, limits=limits, summaries=summaries) as h:
            s = await h.start("test: what is 0 + 1? " + "please " * 40)
            for i in range(1, 30):
                s = await h.runtime.post_message(s.session_id, s.owner, f"what is {i} + 1? " + "please " * 40)
                assert s.status is Status.SUCCEEDED and s.transcript[-1]["content"] == f"It is {i + 1}."
            h.model.assert_consumed()
            under_budget(h.model, BUDGET)
            assert 1 <= len([r for r in h.model.requests if r.purpose == "summary"]) < 30
            stored = await h.load(s.session_id)
            assert stored.summary and stored.summary.startswith("- user: test: what is 0 + 1? please please")
            assert "answer: It is 1. | tools: add | data: sum=1" in stored.summary.splitlines()[0]
            assert "ERROR" not in await h.types(s.session_id)  # the fallback is silent: nothing failed for the user

    asyncio.run(main())
