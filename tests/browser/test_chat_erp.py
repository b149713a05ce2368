"""The chat page's governed writes against the real demo ERP and tether's ERP pack with the offline
planner, logged in through the page as ``sales01``: a quotation revised through its diff card and
the ERP's native form, and a new quotation through the form card, executed automatically.
Run alone with ``pytest -m browser``."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

import httpx

from tests.browser.conftest import BROWSER, Session
from tests.servers import ServerProcess, runtime_events
from tether.erp_demo import facts

pytestmark = BROWSER

CARD = ".card.proposal"
FORM = ".card.form-card"
USER = "sales01"


def erp_token(server: ServerProcess) -> str:
    """A fresh ERP login of sales01, bypassing tether."""
    r = httpx.post(f"{server.url}/erp/login", json={"username": USER, "password": facts.PASSWORD}, timeout=30)
    r.raise_for_status()
    return str(r.json()["token"])


def erp_record(server: ServerProcess, form_id: str, record_id: str) -> dict[str, Any]:
    """The record as the ERP alone has it."""
    r = httpx.get(
        f"{server.url}/erp/getBusinessDataById/{form_id}/{record_id}", headers={"Authorization": erp_token(server)}
    )
    r.raise_for_status()
    body: dict[str, Any] = r.json()
    return body


def erp_write(server: ServerProcess, body: dict[str, Any]) -> dict[str, Any]:
    """A write through the ERP's own API as sales01 (someone working in the ERP, not through tether)."""
    r = httpx.post(
        f"{server.url}/erp/addUpdateDelBusinessData",
        json=body,
        headers={"Authorization": erp_token(server)},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def own_quotation(server: ServerProcess) -> tuple[str, str]:
    """A draft quotation of this test's own (id, bill number)."""
    data = {"customer_id": facts.SALES01_CUSTOMER[0], "remark": "原备注"}
    lines = [{"material_id": "M0001", "qty": 5, "unit_price": 18.5}]
    made = erp_write(server, {"sFormId": "2001", "handleType": "add", "data": data, "details": lines})
    return made["sId"], made["sBillNo"]


def quotation_form(chat: Any, erp_server: ServerProcess) -> Session:
    """Logged in as sales01, a new quotation's form card open and the session waiting for it."""
    s = chat(erp_server)
    login(s)
    s.ask("新建一张报价单给恒达自动化")
    s.page.wait_for_selector(f"{FORM} form", timeout=60_000)
    s.wait_status("WAITING_USER_INPUT")
    return s


def login(s: Session) -> None:
    s.open()
    s.login_erp(USER, facts.PASSWORD)
    assert facts.USERS[USER][0] in s.page.inner_text("#who")
    assert "新建一张报价单给" in s.page.inner_text("#empty")  # an ERP login is shown what it can ask


def erp_login_if_asked(page: Any, s: Session) -> None:
    """The ERP's pages keep their own session (a cookie, as a separate system would): the first
    one opened in this browser asks for the ERP login, then goes on to the page asked for."""
    page.wait_for_load_state()
    if "/erp/ui/login" in page.url:
        s.shot("erp-login", page)
        page.fill("input[name=username]", USER)
        page.fill("input[name=password]", facts.PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()


def test_revise_a_quotation_confirm_save_in_the_erp_form_and_the_card_shows_it_done(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = chat(erp_server)
    login(s)
    page = s.page
    bill_no = facts.REVISION_QUOTATION_BILL_NO
    s.ask(f"把报价单{bill_no}的备注改成请按新价格重新报价")
    page.wait_for_selector(f"{CARD} table.diff", timeout=60_000)
    s.wait_status("WAITING_CONFIRMATION")
    diff = page.inner_text(f"{CARD} table.diff")
    assert facts.REVISION_REMARK in diff and "请按新价格重新报价" in diff
    assert page.locator(f"{CARD} table.diff tr.changed").count() == 1
    s.shot("proposal")
    assert erp_record(erp_server, "2001", facts.REVISION_QUOTATION_ID)["master"]["remark"] == facts.REVISION_REMARK

    page.click(f"{CARD} button:text('确认')")
    go = f'{CARD} .op-status[data-state="pending"] a:text("去ERP操作")'
    page.wait_for_selector(go, timeout=30_000)
    op_id = page.get_attribute(CARD, "data-op") or ""
    href = page.get_attribute(go, "href") or ""
    assert href == f"{erp_server.url}/erp/form/2001?staging={op_id}", href
    assert page.inner_text(f"{CARD} .op-status").count("待处理") == 1  # the badge, not the message again
    s.shot("op-pending")
    sid = s.session_id()

    with s.context.expect_page() as popup:
        page.click(go)
    erp = popup.value
    erp_login_if_asked(erp, s)
    assert erp.url.endswith(f"/erp/form/2001?staging={op_id}"), erp.url
    assert erp.input_value("textarea[name=remark]") == "请按新价格重新报价"
    # references as a person types them (codes, the record's name beside), not internal ids
    assert erp.input_value("input[name=customer_id]") == facts.SALES01_CUSTOMER[0]
    assert facts.SALES01_CUSTOMER[1] in erp.inner_text("body")
    codes = [erp.input_value(f"input[name='line{i}.material_id']") for i in range(3)]
    assert codes == [code for code, _ in facts.REVISION_QUOTATION_LINES]
    s.shot("erp-form", erp)
    erp.click("button[type=submit]")
    erp.wait_for_url(re.compile(r"/erp/form/2001\?bill="))
    assert "请按新价格重新报价" in erp.inner_text("body")
    s.shot("erp-saved", erp)
    erp.close()
    assert erp_record(erp_server, "2001", facts.REVISION_QUOTATION_ID)["master"]["remark"] == "请按新价格重新报价"

    page.reload()
    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=30_000)
    assert s.session_id() == sid
    status = page.inner_text(f"{CARD} .op-status")
    assert "已完成" in status and bill_no in status, status
    s.shot("op-done")
    with erp_server.client(page.evaluate("sessionStorage.getItem('tether.token')")) as c:
        types = [e["type"] for e in runtime_events(c, sid)]
    assert types.count("OP_RESULT") == 2  # pending, then done on reconciliation


def test_a_new_quotation_through_the_form_card_shows_the_error_inline_then_executes_with_a_bill_link(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = quotation_form(chat, erp_server)
    page = s.page
    # the planner's prefill (恒达自动化), resolved to the one customer of sales01's it names
    assert page.input_value(f'{FORM} [name="customer_id"]') == " ".join(facts.SALES01_CUSTOMER[:2])
    assert page.locator(f'{FORM} [name="bill_no"]').count() == 0  # the ERP numbers the bill
    s.shot("form")
    page.fill(f'{FORM} [name="details.0.material_id"]', "M0003")
    page.fill(f'{FORM} [name="delivery_days"]', "1.5")
    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f'{FORM} [data-field="details.0.qty"].invalid')
    # the ERP pack's own check of the values (422), each problem at its field, in the page's language
    assert page.inner_text(f'{FORM} [data-field="details.0.qty"] .field-error') == "必填项"
    assert page.inner_text(f'{FORM} [data-field="delivery_days"] .field-error') == "请输入整数"
    assert page.get_attribute(f'{FORM} [name="delivery_days"]', "aria-invalid") == "true"
    assert "2 处" in page.inner_text(f"{FORM} .field-error[role=alert]")
    s.wait_status("WAITING_USER_INPUT")
    s.shot("form-422")
    page.fill(f'{FORM} [name="details.0.qty"]', "4")
    page.fill(f'{FORM} [name="details.0.unit_price"]', "45")
    page.fill(f'{FORM} [name="delivery_days"]', "10")
    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    s.wait_status("WAITING_CONFIRMATION")
    proposal = page.inner_text(CARD)
    assert facts.SALES01_CUSTOMER[1] in proposal and "M0003" in proposal and "确认后自动执行" in proposal
    assert page.locator(f"{CARD} .line-diff").count() == 1
    # the proposal's own expiry is named for what it is, not 有效期至: that is the quotation's own
    # field, a row of the diff (its default, 30 days after the bill date)
    valid = (date.today() + timedelta(days=30)).isoformat()
    assert "提案有效期" in proposal and proposal.count("有效期至") == 1 and f"有效期至\t—\t{valid}" in proposal, (
        proposal
    )
    s.shot("proposal")

    page.click(f"{CARD} button:text('确认')")
    # 处理中 while the ERP executes (it may already be done by the time the page looks)
    page.wait_for_selector(f'{CARD} .op-status[data-state="processing"] .spinner, {CARD} .op-status[data-state="done"]')
    s.shot("op-processing")
    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=30_000)
    s.wait_status("SUCCEEDED")
    status = page.inner_text(f"{CARD} .op-status")
    bill_no = re.search(r"QT\d{6}-\d{4}", status)
    assert "已完成" in status and bill_no, status
    assert bill_no.group(0) in page.inner_text(".answer")
    s.shot("op-done")

    view = f'{CARD} .op-status a:text("查看")'
    assert re.search(r"/erp/form/2001\?bill=\w+$", page.get_attribute(view, "href") or "")
    with s.context.expect_page() as popup:
        page.click(view)
    erp = popup.value
    erp_login_if_asked(erp, s)
    assert "?bill=" in erp.url
    assert erp.inner_text("h1") == f"报价单 {bill_no.group(0)}"
    bill = erp.inner_text("body")
    assert facts.SALES01_CUSTOMER[1] in bill and "圆锥滚子轴承" in bill and "180" in bill  # 4 × 45
    assert "草稿 · 版本 1" in bill and facts.SALES01_CUSTOMER[0] in bill and "cus-" not in bill  # no internal ids
    s.shot("erp-bill", erp)
    erp.close()
    page.reload()  # reconciled from GET /api/ops/{id}: still done, once
    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]')
    assert page.locator(f"{CARD} .op-status").count() == 1
    assert page.locator(f"{FORM} button[type=submit]:disabled").count() == 1  # the form stays answered


def test_a_login_lapsed_before_the_confirm_asks_to_log_in_again_and_the_same_proposal_executes(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = chat(erp_server)
    login(s)
    page = s.page
    s.ask("给恒达自动化报价：M0011 2个，单价210")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    sid = s.session_id()
    op_id = page.get_attribute(CARD, "data-op") or ""
    old = page.evaluate("sessionStorage.getItem('tether.token')")
    httpx.post(erp_server.url + "/erp/logout", headers={"Authorization": old}).raise_for_status()

    page.click(f"{CARD} button:text('确认')")  # refused: 401, nothing executed
    page.wait_for_selector("#banner:not([hidden])")
    assert page.inner_text(f"{CARD} .field-error[role=alert]") == "登录已过期：重新登录后再操作。"
    s.shot("expired-at-confirm")
    page.click("#banner-login")
    s.login_erp(USER, facts.PASSWORD)
    page.wait_for_selector("#banner", state="hidden")
    assert s.session_id() == sid
    with erp_server.client(page.evaluate("sessionStorage.getItem('tether.token')")) as c:
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "draft"
    # the conversation re-opened with the new login: the same proposal, still to be confirmed
    page.click(f"{CARD}[data-op='{op_id}'] button:text('确认'):enabled")
    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=30_000)
    s.wait_status("SUCCEEDED")
    assert page.locator(CARD).count() == 1
    s.shot("confirmed-after-relogin")


def test_a_confirm_answer_that_arrives_after_the_op_executed_does_not_turn_the_card_back(
    chat: Any, erp_server: ServerProcess
) -> None:
    """An auto op can be executed — its OP_RESULT streamed and shown — before the confirm's own
    answer (``processing``) reaches the page; that late answer must not put the spinner back."""
    s = chat(erp_server)
    login(s)
    page = s.page
    held: list[tuple[Any, Any]] = []

    def hold(route: Any) -> None:  # the confirm reaches the server; its answer is held back
        held.append((route, route.fetch()))

    page.route("**/api/ops/*/confirm", hold)
    s.ask("给恒达自动化报价：M0013 5个，单价56")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    page.click(f"{CARD} button:text('确认')")
    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=30_000)  # from the stream
    s.wait_for(lambda: held, what="the held confirm")
    ((route, answer),) = held
    assert answer.json()["state"] == "processing"
    route.fulfill(response=answer)
    page.wait_for_function("() => !document.querySelector('.card.proposal .card-actions button:not(:disabled)')")
    page.wait_for_timeout(300)
    assert page.get_attribute(f"{CARD} .op-status", "data-state") == "done"
    assert page.locator(f"{CARD} .spinner").count() == 0


def test_a_manual_op_saved_in_the_erp_shows_done_when_the_chat_is_shown_again_without_a_reload(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = chat(erp_server)
    page = s.page
    page.clock.install()  # the page's own timers, to see its poll without waiting for it
    login(s)
    record_id, bill_no = own_quotation(erp_server)
    s.ask(f"把报价单{bill_no}的备注改成客户已确认新价格")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    s.wait_status("WAITING_CONFIRMATION")
    assert page.inner_text("#chat-status") == "等待确认"
    page.click(f"{CARD} button:text('确认')")
    go = f'{CARD} .op-status[data-state="pending"] a:text("去ERP操作")'
    page.wait_for_selector(go, timeout=30_000)
    op_id = page.get_attribute(CARD, "data-op") or ""
    page.wait_for_selector('#chat-status[data-op="pending"]', timeout=30_000)  # not 已完成: the write waits
    assert page.inner_text("#chat-status") == "待ERP处理"
    s.shot("pending")

    def reads() -> int:
        return sum(r.method == "GET" and r.url.endswith(f"/api/ops/{op_id}") for r in s.requests)

    before = reads()
    page.clock.run_for(10_500)  # a pending op is read again every 10 s
    s.wait_for(lambda: reads() > before, timeout=10, what="the pending op polled")

    erp = s.context.new_page()  # the user saves it in the ERP's own form, in another tab
    erp.goto(page.get_attribute(go, "href") or "")
    erp_login_if_asked(erp, s)
    erp.click("button[type=submit]")
    erp.wait_for_url(re.compile(r"/erp/form/2001\?bill="))
    assert erp_record(erp_server, "2001", record_id)["master"]["remark"] == "客户已确认新价格"
    erp.close()

    page.evaluate("window.__notReloaded = true")
    page.bring_to_front()
    page.evaluate("document.dispatchEvent(new Event('visibilitychange')); window.dispatchEvent(new Event('focus'))")
    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=10_000)
    assert page.evaluate("window.__notReloaded") is True
    status = page.inner_text(f"{CARD} .op-status")
    assert "已完成" in status and bill_no in status, status
    page.wait_for_selector("#chat-status:not([data-op])")
    assert page.inner_text("#chat-status") == "已完成"
    s.shot("done-on-focus")
    after = reads()
    page.clock.run_for(30_000)  # final: no more polling
    page.wait_for_timeout(300)
    assert reads() == after


def test_an_op_whose_record_changed_in_the_erp_offers_no_retry_and_says_to_ask_again(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = chat(erp_server)
    login(s)
    page = s.page
    record_id, bill_no = own_quotation(erp_server)
    s.ask(f"把报价单{bill_no}的备注改成按新价格报价")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    # someone changes the record in the ERP after the proposal: confirming it cannot work any more
    erp_write(erp_server, {"sFormId": "2001", "handleType": "update", "sId": record_id, "data": {"remark": "人工改过"}})
    page.click(f"{CARD} button:text('确认')")
    page.wait_for_selector(f'{CARD} .op-status[data-state="failed"]', timeout=30_000)
    status = page.inner_text(f"{CARD} .op-status")
    assert "the record changed since the proposal" in status, status  # the ERP's reason
    assert "请重新发送您的请求" in status
    assert page.locator(f"{CARD} .op-status button").count() == 0  # no 重试 that cannot succeed
    s.shot("stale")
    page.reload()
    page.wait_for_selector(f'{CARD} .op-status[data-state="failed"] .op-hint')
    assert page.locator(f"{CARD} .op-status button").count() == 0
    assert erp_record(erp_server, "2001", record_id)["master"]["remark"] == "人工改过"


def drafts(s: Session) -> dict[str, Any]:
    """The form values kept in this tab's sessionStorage."""
    found: dict[str, Any] = s.page.evaluate(
        "Object.fromEntries(Object.keys(sessionStorage).filter((k) => k.startsWith('tether.form.'))"
        ".map((k) => [k, JSON.parse(sessionStorage.getItem(k))]))"
    )
    return found


def test_a_form_cards_typed_values_survive_a_reload_until_it_is_answered(chat: Any, erp_server: ServerProcess) -> None:
    s = quotation_form(chat, erp_server)
    page = s.page
    sid = s.session_id()
    page.fill(f'{FORM} [name="details.0.material_id"]', "M0003")
    page.fill(f'{FORM} [name="details.0.qty"]', "7")
    page.fill(f'{FORM} [name="remark"]', "请尽快报价，含运费")
    page.click(f"{FORM} button:text('添加行')")
    page.fill(f'{FORM} [name="details.1.material_id"]', "M0004")
    page.fill(f'{FORM} [name="details.1.qty"]', "2")
    interaction = page.get_attribute(FORM, "data-interaction")
    assert list(drafts(s)) == [f"tether.form.{sid}.{interaction}"]

    page.reload()
    page.wait_for_selector(f"{FORM} form")
    s.wait_status("WAITING_USER_INPUT")
    assert page.input_value(f'{FORM} [name="customer_id"]') == " ".join(facts.SALES01_CUSTOMER[:2])  # the prefill
    assert page.input_value(f'{FORM} [name="details.0.material_id"]') == "M0003"
    assert page.input_value(f'{FORM} [name="details.0.qty"]') == "7"
    assert page.input_value(f'{FORM} [name="remark"]') == "请尽快报价，含运费"
    assert page.input_value(f'{FORM} [name="details.1.material_id"]') == "M0004"
    assert page.input_value(f'{FORM} [name="details.1.qty"]') == "2"
    s.shot("form-restored")

    page.click(f"{FORM} button[aria-label='删除此行 2']")  # a line removed stays removed
    page.reload()
    page.wait_for_selector(f'{FORM} [name="details.0.qty"]')
    assert page.locator(f"{FORM} .lines tbody tr").count() == 1
    assert page.input_value(f'{FORM} [name="details.0.qty"]') == "7"

    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    assert drafts(s) == {}  # answered: nothing kept
    proposal = page.inner_text(CARD)
    assert "M0003" in proposal and "请尽快报价，含运费" in proposal, proposal
    page.reload()
    page.wait_for_selector(f"{FORM} button[type=submit]:disabled")
    assert drafts(s) == {}


def test_a_quantity_of_zero_is_refused_at_its_cell_before_anything_is_sent(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = quotation_form(chat, erp_server)
    page = s.page
    qty = f'{FORM} [name="details.0.qty"]'
    # the bounds of the ERP's form schema on the inputs: qty > 0, price and days not negative
    assert page.get_attribute(qty, "min") == "0" and page.get_attribute(qty, "step") == "any"
    assert page.get_attribute(f'{FORM} [name="details.0.unit_price"]', "min") == "0"
    assert page.get_attribute(f'{FORM} [name="delivery_days"]', "min") == "0"
    assert page.get_attribute(f'{FORM} [name="delivery_days"]', "step") == "1"

    def posts() -> list[str]:
        return [r.url for r in s.requests if r.method == "POST" and "/interactions/" in r.url]

    page.fill(f'{FORM} [name="details.0.material_id"]', "M0003")
    page.fill(qty, "0")
    page.fill(f'{FORM} [name="details.0.unit_price"]', "-1")
    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f'{FORM} [data-field="details.0.qty"].invalid')
    assert page.inner_text(f'{FORM} [data-field="details.0.qty"] .field-error') == "必须大于 0"
    assert page.inner_text(f'{FORM} [data-field="details.0.unit_price"] .field-error') == "不能小于 0"
    assert page.get_attribute(qty, "aria-invalid") == "true"
    assert page.evaluate("document.activeElement.name") == "details.0.qty"
    assert "2 处" in page.inner_text(f"{FORM} .field-error[role=alert]")
    assert posts() == []  # nothing sent: the session still waits for the form
    s.wait_status("WAITING_USER_INPUT")
    s.shot("qty-zero")

    page.click("#lang-switch")  # the card again, in English, with what was typed
    page.wait_for_selector(f"{FORM} form")
    assert page.input_value(qty) == "0"
    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f'{FORM} [data-field="details.0.qty"].invalid')
    assert page.inner_text(f'{FORM} [data-field="details.0.qty"] .field-error') == "Must be greater than 0"
    assert posts() == []

    # the server stays the authority: its 422 codes read in the page's language too
    problems = [
        {"field": "details", "code": "max_lines", "message": "at most 200 lines"},
        {"field": "delivery_days", "code": "max", "message": "交期(天) must be below 1e+12"},
    ]
    page.route(
        "**/interactions/*",
        lambda route: route.fulfill(status=422, json={"error": "bad values", "problems": problems}),
    )
    page.fill(qty, "3")
    page.fill(f'{FORM} [name="details.0.unit_price"]', "40")
    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f'{FORM} [data-field="delivery_days"].invalid')
    assert page.inner_text(f'{FORM} [data-field="delivery_days"] .field-error') == "Must be below 1,000,000,000,000"
    assert "At most 200 lines" in page.inner_text(f"{FORM} .lines-error")
    s.wait_status("WAITING_USER_INPUT")
    page.click("#lang-switch")
