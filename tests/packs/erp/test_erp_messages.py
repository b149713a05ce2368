"""A failed ERP tool reaches the person in their language: its error carries a code and the
parameters, the offline planner answers a Chinese question from the pack's message table, and the
chat page holds the same codes in its own i18n table."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.packs.erp.conftest import ErpServer, answer_of, runtime_events
from tests.packs.erp.test_erp_ops import draft_quotation
from tether.core.error_messages import MESSAGES as CORE_MESSAGES
from tether.core.messages import ModelRequest
from tether.models.planner import PlannerModel
from tether.packs.erp import messages as erp_messages
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
    # a problem of a kind the table has no words for is still said, plainly, in the person's language
    odd = invalid_values(config, [{"field": "x", "code": "something_new", "message": "odd"}], "odd values")
    assert odd.error_code == "erp.invalid_values" and odd.message == "odd values"
    assert odd.params["problems"] == [{"code": "erp.problem.invalid", "params": {"label": "x"}}]


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


PACK = Path(__file__).resolve().parents[3] / "src" / "tether" / "packs" / "erp"
CODED = {"ToolError": 2, "ErrorResult": 2}  # the class, and the position its code takes as an argument


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _code_of(node: ast.Call, position: int) -> ast.expr | None:
    given = next((k.value for k in node.keywords if k.arg == "code"), None)
    return given if given is not None or len(node.args) <= position else node.args[position]


def _code_value(code: ast.expr | None) -> str | None:
    """A code argument's value: ``messages.NAME``, a bare ``NAME`` of the table's module, or a literal."""
    if isinstance(code, ast.Constant) and isinstance(code.value, str):
        return code.value
    name = code.attr if isinstance(code, ast.Attribute) else code.id if isinstance(code, ast.Name) else None
    value = getattr(erp_messages, name, None) if name else None
    return value if isinstance(value, str) else None


def uncoded_failures() -> list[str]:
    """Every ToolError / ErrorResult the ERP pack makes without a code its table says, every
    ToolError subclass whose ``super().__init__`` passes none, every InvalidInput without a code or
    per-field problems: a person would get the generic line and the model's English."""
    found: list[str] = []
    for path in sorted(PACK.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        subclass_inits = {
            id(call)
            for cls in ast.walk(tree)
            if isinstance(cls, ast.ClassDef) and any(ast.unparse(b).endswith("ToolError") for b in cls.bases)
            for call in ast.walk(cls)
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "super().__init__"
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(PACK)}:{node.lineno}"
            name = _called(node)
            if name in CODED or id(node) in subclass_inits:
                code = _code_value(_code_of(node, CODED.get(name, 2)))
                if code not in MESSAGES:
                    found.append(f"{where}: {ast.unparse(node)[:100]}")
            elif name == "InvalidInput" and not {k.arg for k in node.keywords} & {"code", "problems"}:
                found.append(f"{where}: {ast.unparse(node)[:100]}")
    return found


def test_every_failure_the_erp_pack_raises_carries_a_code_its_table_says() -> None:
    assert uncoded_failures() == []


def test_the_scan_finds_a_failure_raised_without_a_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "odd.py").write_text(
        "def f():\n    raise ToolError('no code')\n"
        "def g():\n    raise ToolError('a code nobody says', code='erp.nowhere')\n"
        "class E(ToolError):\n    def __init__(self):\n        super().__init__('x')\n"
        "def h():\n    raise InvalidInput('no code', field='x')\n"
        "def i():\n    return ErrorResult('x', True)\n"
        "def ok():\n    raise ToolError('coded', code=messages.NO_LINE)\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "PACK", tmp_path)
    assert sorted(int(line.split(":")[1]) for line in uncoded_failures()) == [2, 4, 7, 9, 11]


def test_every_code_has_a_chinese_and_an_english_sentence_in_both_tables() -> None:
    page = page_table()
    for code, said in (CORE_MESSAGES | MESSAGES).items():
        for language in ("zh", "en"):
            assert said.get(language), f"{code} has no {language} sentence in messages.py"
            assert page.get(code, {}).get(language), f"{code} has no {language} sentence in i18n.js"
        assert re.search(r"[\u4e00-\u9fff]", said["zh"]) and not re.search(r"[\u4e00-\u9fff]", said["en"]), code
        # the Chinese sentence uses no parameter the English one lacks (the English may add the system's words)
        assert set(re.findall(r"\{(\w+)\}", said["zh"])) <= set(re.findall(r"\{(\w+)\}", said["en"])), code


def _no_english(answer: str, *allowed: str) -> bool:
    for word in allowed:
        answer = answer.replace(word, "")
    return not re.search(r"[A-Za-z]{3,}", answer)


def _failures(c: Any, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    events = runtime_events(c, session_id)
    return [(e["data"]["code"], e["data"]["params"]) for e in events if e["type"] == "TOOL_EXECUTION_FAILED"]


def test_a_line_the_bill_lacks_is_said_in_the_language_asked(erp_server: ErpServer) -> None:
    token = erp_server.token("sales01")
    bill = draft_quotation(erp_server, token)["sBillNo"]  # two lines
    with erp_server.client(token, timeout=60) as c:
        zh = erp_server.ask(c, f"把报价单{bill}第9行的数量改成5")
        assert answer_of(zh) == f"未能完成：{bill} 没有第 9 行明细。", answer_of(zh)
        assert _failures(c, zh["sessionId"]) == [("erp.no_line", {"record": bill, "lines": "9"})]
        en = erp_server.ask(c, f"change line 9's quantity of quotation {bill} to 5")
        assert answer_of(en) == f"I could not finish: {bill} has no line 9.", answer_of(en)


def test_an_over_long_filter_from_a_chinese_question_is_refused_in_chinese(erp_server: ErpServer) -> None:
    name = "恒" * 210  # a pasted name longer than any filter value the ERP is sent
    with erp_server.login("fin01") as c:
        s = erp_server.ask(c, f"{name}的应收有哪些超期了")
        answer = answer_of(s)
        assert answer == "未能完成：筛选条件客户名称超过 200 个字符，请缩短后再试。", answer
        assert _no_english(answer)
        assert _failures(c, s["sessionId"]) == [("erp.filter_too_long", {"filter": "客户名称", "max": 200})]


def test_a_refused_edit_carries_its_code_for_the_page(erp_server: ErpServer) -> None:
    """An InvalidInput the pack raises to a person (422) carries the code the page says in its language."""
    token = erp_server.token("sales01")
    bill = draft_quotation(erp_server, token)["sBillNo"]
    with erp_server.client(token, timeout=60) as c:
        s = erp_server.ask(c, f"删除报价单{bill}")
        op_id = s["pendingInteraction"]["payload"]["opId"]
        r = c.patch(f"/api/ops/{op_id}", json={"payload": {"remark": "x"}})
        assert r.status_code == 422, r.text
        assert (r.json()["code"], r.json()["params"]) == ("erp.nothing_to_edit", {"op": "delete"})
        assert "no values to edit" in r.json()["error"]  # the English words stay for API clients


def _said(data: dict[str, Any], question: str) -> str:
    """What the offline planner answers when ``data`` (a tool's error) follows ``question``."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": question},
        {"role": "assistant", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "content": json.dumps({"tool": "read_form_data", "kind": "error", "data": data})},
    ]
    reply = asyncio.run(PlannerModel(messages=MESSAGES).chat(ModelRequest(history, [], [], {})))
    return str(reply.content)


@pytest.mark.parametrize(
    ("tool", "args", "code", "params", "zh", "en"),
    [
        (
            "read_form_data",
            {"form_id": "2001", "filters": {"bUpdate": 1}},
            "erp.unknown_filter",
            {"form": "报价单", "filters": "bUpdate"},
            "报价单没有这些筛选条件：bUpdate。",
            "报价单 has no filter bUpdate.",
        ),
        (
            "read_form_data",
            {"form_id": "2001", "filters": {"customer_name": ["a", "b"]}},
            "erp.bad_filter",
            {"filter": "客户名称"},
            "筛选条件客户名称只能是一个文本、数字或日期。",
            "The filter 客户名称 must be a single text, number or date.",
        ),
        (
            "lookup_record",
            {"form_id": "2001", "record_id": "QT-NOPE"},
            "erp.no_record",
            {"form": "报价单", "record": "QT-NOPE"},
            "没有找到您可以查看的报价单 QT-NOPE。请核对单号或编号。",
            "There is no 报价单 QT-NOPE that you can see. Check the number.",
        ),
        (
            "lookup_record",
            {"form_id": "2001", "record_id": "QT 1/2"},
            "erp.bad_record_id",
            {"value": "QT 1/2"},
            "“QT 1/2”不是有效的单号或记录编号（只能含字母、数字和 - _ . :，最多 64 个字符）。",
            "“QT 1/2” is not a bill number or record id (letters, digits, - _ . : only; at most 64).",
        ),
        (
            "read_form_data",
            {"form_id": "2001", "page": 0},
            "erp.bad_arguments",
            {"tool": "read_form_data"},
            "助手给这一步的参数有误，请换个说法再试。",
            "The assistant gave this step arguments it cannot use; try rephrasing.",
        ),
    ],
)
def test_a_refused_tool_call_is_coded_and_said_in_either_language(
    erp_server: ErpServer, tool: str, args: dict[str, Any], code: str, params: dict[str, Any], zh: str, en: str
) -> None:
    with erp_server.login("sales01") as c:
        answer = erp_server.tool(c, tool, args)
    assert answer["kind"] == "error" and (answer["data"]["code"], answer["data"]["params"]) == (code, params)
    assert _said(answer["data"], "查一下报价单") == f"未能完成：{zh}"
    assert _said(answer["data"], "show me the quotations") == f"I could not finish: {en}"
