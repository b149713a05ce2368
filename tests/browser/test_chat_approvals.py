"""The chat page's approvals (docs/approvals.md), tried as new users would, in two browser contexts
on one server with the demo ERP and the demo approval policy: sales01 proposes a 107,200 元
quotation and confirms it — the card says 等待审批 and whom it waits for; mgr01 sees it under
待我审批 with its diff and requester and approves it; sales01's card turns ✅ with the bill."""

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
    assert "sales01" in text and "big-or-discounted-quotation" in text and "M0005" in text, text
    assert "107200" in text  # the line's amount in the diff
    mgr.shot("my-approvals")
    item.locator("button:text('批准')").click()
    mgr.page.wait_for_selector("#approvals .approval-result:not(:empty)", timeout=30_000)
    mgr.shot("approved")

    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=60_000)
    assert "QT" in page.inner_text(f"{CARD} .op-status")
    sales.shot("done")
    assert not sales.errors and not mgr.errors, (sales.errors, mgr.errors)
