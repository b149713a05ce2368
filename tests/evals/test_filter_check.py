"""The filter check on the finance look-up: a session query's arguments are its filters, and one
the question did not hold makes the answer wrong (a table of all lines for 股票, say)."""

from __future__ import annotations

from typing import Any

from tether.evals.checks import _reads_verdict
from tether.evals.tasks import Task, Turn


def task(filters: dict[str, Any] | None, refuse: bool = False) -> Task:
    return Task("q", "finance", "finance-query", "dev-alice", (Turn(say="…"),), filters=filters, refuse=refuse)


def query(**args: Any) -> dict[str, Any]:
    return {"toolId": "query_customer_sessions_mysql", "status": "SUCCEEDED", "args": args, "result": {"total": 3}}


def test_the_filters_the_question_holds_pass() -> None:
    step = query(business_line="forex", start_time="2026-11-28 06:44:00", keywords=[], limit=20, language="zh")
    assert _reads_verdict(task({"business_line": "forex", "start_time": None, "end_time": None}), [step]) is None


def test_a_filter_the_question_did_not_hold_is_a_wrong_answer() -> None:
    step = query(business_line="precious-metal", channel="app")
    verdict = _reads_verdict(task({"channel": "app"}), [step])
    assert verdict is not None and (verdict.failed_check, verdict.outcome) == ("wrong_filter", "wrong")
    assert "business_line='precious-metal' on query_customer_sessions_mysql" in verdict.detail


def test_a_filter_with_another_value_is_a_wrong_answer() -> None:
    verdict = _reads_verdict(task({"customer_tier": "钻石"}), [query(customer_tier="白金")])
    assert verdict is not None and "the question asks customer_tier='钻石'" in verdict.detail


def test_a_refusal_task_fails_when_sessions_come_back() -> None:
    verdict = _reads_verdict(task(None, refuse=True), [query()])
    assert verdict is not None and verdict.failed_check == "refusal"
    assert _reads_verdict(task(None, refuse=True), []) is None
