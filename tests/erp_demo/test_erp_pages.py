"""The native form pages, mounted at /erp as inside tether: login cookie, read-only bills, the
staging prefill (hostile text escaped, no script can run) whose Save writes through the write path."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.erp_demo.conftest import Erp
from tether.erp_demo import facts

HOSTILE = "<script>alert('x')</script>\"'><img src=x onerror=alert(2)>"


@pytest.fixture
def site(erp: Erp) -> Iterator[TestClient]:
    outer = FastAPI()
    outer.mount("/erp", erp.demo.asgi)
    with TestClient(outer, follow_redirects=False) as client:
        yield client


def _login(site: TestClient, user: str = "sales01") -> None:
    r = site.post("/erp/ui/login", data={"username": user, "password": facts.PASSWORD, "next": "/erp/ui/todos"})
    assert r.status_code == 303 and r.headers["location"] == "/erp/ui/todos"
    assert "erp_token" in site.cookies


def _csrf(text: str) -> str:
    found = re.search(r"name='csrf' value='([0-9a-f]+)'", text)
    assert found
    return found.group(1)


def _count(erp: Erp, table: str) -> int:
    with erp.demo.engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one())


def _no_live_markup(text: str) -> None:
    assert (
        "<script" not in text.lower()
        and "<img" not in text.lower()
        and "javascript:" not in text.replace("javascript:alert(1))", "")
    )


def test_login_required_and_open_redirects_refused(site: TestClient) -> None:
    r = site.get("/erp/form/2001", params={"bill": facts.REVISION_QUOTATION_ID})
    assert r.status_code == 303 and r.headers["location"].startswith("/erp/ui/login?next=%2Ferp%2Fform%2F2001")
    assert site.get("/erp/ui/login").status_code == 200
    bad = site.post("/erp/ui/login", data={"username": "sales01", "password": "nope"})
    assert bad.status_code == 401 and "erp_token" not in site.cookies
    r = site.post(
        "/erp/ui/login", data={"username": "sales01", "password": facts.PASSWORD, "next": "https://evil.example/x"}
    )
    assert r.status_code == 303 and r.headers["location"] == "/erp/ui/todos"
    r = site.post("/erp/ui/login", data={"username": "sales01", "password": facts.PASSWORD, "next": "//evil.example/x"})
    assert r.headers["location"] == "/erp/ui/todos"


def test_bill_page_escapes_hostile_data(site: TestClient, erp: Erp) -> None:
    _login(site)
    for qid, remark in facts.HOSTILE_QUOTATIONS.items():
        r = site.get("/erp/form/2001", params={"bill": qid})
        assert r.status_code == 200
        assert (
            "script-src" not in r.headers["content-security-policy"]
            and "default-src 'none'" in r.headers["content-security-policy"]
        )
        _no_live_markup(r.text)
        assert r.text.count("&lt;img") == remark.count("<img")
        assert facts.SALES01_CUSTOMER[1] in r.text
    customer = erp.all_rows("admin", "1001", code=facts.HOSTILE_CUSTOMER_2[0])[0]
    r = site.get("/erp/form/1001", params={"bill": customer["id"]})
    assert r.status_code == 200 and facts.HOSTILE_IGNORE in r.text  # shown as data, escaped
    other = erp.all_rows("admin", "1001", code=facts.SALES02_CUSTOMER[0])[0]["id"]
    assert site.get("/erp/form/1001", params={"bill": other}).status_code == 404  # row scope holds on pages too


def _stage(erp: Erp, body: dict[str, Any], user: str = "sales01") -> str:
    """A staged op, confirmed as tether's confirm does for a manual op (``execStaging`` validate)."""
    r = erp.post(user, "/ai/staging", body)
    assert r.status_code == 200, r.text
    op_id = str(r.json()["sId"])
    confirmed = erp.post(user, f"/ai/execStaging/{op_id}", {"mode": "validate"})
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "confirmed", confirmed.text
    return op_id


def test_a_draft_is_shown_but_not_saved_before_its_confirm(site: TestClient, erp: Erp) -> None:
    payload = {"customer_id": facts.SALES01_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 2}]}
    r = erp.post("sales01", "/ai/staging", {"opType": "create", "targetFormId": "2001", "payload": payload})
    op_id = r.json()["sId"]
    _login(site)
    page = site.get("/erp/form/2001", params={"staging": op_id})
    assert page.status_code == 200 and "confirm it in the chat first" in page.text and "<form" not in page.text
    confirmed = _stage(erp, {"opType": "create", "targetFormId": "2001", "payload": payload})
    csrf = _csrf(site.get("/erp/form/2001", params={"staging": confirmed}).text)  # a valid token: not a 403
    before = _count(erp, "quotation")
    form = {"csrf": csrf, "customer_id": "C0001", "line0.material_id": "M0004", "line0.qty": "2"}
    saved = site.post(f"/erp/form/2001/save?staging={op_id}", data=form)
    assert saved.status_code == 409 and "confirm it in the chat first" in saved.text
    assert _count(erp, "quotation") == before
    assert erp.get("sales01", f"/ai/staging/{op_id}").json()["status"] == "draft"
    assert site.post(f"/erp/form/2001/save?staging={confirmed}", data=form).status_code == 303  # once confirmed
    assert _count(erp, "quotation") == before + 1


def test_prefill_escapes_and_save_writes(site: TestClient, erp: Erp) -> None:
    payload = {
        "customer_id": facts.SALES01_CUSTOMER[0],
        "remark": HOSTILE,
        "details": [{"material_id": "M0004", "qty": 2, "remark": HOSTILE[:200]}],
    }
    op_id = _stage(erp, {"opType": "create", "targetFormId": "2001", "payload": payload})
    _login(site)
    page = site.get("/erp/form/2001", params={"staging": op_id})
    assert page.status_code == 200
    _no_live_markup(page.text)
    assert "&lt;script&gt;" in page.text and "&#x27;&gt;&lt;img" in page.text
    assert f"action='/erp/form/2001/save?staging={op_id}'" in page.text
    # references prefilled as codes with the record's name beside, not as internal ids
    assert f"name='customer_id' value='{facts.SALES01_CUSTOMER[0]}'" in page.text
    assert facts.SALES01_CUSTOMER[1] in page.text and "name='line0.material_id' value='M0004'" in page.text
    csrf = _csrf(page.text)
    before = _count(erp, "quotation")
    form = {"csrf": csrf, "customer_id": "C0001", "bill_date": "", "remark": "客户确认 " + HOSTILE, "tax_rate": "13",
            "line0.material_id": "M0004", "line0.qty": "2", "line0.unit_price": "1250", "line1.material_id": "M0006", "line1.qty": "1"}  # fmt: skip
    wrong = site.post(f"/erp/form/2001/save?staging={op_id}", data={**form, "csrf": "0" * 32})
    assert wrong.status_code == 403 and _count(erp, "quotation") == before
    invalid = site.post(f"/erp/form/2001/save?staging={op_id}", data={**form, "line1.qty": "abc"})
    assert invalid.status_code == 422 and "details[1].qty" in invalid.text and _count(erp, "quotation") == before
    _no_live_markup(invalid.text)
    other = site.post(f"/erp/form/2001/save?staging={op_id}", data={**form, "customer_id": facts.SALES02_CUSTOMER[0]})
    assert other.status_code == 422 and _count(erp, "quotation") == before
    assert facts.SALES02_CUSTOMER[1] not in other.text  # no name hint for a customer outside sales01's rows
    assert erp.get("sales01", f"/ai/staging/{op_id}").json()["status"] == "confirmed"  # still waiting for a good save
    saved = site.post(f"/erp/form/2001/save?staging={op_id}", data=form)
    assert saved.status_code == 303
    bill_id = saved.headers["location"].split("bill=")[1]
    assert _count(erp, "quotation") == before + 1
    bill = erp.get("sales01", f"/getBusinessDataById/2001/{bill_id}").json()
    assert bill["master"]["remark"] == "客户确认 " + HOSTILE and bill["master"]["total_amount"] == round(
        2500 + bill["details"][1]["amount"], 2
    )
    op = erp.get("sales01", f"/ai/staging/{op_id}").json()
    assert op["status"] == "executed" and op["resultBillId"] == bill_id
    again = site.post(f"/erp/form/2001/save?staging={op_id}", data=form)  # a second Save writes nothing
    assert again.status_code == 200 and "已完成" in again.text and _count(erp, "quotation") == before + 1
    shown = site.get(saved.headers["location"])
    assert shown.status_code == 200 and "&lt;script&gt;" in shown.text
    _no_live_markup(shown.text)


def test_update_and_examine_pages(site: TestClient, erp: Erp) -> None:
    qid = facts.REVISION_QUOTATION_ID
    op_id = _stage(
        erp, {"opType": "update", "targetFormId": "2001", "targetBillId": qid, "payload": {"delivery_days": 15}}
    )
    _login(site)
    page = site.get("/erp/form/2001", params={"staging": op_id})
    assert page.status_code == 200 and facts.REVISION_REMARK in page.text and "value='15'" in page.text
    fields = dict(re.findall(r"name='(line0\.[a-z_]+)' value='([^']*)'", page.text))
    assert fields["line0.material_id"]  # the current lines are prefilled
    form = {"csrf": _csrf(page.text), "customer_id": "C0001", "delivery_days": "15", "remark": "已按要求修改", "tax_rate": "13",
            "line0.material_id": "M0004", "line0.qty": "4", "line0.unit_price": "1282.5"}  # fmt: skip
    assert site.post(f"/erp/form/2001/save?staging={op_id}", data=form).status_code == 303
    master = erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()["master"]
    assert master["remark"] == "已按要求修改" and master["delivery_days"] == 15 and master["total_amount"] == 5130
    ex = _stage(erp, {"opType": "examine", "targetFormId": "2001", "targetBillId": qid})
    page = site.get("/erp/form/2001", params={"staging": ex})
    assert "确认审核" in page.text
    done = site.post(f"/erp/form/2001/save?staging={ex}", data={"csrf": _csrf(page.text)})
    assert done.status_code == 303
    assert erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()["master"]["status"] == "examined"
    todos = site.get("/erp/ui/todos")
    assert todos.status_code == 200 and todos.text.count("?staging=") == 2


def test_other_users_op_is_not_found(site: TestClient, erp: Erp) -> None:
    op_id = _stage(erp, {"opType": "create", "targetFormId": "2001", "payload": {"remark": "x"}}, user="sales02")
    _login(site, "sales01")
    assert site.get("/erp/form/2001", params={"staging": op_id}).status_code == 404
    assert site.post(f"/erp/form/2001/save?staging={op_id}", data={"csrf": "x"}).status_code == 404
    assert site.get("/erp/form/2002", params={"staging": op_id}).status_code == 404


def test_odd_digits_in_a_saved_form_are_a_field_error_not_a_server_error(site: TestClient, erp: Erp) -> None:
    qid = facts.REVISION_QUOTATION_ID
    op_id = _stage(erp, {"opType": "update", "targetFormId": "2001", "targetBillId": qid, "payload": {"remark": "x"}})
    _login(site)
    csrf = _csrf(site.get("/erp/form/2001", params={"staging": op_id}).text)
    base = {"csrf": csrf, "customer_id": "C0001", "line0.material_id": "M0004", "line0.qty": "1"}
    for extra in ({"delivery_days": "²"}, {"delivery_days": "--1"}, {"delivery_days": "9" * 5000}):
        r = site.post(f"/erp/form/2001/save?staging={op_id}", data={**base, **extra})
        assert r.status_code == 422 and "delivery_days" in r.text, (extra, r.status_code)
    for key in ("line².qty", "line" + "9" * 5000 + ".qty"):  # not a line index: ignored, the rest is saved
        r = site.post(f"/erp/form/2001/save?staging={op_id}", data={**base, key: "1"})
        assert r.status_code in (303, 200), (key, r.status_code)
