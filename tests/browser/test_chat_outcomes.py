"""The chat page tells a read question's three honest outcomes apart, logged in as ``sales01``
against the real demo ERP with the offline planner: a form not granted, no records matching and
words not understood each carry their own badge and colour (an answer carries none), in Chinese and,
after the page's language switch and a reload, in English. Run alone with ``pytest -m browser``."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import BROWSER, Session
from tests.servers import ServerProcess
from tether.erp_demo import facts

pytestmark = BROWSER

QUESTIONS = (
    ("本月开了几张销售发票", "not_granted", "无权限", "Not granted", "您没有销售发票的权限。"),
    ("恒达2020年的发货单", "no_rows", "无记录", "No records", "没有符合条件的记录："),
    ("报价单里的扑朔迷离", "not_understood", "未理解", "Not understood", "“扑朔迷离”"),
    ("我一共有多少个客户？", "answered", None, None, "按 客户档案"),
)


def answers(s: Session) -> list[dict[str, Any]]:
    """Each answer on the page: its outcome, its badge's text and colour, its text."""
    found: list[dict[str, Any]] = s.page.evaluate(
        """() => [...document.querySelectorAll('.answer-wrap')].map(w => {
            const b = w.querySelector('.outcome-badge');
            return {outcome: w.dataset.outcome, badge: b ? b.textContent : null,
                    colour: b ? getComputedStyle(b).color : null, edge: getComputedStyle(w).borderLeftColor,
                    text: w.querySelector('.markdown').textContent};
        })"""
    )
    return found


def test_not_granted_no_rows_and_not_understood_each_look_different(chat: Any, erp_server: ServerProcess) -> None:
    s = chat(erp_server)
    s.open()
    s.login_erp("sales01", facts.PASSWORD)
    for n, (question, *_rest) in enumerate(QUESTIONS, start=1):
        s.ask(question)
        s.wait_for(lambda n=n: len(answers(s)) == n, timeout=60, what=f"answer {n}")
        s.wait_status("SUCCEEDED")
    shown = answers(s)
    for got, (_q, outcome, zh, _en, text) in zip(shown, QUESTIONS, strict=True):
        assert got["outcome"] == outcome and got["badge"] == zh and text in got["text"], got
    refused = shown[:3]
    assert len({g["colour"] for g in refused}) == 3 and len({g["edge"] for g in refused}) == 3  # three looks
    s.shot("outcomes-zh")
    s.page.locator(".answer-wrap").first.scroll_into_view_if_needed()
    s.shot("outcomes-zh-refusals")
    session_id = s.session_id()
    s.page.click("#lang-switch")
    s.open(f"/chat?c={session_id}")
    s.wait_for(lambda: len(answers(s)) == len(QUESTIONS), timeout=30, what="the conversation again")
    assert [g["badge"] for g in answers(s)] == [q[3] for q in QUESTIONS]
    s.shot("outcomes-en")
    assert not s.errors and not s.blocked
