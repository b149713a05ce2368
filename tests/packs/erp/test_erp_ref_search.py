"""The form card's search box over a ``ref`` field (``GET /api/erp/forms/{id}/refs/{column}``), tried
from the attacker's side: it searches as the user — their brand, their row scope, their grants — and
hands out only what a person chooses a record by."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.packs.erp.conftest import ErpServer, facts

CUSTOMERS = "/api/erp/forms/2001/refs/customer_id"
MATERIALS = "/api/erp/forms/2001/refs/material_id"


def results(c: httpx.Client, path: str, q: str = "", **params: Any) -> list[dict[str, Any]]:
    r = c.get(path, params={"q": q, **params})
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["results"]
    return found


def test_a_customer_is_found_by_name_or_code_and_a_material_with_spec_unit_and_list_price(
    erp_server: ErpServer,
) -> None:
    code, name, _ = facts.SALES01_CUSTOMER
    with erp_server.login("sales01") as c:
        by_name = results(c, CUSTOMERS, "恒达")
        assert [(r["value"], r["name"]) for r in by_name] == [(code, name)]
        assert [r["value"] for r in results(c, CUSTOMERS, code.lower())] == [code]  # a code in any case
        m_code, m_name, spec, unit, price, _ = facts.BRAND_1_MATERIALS[2]
        assert m_code in [r["value"] for r in results(c, MATERIALS, "圆锥")]
        found = results(c, MATERIALS, m_code)
        assert [r["value"] for r in found] == [m_code]
        assert found[0]["name"] == m_name and found[0]["spec"] == spec and found[0]["unit"] == unit
        assert found[0]["price"] == price
        # same-named materials are told apart by their spec
        assert {r["spec"] for r in results(c, MATERIALS, "深沟球轴承")} >= {"6204-2RS", "6205-2RS"}
        assert len(results(c, MATERIALS, "", limit=5)) == 5  # nothing typed yet: the first ones
        assert results(c, MATERIALS, "no such thing at all") == []


def test_sales01_finds_neither_sales02s_customers_nor_another_brands(erp_server: ErpServer) -> None:
    others = [(code, name) for code, name, who in facts.BRAND_1_CUSTOMERS if who != "sales01"]
    with erp_server.login("sales01") as c:
        for code, name in [*others, facts.BRAND_2_CUSTOMER[:2]]:
            assert results(c, CUSTOMERS, name) == [] and results(c, CUSTOMERS, code) == []
        listed = {r["value"] for r in results(c, CUSTOMERS, "", limit=20)}
        owned = {code for code, _, salesman in facts.BRAND_1_CUSTOMERS if salesman == "sales01"}
        assert owned <= listed and not listed & {code for code, _ in others}
        assert results(c, MATERIALS, facts.BRAND_2_MATERIAL[0]) == []
        assert results(c, MATERIALS, facts.BRAND_2_MATERIAL[1]) == []
    with erp_server.login("sales02") as c:  # the same search finds them for their owner
        assert [r["value"] for r in results(c, CUSTOMERS, facts.SALES02_CUSTOMER[1])] == [facts.SALES02_CUSTOMER[0]]


def test_only_what_a_person_chooses_by_is_handed_out(erp_server: ErpServer) -> None:
    with erp_server.login("sales01") as c:
        for r in results(c, CUSTOMERS, "", limit=20) + results(c, MATERIALS, "", limit=20):
            assert set(r) <= {"value", "id", "code", "name", "short_name", "spec", "unit", "price"}, r
        body = json.dumps(results(c, CUSTOMERS, "恒达"), ensure_ascii=False)
        assert "credit_limit" not in body and "phone" not in body and "contact" not in body


def test_an_ungranted_form_a_plain_field_or_no_erp_login_gives_nothing(erp_server: ErpServer) -> None:
    with erp_server.login("sales01") as c:
        for path in (
            "/api/erp/forms/1003/refs/material_id",  # 物料档案: not granted to sales01 as a form
            "/api/erp/forms/4001/refs/material_id",  # 库存: not granted
            "/api/erp/forms/5001/refs/customer_id",  # a finance form: not granted
            "/api/erp/forms/9999/refs/customer_id",  # no such form
            "/api/erp/forms/..%2F1001/refs/customer_id",
        ):
            r = c.get(path, params={"q": ""})
            assert r.status_code == 404, (path, r.text)
            assert "results" not in r.json()
        for column in ("remark", "bill_no", "salesman_id", "name"):  # not a reference of the quotation
            r = c.get(f"/api/erp/forms/2001/refs/{column}", params={"q": "a"})
            assert r.status_code == 404 and "reference" in r.json()["error"], r.text
        r = c.get(CUSTOMERS, params={"q": "x" * 101})
        assert r.status_code == 422
        r = c.get(CUSTOMERS, params={"limit": 1000})
        assert r.status_code == 422
    with erp_server.client("dev-alice") as dev:  # a login that is not the ERP's holds no ERP token
        assert dev.get(CUSTOMERS, params={"q": "恒达"}).status_code in (401, 404)
    with httpx.Client(base_url=erp_server.url) as anonymous:
        assert anonymous.get(CUSTOMERS, params={"q": "恒达"}).status_code == 401
    with erp_server.login("wh01") as c:  # granted 1003 but not the quotation: its refs stay closed
        assert c.get(CUSTOMERS, params={"q": ""}).status_code == 404
    erp_server.assert_no_server_errors()


def test_a_revoked_token_is_refused(erp_server: ErpServer) -> None:
    token = erp_server.token("sales01")
    with erp_server.erp_direct(token) as erp:
        assert erp.post("/logout").status_code == 200
    with erp_server.client(token) as c:
        assert c.get(CUSTOMERS, params={"q": "恒达"}).status_code == 401
