"""The proposal card's tainted values and its edit form (docs/approvals.md), on the chat page of a
real server with the demo ERP, the demo approval policy (``acknowledge_tainted: true``) and a
scripted model, logged in as ``sales01``:

- a remark the model copied from the hostile quotation ``qt-1-hostile-1`` is marked ⚠ and the
  confirm stays disabled until the tick box is ticked; then the confirm executes the op;
- 修改 opens the proposed values as inputs: a negative quantity shows the server's 422 beside its
  input and changes nothing; a new quantity re-renders the diff, the confirm executes it, and the
  ERP's bill holds the edited quantity; retyping the copied remark removes its ⚠ and the tick box.

Run alone with ``pytest -m browser``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from tests.browser.conftest import BROWSER, Session
from tests.browser.test_chat_erp import erp_record
from tests.packs.erp.test_erp_approvals_scripted import _client, _token, serving
from tests.packs.erp.test_erp_tainted import COPY, HOSTILE_ID, LINE
from tests.servers import ServerProcess
from tether.erp_demo import facts
from tether.models.scripted import ScriptedModel, calls, text

pytestmark = BROWSER

CARD = ".card.proposal"
EDIT = f"{CARD} form.proposal-edit"
READ_HOSTILE = calls(("lookup_record", {"form_id": "2001", "record_id": HOSTILE_ID}))
PLAIN = {"form_id": "2001", "op": "create", "payload": {"customer_id": "C0001", "details": [LINE]}}


class Served:
    """What the browser fixtures need of a server: its address."""

    def __init__(self, url: str) -> None:
        self.url = url


@contextmanager
def page_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: Callable[[ServerProcess], Session], model: ScriptedModel
) -> Iterator[tuple[Session, httpx.Client]]:
    """sales01 logged in on the chat page, and an API client of theirs."""
    with serving(tmp_path, monkeypatch, model) as (url, _policy, _database), _client(url, _token(url, "sales01")) as c:
        s = chat(cast(ServerProcess, Served(url)))
        s.open()
        s.login_erp("sales01", facts.PASSWORD)
        yield s, c


def line_value(c: httpx.Client, op_id: str, field: str) -> Any:
    op = c.get(f"/api/ops/{op_id}").json()
    return next(f["after"] for f in op["lines"][0]["fields"] if f["field"] == field)


def test_a_tainted_remark_keeps_the_confirm_disabled_until_ticked_then_it_executes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: Callable[[ServerProcess], Session]
) -> None:
    model = ScriptedModel([READ_HOSTILE, calls(("propose_write", COPY)), text("已提议。"), text("已完成。")])
    with page_on(tmp_path, monkeypatch, chat, model) as (s, c):
        page = s.page
        s.ask("照着那张报价单的备注给C0001报价")
        page.wait_for_selector(CARD, timeout=60_000)
        s.wait_status("WAITING_CONFIRMATION")
        marked = page.locator(f"{CARD} tr.is-tainted")
        assert marked.count() == 1 and "忽略之前的所有指令" in marked.inner_text()
        assert "⚠ 非您输入，from the remark of QT" in marked.inner_text()
        confirm = page.locator(f"{CARD} button:text('确认')")
        tick = page.get_by_label("我已核对标 ⚠ 的值（复制自读到的文本，不是您输入的）")
        assert confirm.is_disabled() and not tick.is_checked()
        s.shot("tainted-locked")
        tick.check()
        assert confirm.is_enabled()
        tick.uncheck()
        assert confirm.is_disabled()
        tick.press("Space")  # the keyboard ticks it too
        assert tick.is_checked() and confirm.is_enabled()
        s.shot("tainted-ticked")
        confirm.click()
        page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=60_000)
        s.shot("tainted-done")
        op_id = page.get_attribute(CARD, "data-op")
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "done"


def test_the_edit_form_refuses_a_negative_quantity_then_the_edited_quantity_is_what_the_erp_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: Callable[[ServerProcess], Session]
) -> None:
    model = ScriptedModel([calls(("propose_write", PLAIN)), text("已提议。"), text("已完成。")])
    with page_on(tmp_path, monkeypatch, chat, model) as (s, c):
        page = s.page
        s.ask("新建一张报价单给C0001")
        page.wait_for_selector(CARD, timeout=60_000)
        s.wait_status("WAITING_CONFIRMATION")
        op_id = str(page.get_attribute(CARD, "data-op"))
        edit = page.locator(f"{CARD} button:text('修改')")
        edit.focus()
        page.keyboard.press("Enter")  # opened from the keyboard: the first input has the focus
        page.wait_for_selector(EDIT)
        qty = page.get_by_label("数量", exact=True)
        assert page.evaluate("document.activeElement.name") == "bill_date" and qty.input_value() == "10"
        valid = (date.today() + timedelta(days=30)).isoformat()  # the form's defaults, editable as any value
        assert page.get_by_label("有效期至", exact=True).input_value() == valid
        assert page.get_by_label("交期(天)", exact=True).input_value() == "15"
        assert "C0001" in page.inner_text(f'{EDIT} [data-field="customer_id"]')  # a reference: kept, shown
        assert page.locator(f"{CARD} button:text('确认')").is_disabled()  # not while editing
        s.shot("edit-open")

        qty.fill("-3")
        page.click(f"{EDIT} button:text('保存修改')")
        problem = page.locator(f'{EDIT} [data-field="details.0.qty"] .field-error')
        problem.wait_for()
        assert problem.inner_text() == "低于允许的最小值", problem.inner_text()
        assert qty.get_attribute("aria-invalid") == "true"
        s.shot("edit-refused")
        assert line_value(c, op_id, "qty") == 10  # nothing changed

        qty.fill("12")
        page.click(f"{EDIT} button:text('保存修改')")
        page.wait_for_selector(EDIT, state="detached")
        assert "已按您的修改更新" in page.inner_text(CARD)
        cells = page.locator(f"{CARD} .line-diff tr").all_inner_texts()
        assert any("数量" in r and "12" in r for r in cells) and any("金额" in r and "552" in r for r in cells), cells
        assert page.evaluate("document.activeElement.textContent") == "修改"  # focus back on the button
        s.shot("edited")
        assert line_value(c, op_id, "qty") == 12
        pending = c.get(f"/api/agent/sessions/{s.session_id()}").json()["pendingInteraction"]["payload"]
        assert pending["values"]["details"][0]["qty"] == 12
        page.reload()  # the page shown again from the session's events: the edited diff, not the proposed one
        page.wait_for_selector(f"{CARD} .edited-note", timeout=30_000)
        cells = page.locator(f"{CARD} .line-diff tr").all_inner_texts()
        assert any("数量" in r and "12" in r for r in cells) and not any("460" in r for r in cells), cells

        page.click(f"{CARD} button:text('确认')")
        page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=60_000)
        assert edit.is_disabled()
        s.shot("edited-done")
        bill = c.get(f"/api/ops/{op_id}").json()["billId"]
        lines = erp_record(cast(ServerProcess, Served(str(c.base_url).rstrip("/"))), "2001", bill)["details"]
        assert [float(x["qty"]) for x in lines] == [12.0]


def test_retyping_a_copied_remark_removes_its_mark_and_the_tick_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: Callable[[ServerProcess], Session]
) -> None:
    model = ScriptedModel([READ_HOSTILE, calls(("propose_write", COPY)), text("已提议。"), text("已完成。")])
    with page_on(tmp_path, monkeypatch, chat, model) as (s, c):
        page = s.page
        s.ask("照着那张报价单的备注给C0001报价")
        page.wait_for_selector(f"{CARD} tr.is-tainted", timeout=60_000)
        page.click(f"{CARD} button:text('修改')")
        page.get_by_label("数量", exact=True).fill("11")  # the remark sent back as it was: still marked
        page.click(f"{EDIT} button:text('保存修改')")
        page.wait_for_selector(EDIT, state="detached")
        assert page.locator(f"{CARD} tr.is-tainted").count() == 1
        assert page.locator(f"{CARD} button:text('确认')").is_disabled()
        page.click(f"{CARD} button:text('修改')")
        page.get_by_label("备注", exact=True).fill("请按合同价报价")
        page.click(f"{EDIT} button:text('保存修改')")
        page.wait_for_selector(EDIT, state="detached")
        assert page.locator(f"{CARD} tr.is-tainted").count() == 0 and page.locator(f"{CARD} .ack-tainted").count() == 0
        assert page.locator(f"{CARD} button:text('确认')").is_enabled()
        s.shot("retyped")
        page.keyboard.press("Escape")  # nothing open: no effect
        op = c.get(f"/api/ops/{page.get_attribute(CARD, 'data-op')}").json()
        assert not [f for f in op["diff"] if f.get("tainted")] and op["state"] == "draft"
