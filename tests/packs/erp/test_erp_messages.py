"""A failed ERP tool reaches the person in their language: its error carries a code and the
parameters, the offline planner answers a Chinese question from the pack's message table, and the
chat page holds the same codes in its own i18n table."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from tests.packs.erp.conftest import ErpServer, answer_of, runtime_events
from tether.core.error_messages import MESSAGES as CORE_MESSAGES
from tether.core.messages import ModelRequest
from tether.models.planner import PlannerModel
from tether.packs.erp.messages import MESSAGES, invalid_values

I18N = Path(__file__).resolve().parents[3] / "src" / "tether" / "app" / "static" / "chat" / "i18n.js"


def page_table() -> dict[str, dict[str, str]]:
    """The page's err_<code> texts per language, read from i18n.js (its zh block comes first)."""
    text = I18N.read_text(encoding="utf-8")
    zh, en = text.split("\n  en: {", 1)
    found: dict[str, dict[str, str]] = {}
    for language, block in (("zh", zh), ("en", en)):
        for code, said in re.findall(r'"err_([\w.]+)": "([^"]*)"', block):
            found.setdefault(code, {})[language] = said
    return found


def test_the_page_says_each_code_as_the_planner_does() -> None:
    assert page_table() == CORE_MESSAGES | MESSAGES


def test_a_chinese_question_about_a_bill_nobody_can_see_is_answered_in_chinese(erp_server: ErpServer) -> None:
    bill_no = "QT209901-9999"
    with erp_server.login("sales01") as c:
        s = erp_server.ask(c, f"把报价单{bill_no}的备注改成请按新价格重新报价")
        answer = answer_of(s)
        assert answer == f"未能完成：没有找到您可以查看的报价单 {bill_no}。请核对单号。", answer
        assert not re.search(r"[A-Za-z]{3,}", answer.replace(bill_no, ""))  # not one English word
        failed = [e for e in runtime_events(c, s["sessionId"]) if e["type"] == "TOOL_EXECUTION_FAILED"]
        assert [(e["data"]["code"], e["data"]["params"]) for e in failed] == [
            ("erp.no_bill", {"form": "报价单", "bill_no": bill_no})
        ]
        assert "that you can see" in failed[0]["data"]["error"]  # the model's explanation stays


def test_a_forms_problems_are_coded_each_with_the_label_a_person_knows() -> None:
    config = {
        "formId": "2001",
        "name": "报价单",
        "master": [{"column": "delivery_days", "label": "交期(天)"}],
        "detail": {"fields": [{"column": "qty", "label": "数量"}]},
    }
    problems = [
        {"field": "delivery_days", "code": "type", "message": "交期(天) must be a whole number"},
        {"field": "details.1.qty", "code": "required", "message": "数量 is required"},
        {"field": "details", "code": "max_lines", "message": "at most 200 lines"},
    ]
    error = invalid_values(config, problems, "the payload does not fit")
    assert error.message == "the payload does not fit" and error.error_code == "erp.invalid_values"
    assert error.params == {
        "form": "报价单",
        "problems": [
            {"code": "erp.problem.type", "params": {"label": "交期(天)"}},
            {"code": "erp.problem.required", "params": {"label": "数量 (2)"}},
            {"code": "erp.problem.max_lines", "params": {"label": "明细"}},
        ],
    }
    data = {"error": error.message, "code": error.error_code, "params": error.params}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "新建一张报价单"},
        {"role": "assistant", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "content": json.dumps({"tool": "propose_write", "kind": "error", "data": data})},
    ]
    reply = asyncio.run(PlannerModel(messages=MESSAGES).chat(ModelRequest(history, [], [], {})))
    assert reply.content == "未能完成：填写的内容不符合报价单：交期(天)的值格式不对；数量 (2)为必填项；明细行数过多。"
    # a problem the table has no words for: the whole failure stays the model's message, not half said
    odd = invalid_values(config, [{"field": "x", "code": "something_new", "message": "odd"}], "odd values")
    assert odd.error_code is None and odd.message == "odd values"


def test_a_chinese_question_over_the_tool_call_budget_is_told_so_in_chinese(tmp_path: Path) -> None:
    """A core failure (the per-user tool-call budget, not the pack's) said in the person's language."""
    server = ErpServer(tmp_path, TETHER_USER_TOOL_CALLS_PER_MINUTE="1").start(timeout=120)
    try:
        with server.login("sales01") as c:
            s = server.ask(c, "报价单有哪些")  # more than one tool call: the second is over the budget
            answer = answer_of(s)
            assert answer.startswith("未能完成：您每分钟最多可调用 1 次工具"), answer
            assert not re.search(r"[A-Za-z]{3,}", answer), answer  # not one English word
            failed = [e for e in runtime_events(c, s["sessionId"]) if e["type"] == "TOOL_EXECUTION_FAILED"]
            assert failed and {e["data"]["code"] for e in failed} == {"tool.budget"}
            assert "TETHER_USER_TOOL_CALLS_PER_MINUTE" in failed[0]["data"]["error"]  # the model's stays
    finally:
        server.stop()
