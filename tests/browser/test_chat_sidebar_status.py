"""The open conversation's item in the sidebar says what the header's pill says, whichever way a
turn ends — done, failed (the turn's time limit), cancelled (stop), and a refusal: a tool call over
the per-user budget, then a message refused with 429 because the daily budget of model calls is
spent. Every change of the pill or the list is recorded in the page (a MutationObserver), so a
moment where the list still said 运行中 beside the header's 已完成 fails the test, however short.
Run alone with ``pytest -m browser``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.browser.conftest import BROWSER, ERP, SLOWPACK, Session, start_server
from tests.browser.test_chat import counter
from tether.erp_demo import facts

pytestmark = BROWSER

# each change of the header's pill or of the list: what the pill and the open item said then
RECORDER = """
window.__seen = [];
document.addEventListener("DOMContentLoaded", () => {
  const record = () => {
    const pill = document.getElementById("chat-status");
    const item = document.querySelector("#conversations li.conv.active");
    if (pill.hidden || !pill.textContent || !item) return;
    const said = [item.querySelector(".conv-write"), item.querySelector(".conv-meta")];
    window.__seen.push({ header: pill.textContent, side: said.map((e) => e?.textContent || "").join(" ").trim() });
  };
  const watch = { subtree: true, childList: true, characterData: true, attributes: true };
  for (const id of ["chat-status", "conversations"]) new MutationObserver(record).observe(document.getElementById(id), watch);
});
"""


def _open(chat: Callable[..., Session], server: Any) -> Session:
    s = chat(server)
    s.context.add_init_script(RECORDER)
    s.open()
    return s


def _side(s: Session) -> str:
    item = s.page.locator("#conversations li.conv.active")
    return str(item.inner_text()).replace("\n", " ")


def _agree(s: Session, header: str) -> None:
    """The pill says ``header``, the open item says it too — and never said anything else meanwhile."""
    s.wait_for(lambda: s.page.inner_text("#chat-status") == header, what=f"the header's {header}")
    s.wait_for(lambda: header in _side(s), timeout=5, what=f"the sidebar's {header} (it says {_side(s)!r})")
    seen: list[dict[str, str]] = s.page.evaluate("window.__seen")
    apart = [r for r in seen if r["header"] not in r["side"]]
    assert seen and not apart, apart[:5]


def test_the_sidebar_says_what_the_header_says_when_a_turn_is_done_failed_or_stopped(
    chat: Callable[..., Session], tmp_path: Path
) -> None:
    server = start_server(tmp_path, str(SLOWPACK), TETHER_TURN_TIMEOUT_S="5")
    try:
        s = _open(chat, server)
        s.login_token()
        page = s.page
        s.ask("slowly label=done")
        s.wait_status("SUCCEEDED")
        _agree(s, "已完成")
        s.shot("done")

        s.ask("slowly label=late sleep=10,0,0")  # over the turn's 5 s
        s.wait_status("FAILED", timeout=30_000)
        _agree(s, "失败")
        # the reason in the page's language (turn.timeout), not the server's English sentence
        said = page.inner_text("#chat-error")
        assert "5 秒的时间上限" in said and "TETHER_TURN_TIMEOUT_S" not in said, said
        s.shot("failed")

        s.ask("slowly label=stopped sleep=30,0,0")
        s.wait_for(lambda: counter(server, "stopped-1") == ["start"], timeout=10, what="the step to run")
        page.click("#stop")
        s.wait_status("CANCELLED", timeout=10_000)
        _agree(s, "已停止")
        s.shot("cancelled")
        page.reload()  # read from the server alone: the same
        s.wait_status("CANCELLED")
        s.wait_for(lambda: "已停止" in _side(s), what="the sidebar after a reload")
    finally:
        server.stop()
    server.assert_no_server_errors()


def test_the_sidebar_says_what_the_header_says_after_a_refusal(chat: Callable[..., Session], tmp_path: Path) -> None:
    server = start_server(tmp_path, ERP, TETHER_USER_TOOL_CALLS_PER_MINUTE="1", TETHER_USER_DAILY_MODEL_CALLS="1")
    try:
        s = _open(chat, server)
        s.login_erp("sales01", facts.PASSWORD)
        page = s.page
        s.ask("报价单有哪些")  # the second tool call is over the per-minute budget: the turn ends in that refusal
        s.wait_status("SUCCEEDED")
        page.wait_for_selector(".answer")
        assert page.inner_text(".answer").startswith("未能完成"), page.inner_text(".answer")
        _agree(s, "已完成")
        s.shot("tool-budget-refused")

        s.ask("报价单有哪些？再查一次")  # the daily model calls are spent: 429, no turn starts
        page.wait_for_selector(".toast")
        _agree(s, "已完成")
        assert not page.is_disabled("#send")
        s.shot("turn-refused-429")
    finally:
        server.stop()
    server.assert_no_server_errors()
