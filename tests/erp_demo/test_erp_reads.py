"""Reads: metadata, paging, filters, tenant isolation, row scope, the unenforced grants, and the
read that writes (4001 bUpdate)."""

from __future__ import annotations

import pytest

from tests.erp_demo.conftest import Erp
from tether.erp_demo import facts
from tether.erp_demo.forms import FIELD_TYPES, FORMS


def test_forms_and_config_shapes(shared_erp: Erp) -> None:
    forms = shared_erp.get("sales01", "/forms").json()["forms"]
    assert [f["formId"] for f in forms] == list(facts.ALL_FORMS)  # every form, not filtered by grants
    assert {"formId", "name", "module", "table", "detailTable", "aliases", "description"} <= set(forms[0])
    config = shared_erp.get("sales01", "/forms/2001/config").json()
    assert config["code"] == 1 and config["formId"] == "2001" and config["name"] == "报价单"
    assert config["table"] == "quotation" and config["examinable"] is True and config["billNoPrefix"] == "QT"
    customer = next(f for f in config["master"] if f["column"] == "customer_id")
    assert customer == {
        "column": "customer_id", "label": "客户", "type": "ref", "ref": "1001", "required": True, "options": None,
        "default": None, "readOnly": False, "maxLength": 32,
    }  # fmt: skip
    status = next(f for f in config["master"] if f["column"] == "status")
    assert status["options"] == [{"value": "draft", "label": "草稿"}, {"value": "examined", "label": "已审核"}]
    assert config["detail"]["table"] == "quotation_line"
    assert {f["column"] for f in config["detail"]["fields"]} >= {"material_id", "qty", "unit_price"}
    assert {f["name"] for f in config["filters"]} >= {"bill_no", "customer_name", "date_from"}
    for form in FORMS:
        c = shared_erp.get("admin", f"/forms/{form.form_id}/config").json()
        assert all(f["type"] in FIELD_TYPES for f in c["master"]), form.form_id
        assert (c["detail"] is None) == (form.detail_table is None)
        assert "bUpdate" not in {
            f["name"] for f in c["filters"]
        }  # the procedure takes it; the whitelist does not list it
    delivery = shared_erp.get("admin", "/forms/2003/config").json()
    warehouses = next(f for f in delivery["master"] if f["column"] == "warehouse_id")["options"]
    assert [w["label"] for w in warehouses] == ["原材料仓", "成品仓", "备件仓"]  # the caller's tenant's warehouses
    assert shared_erp.get("admin", "/forms/9999/config").status_code == 404


def test_paging_and_totals(shared_erp: Erp) -> None:
    first = shared_erp.read("admin", "2001", pageNum=1, pageSize=7)
    second = shared_erp.read("admin", "2001", pageNum=2, pageSize=7)
    assert first["total"] == second["total"] > 14
    assert len(first["rows"]) == len(second["rows"]) == 7
    assert not {r["id"] for r in first["rows"]} & {r["id"] for r in second["rows"]}
    assert first["rows"][0]["bill_date"] >= first["rows"][-1]["bill_date"] >= second["rows"][0]["bill_date"]
    everything = shared_erp.read("admin", "2001", pageSize=10_000)
    assert everything["pageSize"] == 500 and len(everything["rows"]) == min(500, first["total"])
    beyond = shared_erp.read("admin", "2001", pageNum=10_000, pageSize=20)
    assert beyond["rows"] == [] and beyond["total"] == first["total"]
    row = first["rows"][0]
    assert isinstance(row["total_amount"], float | int) and isinstance(row["bill_date"], str) and row["customer_name"]


def test_bad_read_input_is_4xx_with_a_reason(shared_erp: Erp) -> None:
    cases = [
        ({"sFormId": "2001", "pageNum": "abc"}, 422, "pageNum"),
        ({"sFormId": "2001", "pageNum": 0}, 422, "pageNum"),
        ({"sFormId": "2001", "pageSize": True}, 422, "pageSize"),
        ({"sFormId": "2001", "pageSize": [1]}, 422, "pageSize"),
        ({"sFormId": "2001", "date_from": "yesterday"}, 422, "date_from"),
        ({"sFormId": "2001", "customer_name": {"$ne": 1}}, 422, "customer_name"),
        ({"sFormId": "2001", "status": "deleted"}, 422, "status"),
        ({"sFormId": "5001", "min_overdue_days": "many"}, 422, "min_overdue_days"),
        ({"sFormId": "2001", "pageNum": "²"}, 422, "pageNum"),  # str.isdigit says yes, int() says no
        ({"sFormId": "2001", "pageNum": "--1"}, 422, "pageNum"),
        ({"sFormId": "2001", "pageSize": "9" * 5000}, 422, "pageSize"),
        ({"sFormId": "5001", "min_overdue_days": "²"}, 422, "min_overdue_days"),
        ({"sFormId": "5001", "min_overdue_days": 9223372036854775808}, 422, "min_overdue_days"),
        ({"sFormId": "5001", "min_overdue_days": 1e308}, 422, "min_overdue_days"),
        ({"sFormId": "4001", "bUpdate": "maybe"}, 422, "bUpdate"),
        ({"sFormId": "nope"}, 404, "no such form"),
        ({}, 404, "no such form"),
        ({"sFormId": ["2001"]}, 404, "no such form"),
    ]
    for body, status, word in cases:
        r = shared_erp.post("admin", "/getBusinessDataByFormcustomId", body)
        assert r.status_code == status, (body, r.text)
        assert word in r.text and r.json()["code"] == -1, body
    for raw in (b'{"sFormId": "2001", "remark": "\\ud800"}', b'{"sFormId": "2001", "remark": "\xed\xa0\x80"}'):
        r = shared_erp.client.post(
            "/getBusinessDataByFormcustomId",
            content=raw,
            headers={**shared_erp.h("admin"), "content-type": "application/json"},
        )
        assert r.status_code == 422 and "surrogate" in r.json()["msg"], (raw, r.text)
    r = shared_erp.client.post(
        "/getBusinessDataByFormcustomId",
        content=b"{not json",
        headers={**shared_erp.h("admin"), "content-type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["code"] == -1


def test_filters(shared_erp: Erp) -> None:
    code, name = facts.BRAND_1_MATERIAL
    rows = shared_erp.all_rows("admin", "1003", code=code)
    assert [(r["code"], r["name"]) for r in rows] == [(code, name)]
    like = shared_erp.all_rows("admin", "1001", name="力拓")
    assert [r["code"] for r in like] == [facts.OVERDUE_CUSTOMER_1[0]]
    revision = shared_erp.all_rows("admin", "2001", bill_no=facts.REVISION_QUOTATION_BILL_NO)
    assert [r["id"] for r in revision] == [facts.REVISION_QUOTATION_ID]
    assert revision[0]["status"] == "draft" and revision[0]["remark"] == facts.REVISION_REMARK
    dated = shared_erp.all_rows("admin", "2001", date_from="2000-01-01", date_to="2000-12-31")
    assert dated == []
    drafts = shared_erp.all_rows("admin", "2001", status="draft")
    assert drafts and all(r["status"] == "draft" for r in drafts)
    assert shared_erp.all_rows("admin", "1001", name="100%_") == []  # LIKE wildcards are escaped
    unknown = shared_erp.read("admin", "1003", code=code, no_such_param="x", sFormIdd="y")
    assert unknown["total"] == 1  # unknown names are ignored


def test_tenant_isolation(shared_erp: Erp) -> None:
    b2code, b2name = facts.BRAND_2_MATERIAL
    b1code, _ = facts.BRAND_1_MATERIAL
    assert shared_erp.all_rows("admin", "1003", code=b2code) == []
    assert shared_erp.all_rows("b2admin", "1003", code=b2code)[0]["name"] == b2name
    assert shared_erp.all_rows("b2admin", "1003", code=b1code) == []
    assert shared_erp.all_rows("admin", "1001", name=facts.BRAND_2_CUSTOMER[1]) == []
    b2_customer = shared_erp.all_rows("b2admin", "1001", code=facts.BRAND_2_CUSTOMER[0])[0]
    for form in FORMS:
        rows = shared_erp.all_rows("admin", form.form_id)
        assert all(r["brands_id"] == 1 for r in rows), form.form_id
        b2rows = shared_erp.all_rows("b2admin", form.form_id)
        assert all(r["brands_id"] == 2 for r in b2rows), form.form_id
        if b2rows:  # lookups of the other brand's records are 404 for every form
            r = shared_erp.get("admin", f"/getBusinessDataById/{form.form_id}/{b2rows[0]['id']}")
            assert r.status_code == 404 and r.json()["code"] == -1, form.form_id
    assert shared_erp.get("admin", f"/getBusinessDataById/1001/{b2_customer['id']}").status_code == 404
    assert shared_erp.get("b2admin", f"/getBusinessDataById/1001/{b2_customer['id']}").status_code == 200


def test_row_scope_own_customers(shared_erp: Erp) -> None:
    mine = shared_erp.all_rows("sales01", "1001")
    assert mine and all(r["salesman_id"] == "sales01" for r in mine)
    everyone = shared_erp.all_rows("admin", "1001")
    assert len(everyone) > len(mine) and {r["salesman_id"] for r in everyone} >= set(facts.BRAND_1_SALESPEOPLE)
    for form_id in ("2001", "2002", "2003", "2004", "2005", "5001"):
        assert all(r["salesman_id"] == "sales01" for r in shared_erp.all_rows("sales01", form_id)), form_id
    assert shared_erp.all_rows("sales01", "1001", code=facts.SALES02_CUSTOMER[0]) == []
    other = next(r for r in everyone if r["code"] == facts.SALES02_CUSTOMER[0])
    assert shared_erp.get("sales01", f"/getBusinessDataById/1001/{other['id']}").status_code == 404
    assert shared_erp.get("sales02", f"/getBusinessDataById/1001/{other['id']}").status_code == 200
    # forms without a customer are not row-scoped
    assert shared_erp.read("sales01", "1003")["total"] == shared_erp.read("admin", "1003")["total"]


def test_grants_stored_but_not_enforced(shared_erp: Erp) -> None:
    """The hole tether must close: sales01 is not granted 5001, the ERP answers anyway."""
    me = shared_erp.get("sales01", "/me").json()
    assert "5001" not in me["sAuthsId"] and "4001" not in me["sAuthsId"]
    aging = shared_erp.read("sales01", "5001")
    assert aging["total"] > 0  # (its own customers' receivables)
    assert shared_erp.read("wh01", "5001")["total"] > aging["total"]  # wh01 is not granted 5001 either
    assert shared_erp.get("wh01", "/forms/5001/config").status_code == 200


def test_lookup_with_lines(shared_erp: Erp) -> None:
    r = shared_erp.get("sales01", f"/getBusinessDataById/2001/{facts.REVISION_QUOTATION_ID}")
    assert r.status_code == 200
    body = r.json()
    assert body["master"]["bill_no"] == facts.REVISION_QUOTATION_BILL_NO
    assert body["master"]["customer_name"] == facts.REVISION_QUOTATION_CUSTOMER[1]
    lines = [(d["material_code"], d["qty"]) for d in body["details"]]
    assert lines == [(code, float(qty)) for code, qty in facts.REVISION_QUOTATION_LINES]
    assert all(d["material_name"] and d["unit"] for d in body["details"])
    assert shared_erp.get("sales01", "/getBusinessDataById/2001/no-such-id").status_code == 404
    assert shared_erp.get("sales01", "/getBusinessDataById/9999/x").status_code == 404


def test_inventory_read_that_writes(erp: Erp) -> None:
    """4001 with bUpdate=1 really adds adjust_qty to the matched rows (seed §7); plain reads do not."""
    code = facts.LOW_STOCK_MATERIALS[0][0]
    before = {r["id"]: r["qty"] for r in erp.all_rows("wh01", "4001", material_code=code)}
    for _ in range(3):
        erp.read("wh01", "4001", material_code=code)
    assert {r["id"]: r["qty"] for r in erp.all_rows("wh01", "4001", material_code=code)} == before
    after = erp.read("wh01", "4001", material_code=code, bUpdate=1)["rows"]
    assert {r["id"]: r["qty"] for r in after} == pytest.approx({k: v + 1 for k, v in before.items()})
    erp.read("wh01", "4001", material_code=code, bUpdate="1", adjust_qty=-5)
    now = {r["id"]: r["qty"] for r in erp.all_rows("wh01", "4001", material_code=code)}
    assert now == pytest.approx({k: v - 4 for k, v in before.items()})
    others = {r["id"]: r["qty"] for r in erp.all_rows("wh01", "4001") if r["material_code"] != code}
    b2 = {r["id"]: r["qty"] for r in erp.all_rows("b2admin", "4001")}
    erp.read("wh01", "4001", material_code=code, bUpdateAll=1, adjust_qty=10)
    got = {r["id"]: r["qty"] for r in erp.all_rows("wh01", "4001") if r["material_code"] != code}
    assert got == pytest.approx({k: v + 10 for k, v in others.items()})
    assert {r["id"]: r["qty"] for r in erp.all_rows("b2admin", "4001")} == b2  # the tenant's rows only
