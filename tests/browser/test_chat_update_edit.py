"""The proposal card's edit form on an update's lines (docs/approvals.md, "Edit before approve"), on
the chat page of a real server with the demo ERP and the offline planner, logged in as sales01:
an update of a quotation's second line stages the whole bill (every line) as its payload; 修改
shows the line the proposal changes, labelled as the diff names it (行 2 · M0002), and not the
line it leaves alone; a negative quantity's 422 shows beside that line's input; a new quantity
re-renders the diff, and the payload sent back still holds every line, the other one unchanged."""

from __future__ import annotations

from typing import Any

import httpx

from tests.browser.conftest import BROWSER
from tests.browser.test_chat_erp import erp_write
from tests.servers import ServerProcess
from tether.erp_demo import facts

pytestmark = BROWSER

CARD = ".card.proposal"
EDIT = f"{CARD} form.proposal-edit"


def test_an_updates_changed_line_is_edited_on_the_card_and_the_bill_goes_back_whole(
    chat: Any, erp_server: ServerProcess
) -> None:
    data = {"customer_id": facts.SALES01_CUSTOMER[0], "remark": "原备注"}
    lines = [{"material_id": "M0001", "qty": 5, "unit_price": 18.5}, {"material_id": "M0002", "qty": 3}]
    bill = erp_write(erp_server, {"sFormId": "2001", "handleType": "add", "data": data, "details": lines})
    s = chat(erp_server)
    s.open()
    s.login_erp("sales01", facts.PASSWORD)
    page = s.page
    s.ask(f"把报价单{bill['sBillNo']}的第2行的数量改成4")
    page.wait_for_selector(CARD, timeout=60_000)
    s.wait_status("WAITING_CONFIRMATION")
    assert page.inner_text(f"{CARD} .line-diff h4") == "行 2 · 修改 · M0002"
    session = s.session_id()
    api = httpx.Client(
        base_url=erp_server.url,
        headers={"Authorization": f"Bearer {page.evaluate('sessionStorage.getItem(`tether.token`)')}"},
        timeout=30,
    )

    def staged() -> list[dict[str, Any]]:
        pending = api.get(f"/api/agent/sessions/{session}").json()["pendingInteraction"]["payload"]
        details: list[dict[str, Any]] = pending["values"]["details"]
        return details

    before = staged()
    assert [x["qty"] for x in before] == [5, 4]  # the whole bill: the line left alone too

    page.click(f"{CARD} button:text('修改')")
    page.wait_for_selector(EDIT)
    assert page.locator(f"{EDIT} fieldset.edit-line").count() == 1  # only the line the proposal changes
    assert page.inner_text(f"{EDIT} fieldset.edit-line legend") == "行 2 · M0002"
    assert page.inner_text(f"{EDIT} .edit-kept") == "其余 1 行不变，按提议保留"
    qty = page.get_by_label("数量", exact=True)
    assert qty.input_value() == "4" and qty.get_attribute("name") == "details.1.qty"  # its place in the bill
    s.shot("update-edit-open")

    qty.fill("-1")
    page.click(f"{EDIT} button:text('保存修改')")
    problem = page.locator(f'{EDIT} [data-field="details.1.qty"] .field-error')
    problem.wait_for()
    assert problem.inner_text() == "低于允许的最小值" and qty.get_attribute("aria-invalid") == "true"
    s.shot("update-edit-refused")
    assert [x["qty"] for x in staged()] == [5, 4]  # nothing changed

    qty.fill("6")
    page.click(f"{EDIT} button:text('保存修改')")
    page.wait_for_selector(EDIT, state="detached")
    assert "已按您的修改更新" in page.inner_text(CARD)
    rows = page.locator(f"{CARD} .line-diff tr").all_inner_texts()
    assert any("数量" in r and "3" in r and "6" in r for r in rows), rows
    assert page.inner_text(f"{CARD} .line-diff h4") == "行 2 · 修改 · M0002"
    s.shot("update-edited")
    after = staged()
    assert [x["qty"] for x in after] == [5, 6] and [x["material_id"] for x in after] == [
        x["material_id"] for x in before
    ]
    op_id = page.get_attribute(CARD, "data-op")
    op = api.get(f"/api/ops/{op_id}").json()
    assert [(x["lineNo"], x["detailIndex"]) for x in op["lines"]] == [(2, 1)], op["lines"]
    api.close()
