"""What ``make demo`` tells a new user about the chat page: the URL, the sales01 login, and
example requests that the offline planner really turns into the three governed-write flows."""

from __future__ import annotations

from tether.demo import CHAT_CUSTOMER, CHAT_USER, chat_examples, chat_help, replay_gist
from tether.erp_demo import facts
from tether.packs.erp.planner_rules import extract


def test_the_help_names_the_page_the_login_and_the_seeded_quotation() -> None:
    text = chat_help("http://127.0.0.1:8000", "QT202601-0001")
    assert "http://127.0.0.1:8000/chat" in text
    assert f"{CHAT_USER} / {facts.PASSWORD}" in text and CHAT_USER in facts.USERS
    assert "把报价单QT202601-0001的备注改成" in text
    assert CHAT_CUSTOMER in facts.SALES01_CUSTOMER[1]
    no_erp = chat_help("http://127.0.0.1:8000", None)
    assert CHAT_USER not in no_erp and "/chat" in no_erp


def test_each_example_is_a_write_flow_of_the_offline_planner() -> None:
    plans = [extract(query, {})["erp"]["plan"] for query, _ in chat_examples(facts.REVISION_QUOTATION_BILL_NO)]
    revise, new_form, complete = ([(step["tool"], step["args"].get("op")) for step in plan] for plan in plans)
    assert revise == [("propose_write", "update")]
    assert plans[0][0]["args"]["record_id"] == facts.REVISION_QUOTATION_BILL_NO
    assert new_form == [("collect_form", None), ("propose_write", "create")]
    assert plans[1][0]["args"]["prefill"] == {"customer_id": CHAT_CUSTOMER}
    assert complete == [("propose_write", "create")]
    assert plans[2][0]["args"]["payload"]["details"][0]["material_id"] == "M0003"


def test_a_replayed_step_reads_as_what_it_found_not_cut_json() -> None:
    """The demo's replay for another business line: each step on one line a person reads — not
    JSON cut off in the middle of a key."""
    handle = {"handle_id": "hdl-1", "total": 15, "filters": {"keywords": ["规则调整"]}, "truncated": False}
    assert replay_gist(handle) == "15 matching sessions, kept behind handle hdl-1"
    analysis = {
        "analysis_id": "ana-1",
        "documents": 15,
        "summary": "与上一周期（2026-10-05 至 2026-11-04）相比：匹配会话 29 → 15 条\n高频关键词：…",
    }
    assert (
        replay_gist(analysis)
        == "15 conversations analysed: 与上一周期（2026-10-05 至 2026-11-04）相比：匹配会话 29 → 15 条"
    )
    report = {
        "report_id": "rpt-1",
        "title": "外汇 · 规则调整 客服问题关键词分析报告",
        "url": "http://h/api/reports/rpt-1.html",
    }
    assert replay_gist(report) == "外汇 · 规则调整 客服问题关键词分析报告: http://h/api/reports/rpt-1.html"
    long = replay_gist({"rows": ["x" * 200]})
    assert len(long) == 120 and long.endswith("…")
