"""A core failure on the chat page reads in the page's language: over the per-user tool-call
budget (``TETHER_USER_TOOL_CALLS_PER_MINUTE``), both the answer and the failed tool's row say so
in Chinese — never the model's English sentence; the next message, refused with 429 because the
day's model calls are spent, is a Chinese toast (English on the English page). Run alone with
``pytest -m browser``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.browser.conftest import BROWSER, ERP, start_server
from tether.erp_demo import facts

pytestmark = BROWSER


def test_a_core_failure_reads_in_chinese_on_the_chinese_page(chat: Callable[..., Any], tmp_path: Path) -> None:
    server = start_server(tmp_path, ERP, TETHER_USER_TOOL_CALLS_PER_MINUTE="1", TETHER_USER_DAILY_MODEL_CALLS="1")
    try:
        s = chat(server)
        s.open()
        s.login_erp("sales01", facts.PASSWORD)
        s.ask("报价单有哪些")  # more than one tool call: the second is over the budget
        s.wait_status("SUCCEEDED")
        page = s.page
        answer = page.inner_text(".answer").strip()
        assert answer.startswith("未能完成：您每分钟最多可调用 1 次工具"), answer
        failed = page.locator('.tool-row[data-status="failed"]').first
        said = str(failed.locator(".tool-body").text_content())  # folded away by default: its text
        assert "您每分钟最多可调用 1 次工具" in said and "TETHER_" not in said, said
        assert not re.search(r"tool calls per minute", page.inner_text("body"))
        s.shot("budget-in-chinese")

        # the day's model calls are spent: the next message is a 429, said in Chinese with the local time
        s.ask("报价单有哪些？再查一次")
        toast = page.locator(".toast").last
        toast.wait_for()
        said = toast.inner_text()
        expected = r"请求失败：您今天的模型调用额度（1 次）已用完，将于 \d\d/\d\d \d\d:\d\d 恢复。"
        assert re.fullmatch(expected, said), said
        s.shot("429-in-chinese")
        page.click("#lang-switch")  # the same refusal on the English page
        page.wait_for_selector("#chat-status")
        s.ask("quotations again")
        s.wait_for(lambda: "budget" in page.locator(".toast").last.inner_text(), what="the English toast")
        said = page.locator(".toast").last.inner_text()
        assert "Your daily budget of 1 model calls is spent; it resets at" in said, said
        assert "TETHER_" not in said
    finally:
        server.stop()


def test_an_erp_tools_coded_failure_reads_in_the_pages_language(chat: Callable[..., Any], erp_server: Any) -> None:
    """A pack's failure (the ERP's erp.no_line: a line the bill lacks) on a Chinese page, then on an
    English one: the answer and the failed tool's row are the person's language, never the other."""
    bill = facts.REVISION_QUOTATION_BILL_NO  # three lines; nothing is written by a refused proposal
    s = chat(erp_server)
    s.open()
    s.login_erp("sales01", facts.PASSWORD)
    page = s.page
    zh, en = f"{bill} 没有第 9 行明细。", f"{bill} has no line 9."  # the answer's words, and the tool row's
    cases = [
        ("chinese", f"把报价单{bill}第9行的数量改成5", f"未能完成：{zh}", zh, en),
        ("english", f"change line 9's quantity of quotation {bill} to 5", f"I could not finish: {en}", en, zh),
    ]
    for n, (language, question, answer, said, other) in enumerate(cases):
        if n:  # the page in English, a new conversation
            page.click("#lang-switch")
            page.click("#new-chat")
        s.ask(question)
        s.wait_status("SUCCEEDED")
        assert page.inner_text(".answer").strip() == answer
        row = str(page.locator('.tool-row[data-status="failed"]').last.locator(".tool-body").text_content())
        assert said in row and other not in row, row
        s.shot(f"no-line-in-{language}")
