"""The form card as a clerk uses it, against the real demo ERP and the offline planner, logged in as
``sales01``: the ERP's defaults prefilled, each reference chosen through its search box (never an
id typed), a line's list price and amount shown as they type, and a new quotation made end to end.
Run alone with ``pytest -m browser``."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.browser.conftest import BROWSER, Session
from tests.browser.test_chat_erp import CARD, FORM, erp_record, erp_token, login, quotation_form
from tests.servers import ServerProcess
from tether.erp_demo import facts

pytestmark = BROWSER

CUSTOMER = f'{FORM} [name="customer_id"]'
LIST = ".ref-list:not([hidden])"


def material(n: int) -> str:
    return f'{FORM} [name="details.{n}.material_id"]'


def options(s: Session) -> list[str]:
    """The matches listed for what the focused box holds now (not an earlier search's)."""
    text = s.page.evaluate("document.activeElement.value.trim()")
    s.page.wait_for_selector(f'.ref-list[data-q="{text}"]:not([hidden]) li')
    return [str(v) for v in s.page.locator(f"{LIST} li").evaluate_all("els => els.map((e) => e.dataset.value || '')")]


def searches(s: Session, column: str) -> list[str]:
    return [r.url for r in s.requests if f"/refs/{column}" in r.url]


def today(s: Session) -> str:
    return str(
        s.page.evaluate(
            "(() => { const d = new Date(); return [d.getFullYear(), String(d.getMonth() + 1)"
            ".padStart(2, '0'), String(d.getDate()).padStart(2, '0')].join('-'); })()"
        )
    )


def test_sales01_makes_a_new_quotation_through_the_form_card_without_typing_an_id(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = quotation_form(chat, erp_server)
    page = s.page
    code, name, _ = facts.SALES01_CUSTOMER
    # the ERP's defaults and the planner's prefill; what the ERP makes itself is not asked for
    assert page.input_value(f'{FORM} [name="bill_date"]') == today(s)
    assert page.input_value(f'{FORM} [name="tax_rate"]') == "13"
    assert page.input_value(CUSTOMER) == f"{code} {name}"
    assert name in page.inner_text(f'{FORM} [data-field="customer_id"] .ref-note')
    for made in ("bill_no", "status", "total_amount", "details.0.amount"):
        assert page.locator(f'{FORM} [name="{made}"]').count() == 0, made

    # a material found by a part of its name, typed as a person types: one search, not one per key
    page.click(material(0))
    page.locator(material(0)).press_sequentially("圆锥滚子", delay=40)
    m_code, m_name, spec, unit, price, _ = facts.BRAND_1_MATERIALS[2]
    assert m_code in options(s)
    typed = [u for u in searches(s, "material_id") if "q=%E5%9C%86" in u]  # q=圆…
    assert len(typed) == 1, typed
    first = page.inner_text(f"{LIST} li >> nth=0")
    assert m_name in first and m_code in first and spec in first and unit in first and f"{price:g}" in first
    assert page.get_attribute(material(0), "aria-expanded") == "true"
    s.shot("material-search")
    page.keyboard.press("Enter")  # the first match, chosen by keyboard; Enter does not send the form
    page.wait_for_selector(".ref-list", state="hidden")
    assert page.input_value(material(0)) == f"{m_code} {m_name} {spec}"
    assert page.get_attribute(material(0), "aria-expanded") == "false"
    assert page.locator(f"{CARD}").count() == 0 and "表单已提交" not in page.inner_text(FORM)
    # its list price is the 单价 placeholder; the amount follows qty and price
    assert page.get_attribute(f'{FORM} [name="details.0.unit_price"]', "placeholder") == f"{price:g}"
    page.fill(f'{FORM} [name="details.0.qty"]', "4")
    assert page.inner_text(f"{FORM} tr[data-line='0'] .line-amount") == "184"  # 4 × the list price
    page.fill(f'{FORM} [name="details.0.unit_price"]', "45")
    assert page.inner_text(f"{FORM} tr[data-line='0'] .line-amount") == "180"

    # a second line: the arrows move through the matches, the mouse can choose too
    page.click(f"{FORM} button:text('添加行')")
    page.click(material(1))
    page.locator(material(1)).press_sequentially("轴承", delay=20)
    found = options(s)
    assert len(found) >= 2
    page.keyboard.press("ArrowDown")
    active = page.get_attribute(material(1), "aria-activedescendant") or ""
    assert page.get_attribute(f"#{active}", "aria-selected") == "true"
    assert page.get_attribute(f"#{active}", "data-value") == found[1]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Escape")  # closes the list, keeps the text
    page.wait_for_selector(".ref-list", state="hidden")
    assert page.input_value(material(1)) == "轴承"
    page.fill(material(1), "伺服")
    page.click(f'{LIST} li[data-value="M0005"]')
    assert page.input_value(material(1)).startswith("M0005 伺服电机")
    page.fill(f'{FORM} [name="details.1.qty"]', "2")
    assert page.get_attribute(f'{FORM} [name="details.1.unit_price"]', "placeholder") == "2,680"
    assert page.inner_text(f"{FORM} tr[data-line='1'] .line-amount") == "5,360"
    s.shot("form-filled")

    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    proposal = page.inner_text(CARD)
    assert name in proposal and m_code in proposal and "M0005" in proposal and "5360" in proposal.replace(",", "")
    s.shot("proposal")
    page.click(f"{CARD} button:text('确认')")
    page.wait_for_selector(f'{CARD} .op-status[data-state="done"]', timeout=30_000)
    s.wait_status("SUCCEEDED")
    bill = re.search(r"QT\d{6}-\d{4}", page.inner_text(f"{CARD} .op-status"))
    assert bill, page.inner_text(f"{CARD} .op-status")
    s.shot("done")

    # what the ERP holds: the chosen customer and materials, today's date, the prices given
    record = erp_record_by_bill(erp_server, bill.group(0))
    master, lines = record["master"], record["details"]
    assert master["customer_code"] == code and str(master["bill_date"])[:10] == today(s)
    assert [(x["material_code"], x["qty"], x["unit_price"]) for x in lines] == [(m_code, 4, 45), ("M0005", 2, 2680)]
    answers = [r for r in s.requests if r.method == "POST" and "/interactions/" in r.url]
    sent = answers[-1].post_data_json["values"]  # codes of the records chosen, not ids typed
    assert sent["customer_id"] == code and [d["material_id"] for d in sent["details"]] == [m_code, "M0005"]


def erp_record_by_bill(server: ServerProcess, bill_no: str) -> dict[str, Any]:
    """The quotation of that bill number as the ERP alone has it."""
    token = erp_token(server)
    r = httpx.post(
        f"{server.url}/erp/getBusinessDataByFormcustomId",
        json={"sFormId": "2001", "pageNum": 1, "pageSize": 5, "bill_no": bill_no},
        headers={"Authorization": token},
        timeout=30,
    )
    r.raise_for_status()
    row = next(x for x in r.json()["dataset"]["rows"] if x["bill_no"] == bill_no)
    return erp_record(server, "2001", row["id"])


def test_the_search_box_finds_only_what_sales01_may_see(chat: Any, erp_server: ServerProcess) -> None:
    s = quotation_form(chat, erp_server)
    page = s.page

    def nothing_for(box: str, text: str) -> None:
        page.fill(box, text)
        page.wait_for_selector(f'.ref-list[data-q="{text}"]:not([hidden]) li')
        assert page.inner_text(LIST) == "没有您可见的匹配记录", text

    for _, other, who in facts.BRAND_1_CUSTOMERS:
        if who != "sales01":  # sales02's and sales03's customers: not theirs to quote
            nothing_for(CUSTOMER, other)
    nothing_for(CUSTOMER, facts.SALES02_CUSTOMER[0])
    nothing_for(CUSTOMER, facts.BRAND_2_CUSTOMER[1])  # another brand's, by name and by code
    nothing_for(CUSTOMER, facts.BRAND_2_CUSTOMER[0])
    nothing_for(material(0), facts.BRAND_2_MATERIAL[1])
    s.shot("nothing-of-others")
    page.fill(CUSTOMER, facts.OVERDUE_CUSTOMER_1[1])  # their own customer, by its name
    assert options(s) == [facts.OVERDUE_CUSTOMER_1[0]]
    page.keyboard.press("Enter")
    assert page.input_value(CUSTOMER).startswith(facts.OVERDUE_CUSTOMER_1[0])
    # the text typed into a reference and not chosen is still resolved on the server, as before
    page.fill(material(0), "M0004")
    page.keyboard.press("Escape")
    page.fill(f'{FORM} [name="details.0.qty"]', "1")
    page.click(f"{FORM} button[type=submit]")
    page.wait_for_selector(f"{CARD} button:text('确认'):enabled", timeout=60_000)
    assert "M0004" in page.inner_text(CARD) and facts.OVERDUE_CUSTOMER_1[1] in page.inner_text(CARD)


def test_a_chosen_record_survives_a_reload_and_the_card_reads_in_english(chat: Any, erp_server: ServerProcess) -> None:
    s = quotation_form(chat, erp_server)
    page = s.page
    page.fill(material(0), "M0003")
    assert options(s) == ["M0003"]
    page.keyboard.press("Enter")
    page.fill(f'{FORM} [name="details.0.qty"]', "3")
    page.reload()
    page.wait_for_selector(f"{FORM} form")
    assert page.input_value(material(0)).startswith("M0003 ")
    assert page.get_attribute(f'{FORM} [name="details.0.unit_price"]', "placeholder") == "46"
    assert page.inner_text(f"{FORM} tr[data-line='0'] .line-amount") == "138"
    page.click("#lang-switch")
    page.wait_for_selector(f"{FORM} form")
    assert page.get_attribute(CUSTOMER, "placeholder") == "Type a name or code to search"
    assert "Chosen:" in page.inner_text(f'{FORM} [data-field="customer_id"] .ref-note')
    assert page.inner_text(f"{FORM} tr[data-line='0'] .line-amount") == "138"
    s.shot("english")
    page.click("#lang-switch")


def test_a_failed_tool_reads_in_the_persons_language_in_the_answer_and_the_timeline(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = chat(erp_server)
    login(s)
    page = s.page
    bill_no = "QT209901-9999"
    s.ask(f"把报价单{bill_no}的备注改成请按新价格重新报价")
    s.wait_status("SUCCEEDED")
    said = f"没有找到您可以查看的报价单 {bill_no}。请核对单号。"
    assert page.inner_text(".answer").strip() == f"未能完成：{said}"
    page.click(".timeline > summary")
    page.click(".tool-row[data-tool='propose_write'] > details > summary")
    error = ".tool-row[data-tool='propose_write'] pre.error"
    assert page.inner_text(error) == said  # not the tool's English sentence
    s.shot("error-zh")
    page.click("#lang-switch")  # the same event, read in English
    page.wait_for_selector(".timeline > summary")
    page.click(".timeline > summary")
    page.click(".tool-row[data-tool='propose_write'] > details > summary")
    assert page.inner_text(error) == f"There is no 报价单 {bill_no} that you can see. Check the number."
    s.shot("error-en")
    page.click("#lang-switch")


def test_each_problem_of_values_that_do_not_fit_reads_in_the_pages_language(
    chat: Any, erp_server: ServerProcess
) -> None:
    s = chat(erp_server)
    login(s)
    page = s.page
    s.ask(f"把报价单{facts.REVISION_QUOTATION_BILL_NO}的状态改成已审核")
    s.wait_status("SUCCEEDED")
    assert page.inner_text(".answer").strip() == "未能完成：填写的内容不符合报价单：状态是只读的，由 ERP 填写。"
    page.click("#lang-switch")
    page.wait_for_selector(".timeline > summary")
    page.click(".timeline > summary")
    page.click(".tool-row[data-tool='propose_write'] > details > summary")
    error = page.inner_text(".tool-row[data-tool='propose_write'] pre.error")
    assert error == "The values do not fit 报价单: 状态 is read-only (the ERP sets it).", error
    s.shot("problems-en")
    page.click("#lang-switch")
