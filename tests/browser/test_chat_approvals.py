"""The chat page's approvals (docs/approvals.md), tried as new users would, in two browser contexts
on one server with the demo ERP and the demo approval policy: sales01 proposes a 107,200 元
quotation and confirms it — the card says 等待审批 and whom it waits for; mgr01 sees it under
待我审批 with why in words (合计金额 107,200，超过 50,000), its diff with grouped amounts, its requester
and its link, and approves it; sales01's card turns ✅ with the bill."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import BROWSER, ERP, start_server
from tests.servers import ServerProcess
from tether.erp_demo import facts
from tether.ops.approvals.source import DEMO_POLICY

pytestmark = BROWSER

CARD = ".card.proposal"
BIG_QUOTE = "给恒达自动化报价：M0005 40个，单价2680"


@pytest.fixture(scope="module")
def approvals_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(
        tmp_path_factory.mktemp("erp-approvals"),
        ERP,
        TETHER_ERP_ME_CACHE_S="0",
        TETHER_APPROVAL_POLICIES=str(DEMO_POLICY),
    )
    try:
        yield server
    finally:
        server.stop()
    server.assert_no_server_errors()


def awaiting_big_quote(chat: Any, server: ServerProcess) -> tuple[Any, str | None]:
    """sales01 proposes the big quotation and confirms it: it waits for a sales manager."""
    sales = chat(server)
    sales.open()
    sales.login_erp("sales01", facts.PASSWORD)
    page = sales.page
    sales.ask(BIG_QUOTE)
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    op_id = page.get_attribute(CARD, "data-op")
    page.click(f"{CARD} button:text('确认')")
    page.wait_for_selector(f'{CARD} .op-status[data-state="awaiting_approval"]', timeout=30_000)
    return sales, op_id


def test_sales01_waits_for_mgr01_who_approves_under_my_approvals_and_the_card_turns_done(
    chat: Any, approvals_server: ServerProcess
) -> None:
    sales = chat(approvals_server)
    sales.open()
    sales.login_erp("sales01", facts.PASSWORD)
    page = sales.page
    assert page.locator("#approvals").is_hidden()  # nothing for a salesperson to approve
    sales.ask(BIG_QUOTE)
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    page.click(f"{CARD} button:text('确认')")
    page.wait_for_selector(f'{CARD} .op-status[data-state="awaiting_approval"]', timeout=30_000)
    status = page.inner_text(f"{CARD} .op-status")
    assert "等待审批" in status and "approve.sales" in status, status
    sales.shot("awaiting-approval")

    mgr = chat(approvals_server)
    mgr.open()
    mgr.login_erp("mgr01", facts.PASSWORD)
    item = mgr.page.locator("#approvals .approval").first
    item.wait_for(timeout=30_000)
    text = item.inner_text()
    assert "sales01" in text and "M0005" in text, text
    # why, in words from the rule's condition and the op's values; the rule's name only as a tooltip
    assert "需要审批：合计金额 107,200，超过 50,000" in text and "big-or-discounted-quotation" not in text, text
    assert "big-or-discounted-quotation" in (item.locator(".approval-why").get_attribute("title") or "")
    assert "金额: 107,200" in text and "单价: 2,680" in text and "107200" not in text  # grouped, as the card's amount
    link = item.locator("a.approval-link")
    assert link.get_attribute("href") == f"/chat?approval={item.get_attribute('data-op')}"
    mgr.shot("my-approvals")
    link.click()  # the item's own address: the page opens with it in view (the conversation is sales01's)
    item = mgr.page.locator("#approvals .approval.focused")
    item.wait_for(timeout=30_000)
    assert mgr.page.evaluate("new URLSearchParams(location.search).get('approval')") is None  # a new chat's URL
    mgr.shot("my-approvals-by-link")
    item.locator("button:text('批准')").click()
    mgr.page.wait_for_selector("#approvals .approval-result:not(:empty)", timeout=30_000)
    mgr.shot("approved")

    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=60_000)
    assert "QT" in page.inner_text(f"{CARD} .op-status")
    sales.shot("done")
    assert not sales.errors and not mgr.errors, (sales.errors, mgr.errors)


def test_mgr01_edits_the_quotation_under_my_approvals_and_it_goes_back_to_sales01_as_a_draft(
    chat: Any, approvals_server: ServerProcess
) -> None:
    """The demo policy lets a sales manager edit a big quotation (``approvers_may_edit``): 修改 on
    the item opens the proposal card's edit form on the proposed values; a negative quantity is
    refused beside its input and the op still waits; 30 instead of 40 is saved — the item leaves
    mgr01's list with a notice, sales01's card shows the edited diff, who edited it, and 确认
    enabled; sales01's confirm asks mgr01 afresh, for the edited quotation."""
    sales, op_id = awaiting_big_quote(chat, approvals_server)
    page = sales.page

    mgr = chat(approvals_server)
    mgr.open()
    mgr.login_erp("mgr01", facts.PASSWORD)
    item = mgr.page.locator(f'#approvals .approval[data-op="{op_id}"]')
    item.wait_for(timeout=30_000)
    item.locator("button:text('修改')").click()
    form = item.locator("form.proposal-edit")
    form.wait_for()
    qty = form.get_by_label("数量", exact=True)
    # the first input: the bill date, one of the quotation's defaults the proposal fills
    assert qty.input_value() == "40" and mgr.page.evaluate("document.activeElement.name") == "bill_date"
    assert "M0005" in form.inner_text()  # the material: a reference, shown, not editable
    assert item.locator("button:text('批准')").is_disabled()  # not while editing
    mgr.shot("approver-edit-open")

    qty.fill("-3")
    form.locator("button:text('保存修改')").click()
    problem = form.locator('[data-field="details.0.qty"] .field-error')
    problem.wait_for()
    assert problem.inner_text() == "低于允许的最小值" and qty.get_attribute("aria-invalid") == "true"
    mgr.shot("approver-edit-refused")
    assert page.get_attribute(f"{CARD} .op-status", "data-state") == "awaiting_approval"  # nothing changed

    qty.fill("30")
    form.locator("button:text('保存修改')").click()
    item.wait_for(state="detached", timeout=30_000)  # the requester's draft now: not mgr01's to decide
    notice = mgr.page.locator("#approval-notice")
    assert "sales01" in notice.inner_text() and "已修改" in notice.inner_text(), notice.inner_text()
    mgr.shot("approver-edited")

    page.wait_for_selector(f"{CARD} .edited-note", timeout=30_000)
    assert "mgr01 修改了提案" in page.inner_text(f"{CARD} .edited-note")
    cells = page.locator(f"{CARD} .line-diff tr").all_inner_texts()
    assert any("数量" in r and "30" in r for r in cells) and any("80400" in r for r in cells), cells
    confirm = page.locator(f"{CARD} button:text('确认')")
    sales.wait_for(confirm.is_enabled, what="确认 enabled again")
    assert page.get_attribute(f"{CARD} .op-status", "data-state") == "draft"
    sales.shot("edited-by-mgr01")

    confirm.click()  # a fresh request, for the edited values
    page.wait_for_selector(f'{CARD} .op-status[data-state="awaiting_approval"]', timeout=30_000)
    mgr.page.reload()
    item.wait_for(timeout=30_000)
    assert "80,400" in item.inner_text() and "107,200" not in item.inner_text(), item.inner_text()
    mgr.shot("approver-sees-the-edited-request")
    assert not sales.errors and not mgr.errors, (sales.errors, mgr.errors)


def test_a_session_awaiting_approval_reads_so_and_withdrawing_is_an_explicit_confirmed_action(
    chat: Any, approvals_server: ServerProcess
) -> None:
    """Stopping a turn is not withdrawing a confirmed op (issue 36): once sales01's quotation waits
    for mgr01, the pill, the sidebar and the proposal's timeline row read 等待审批 and there is no
    red 停止; 撤回申请 asks first (dismissed: nothing happens), then withdraws the request."""
    sales, op_id = awaiting_big_quote(chat, approvals_server)
    page = sales.page
    page.wait_for_selector('#chat-status[data-op="awaiting_approval"]', timeout=30_000)
    assert page.inner_text("#chat-status") == "等待审批"
    active = page.locator("#conversations li.active")
    active.locator('.conv-write[data-write="awaiting_approval"]').wait_for(timeout=30_000)
    assert "等待审批" in active.inner_text() and "等待确认" not in active.inner_text(), active.inner_text()
    page.locator(".tool-row", has_text="等待审批").first.wait_for(
        state="attached", timeout=10_000
    )  # the proposal's timeline row
    assert page.locator("#stop").is_hidden() and page.locator("#withdraw").is_visible()
    sales.shot("awaiting-approval-session")

    page.once("dialog", lambda d: d.dismiss())
    page.click("#withdraw")
    page.wait_for_timeout(500)
    assert page.get_attribute(f"{CARD} .op-status", "data-state") == "awaiting_approval"  # dismissed: nothing

    asked: list[str] = []

    def accept(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.click("#withdraw")
    page.wait_for_selector(f'{CARD} .op-status[data-state="cancelled"]', timeout=30_000)
    assert asked and "撤回" in asked[0] and "不会执行" in asked[0], asked
    page.wait_for_selector("#withdraw", state="hidden", timeout=10_000)
    sales.shot("withdrawn")
    assert page.get_attribute(CARD, "data-op") == op_id
    assert not sales.errors, sales.errors
