"""A core failure on the chat page reads in the page's language: over the per-user tool-call
budget (``TETHER_USER_TOOL_CALLS_PER_MINUTE``), both the answer and the failed tool's row say so
in Chinese — never the model's English sentence. Run alone with ``pytest -m browser``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.browser.conftest import BROWSER, ERP, start_server
from tether.erp_demo import facts

pytestmark = BROWSER


def test_a_core_failure_reads_in_chinese_on_the_chinese_page(chat: Callable[..., Any], tmp_path: Path) -> None:
    server = start_server(tmp_path, ERP, TETHER_USER_TOOL_CALLS_PER_MINUTE="1")
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
    s.ask(f"把报价单{bill}第9行的数量改成5")
    s.wait_status("SUCCEEDED")
    assert page.inner_text(".answer").strip() == f"未能完成：{bill} 没有第 9 行明细。"
    row = page.locator('.tool-row[data-status="failed"]').last
    said = str(row.locator(".tool-body").text_content())
    assert f"{bill} 没有第 9 行明细" in said and "has no line" not in said, said
    s.shot("no-line-in-chinese")

    page.click("#lang-switch")
    page.click("#new-chat")
    s.ask(f"change line 9's quantity of quotation {bill} to 5")
    s.wait_status("SUCCEEDED")
    assert page.inner_text(".answer").strip() == f"I could not finish: {bill} has no line 9."
    row = page.locator('.tool-row[data-status="failed"]').last
    said = str(row.locator(".tool-body").text_content())
    assert f"{bill} has no line 9." in said and "没有第" not in said, said
    s.shot("no-line-in-english")
