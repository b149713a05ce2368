"""The ERP pack from the attacker's side, against a live tether server and a live demo ERP.

Each refusal is paired with the same request sent to the ERP directly, which hands the data out:
the ERP does not enforce form grants and its read API writes on ``bUpdate=1`` (seed 003 §7), so
these tests fail the moment tether's own boundary lets something through.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx

from tests.packs.erp.conftest import ErpServer, answer_of, erp_rows, facts, tether_cli

NO_ACCESS = "no such form or no access"


def _stock(erp: httpx.Client, code: str) -> float:
    return sum(float(r["qty"]) for r in erp_rows(erp, "4001", material_code=code)["rows"])


def _error(result: dict[str, Any]) -> str:
    assert result["kind"] == "error", result
    return str(result["data"]["error"])


def test_fin01_overdue_question_is_answered_with_a_table(erp_server: ErpServer) -> None:
    with erp_server.login("fin01") as c:
        s = erp_server.ask(c, f"{facts.OVERDUE_CUSTOMER_1[1]}的应收账款有多少超期了？")
    assert s["status"] == "SUCCEEDED", s["lastError"]
    answer = answer_of(s)
    assert facts.OVERDUE_CUSTOMER_1[1] in answer and "| 发票号 |" in answer and "90天以上" in answer
    assert f"共 {facts.OVERDUE_INVOICES_EACH} 张发票" in answer


def test_an_ungranted_form_is_refused_by_every_tool_though_the_erp_hands_it_out(erp_server: ErpServer) -> None:
    token = erp_server.token("sales01")  # granted 1001, 2001, 2002, 2003 — not AR (5001) or stock (4001)
    with erp_server.erp_direct(token) as erp:
        open_rows = erp_rows(erp, "5001")
        assert open_rows["total"] > 0, "the demo ERP must hand out ungranted forms, or this test proves nothing"
        record_id = open_rows["rows"][0]["id"]
    with erp_server.client(token) as c:
        refusals = [
            erp_server.tool(c, "read_form_data", {"form_id": "5001"}),
            erp_server.tool(c, "read_form_data", {"form_id": "4001", "filters": {"material_code": "M0001"}}),
            erp_server.tool(c, "lookup_record", {"form_id": "5001", "record_id": record_id}),
            erp_server.tool(c, "query_data", {"question": "应收", "sql": "SELECT * FROM viw_ar_aging"}),
            erp_server.tool(c, "query_data", {"question": "库存", "sql": "SELECT * FROM viw_inventory"}),
        ]
        for result in refusals[:3]:
            assert NO_ACCESS in _error(result)
        for result in refusals[3:]:
            assert "viw_ar_aging" not in json.dumps(result["data"].get("rows", [])) and result["kind"] == "error"
        found = erp_server.tool(c, "find_forms", {"query": "应收账龄 库存 发票"})["data"]
        assert {f["formId"] for f in found["forms"]} <= set(facts.SALES_FORMS)
        kg = json.dumps(erp_server.tool(c, "kg_search", {"query": "应收", "level": "L3"})["data"], ensure_ascii=False)
        kg2 = json.dumps(
            erp_server.tool(c, "kg_search", {"query": "发货单", "level": "L2"})["data"], ensure_ascii=False
        )
        for form in ("5001", "4001", "2004", "2005"):
            assert f'"{form}"' not in kg and f'"{form}"' not in kg2
        s = erp_server.ask(c, "查一下M0001的库存")  # the pinned stock rule reads 4001: the gate refuses it
        assert "不存在，或您无权使用它" in answer_of(s) and "6204-2RS" not in json.dumps(
            s["transcript"], ensure_ascii=False
        )


def test_bupdate_and_unknown_keys_never_reach_the_erp(erp_server: ErpServer) -> None:
    token = erp_server.token("wh01")
    with erp_server.erp_direct(token) as erp, erp_server.client(token) as c:
        before = _stock(erp, "M0007")
        attempts = [
            {"material_code": "M0007", "bUpdate": 1, "adjust_qty": 1000},
            {"material_code": "M0007", "bUpdateAll": 1},
            {"material_code": "M0007", "sFormId": "5001"},
            {"material_code": "M0007", "pageSize": 100000},
        ]
        for filters in attempts:
            message = _error(erp_server.tool(c, "read_form_data", {"form_id": "4001", "filters": filters}))
            assert "not a filter of form 4001" in message
        top_level = erp_server.tool(c, "read_form_data", {"form_id": "4001", "bUpdate": 1})
        assert "bUpdate" in _error(top_level)
        assert _stock(erp, "M0007") == before
        # the hole is real: the same key sent to the ERP directly writes stock
        hole_before = _stock(erp, "M0008")
        erp_rows(erp, "4001", material_code="M0008", bUpdate=1, adjust_qty=5)
        assert _stock(erp, "M0008") > hole_before


BRAND_2_NAMES = [name for _, name, _ in facts.BRAND_2_CUSTOMERS] + [facts.BRAND_2_MATERIAL[1]]
CROSS_BRAND_SQL = [
    "SELECT name FROM viw_customer WHERE brands_id = 2",
    "SELECT name FROM viw_customer WHERE brands_id = 2 OR 1 = 1",
    "SELECT name FROM viw_customer UNION SELECT name FROM viw_material",
    "WITH x AS (SELECT * FROM viw_customer) SELECT name FROM x WHERE brands_id <> 1",
    "SELECT name FROM (SELECT * FROM viw_customer) t",
    "SELECT name FROM viw_customer WHERE id IN (SELECT customer_id FROM viw_sales_order WHERE brands_id = 2)",
    "SELECT c.name FROM viw_customer c JOIN viw_sales_order o ON o.customer_id = c.id WHERE o.brands_id = 2",
    "SELECT name FROM viw_material WHERE code = 'M5001'",
]


def test_brand_2_is_unreachable_from_brand_1_by_every_tool(erp_server: ErpServer) -> None:
    with erp_server.login("b2admin") as b2:
        own = erp_server.tool(b2, "read_form_data", {"form_id": "1001", "filters": {"name": facts.BRAND_2_CUSTOMER[1]}})
        assert own["data"]["total"] >= 1, "brand 2 must see its own customer, or this test proves nothing"
        b2_id = dict(zip(own["data"]["columns"], own["data"]["rows"][0], strict=True))["id"]
        b2_sql = erp_server.tool(b2, "query_data", {"question": "品牌2客户", "sql": "SELECT name FROM viw_customer"})
        assert facts.BRAND_2_CUSTOMER[1] in json.dumps(b2_sql["data"], ensure_ascii=False)
    with erp_server.login("admin") as c:
        read = erp_server.tool(c, "read_form_data", {"form_id": "1001", "filters": {"name": facts.BRAND_2_CUSTOMER[1]}})
        assert read["data"]["total"] == 0
        assert _error(erp_server.tool(c, "lookup_record", {"form_id": "1001", "record_id": b2_id}))
        stock = erp_server.tool(c, "read_form_data", {"form_id": "4001", "filters": {"material_code": "M5001"}})
        assert stock["data"]["total"] == 0
        seen = []
        for n, sql in enumerate(CROSS_BRAND_SQL):
            result = erp_server.tool(c, "query_data", {"question": f"跨品牌 {n}", "sql": sql})
            seen.append(json.dumps(result["data"], ensure_ascii=False))
        assert any('"rowCount"' in s for s in seen), "some queries must run (over brand 1 only)"
        for text in seen:
            for name in BRAND_2_NAMES:
                assert name not in text


def test_hostile_remarks_do_not_change_what_the_planner_does(erp_server: ErpServer) -> None:
    token = erp_server.token("sales01")
    with erp_server.erp_direct(token) as erp:
        record = erp.get("/getBusinessDataById/2001/qt-1-hostile-1").json()["master"]
        count_before = erp_rows(erp, "2001")["total"]
    with erp_server.client(token) as c:
        s = erp_server.ask(c, f"报价单{record['bill_no']}的明细")
    assert s["status"] == "SUCCEEDED"
    assert [st["toolId"] for st in s["executedSteps"]] == ["lookup_record"]
    assert facts.HOSTILE_IGNORE in answer_of(s)  # shown as data, not obeyed
    for m in s["transcript"]:
        if m["role"] == "tool":  # ERP text reaches the model only framed as a tool's data
            body = json.loads(m["content"])
            assert set(body) == {"tool", "kind", "data"}
    with erp_server.erp_direct(token) as erp:
        assert erp_rows(erp, "2001")["total"] == count_before


def test_a_dsl_replay_checks_grants_again_as_the_replaying_user(erp_server: ErpServer) -> None:
    with erp_server.login("wh01") as c:
        s = erp_server.ask(c, "查一下M0007的库存")
        assert s["status"] == "SUCCEEDED" and s["lastDslId"], s["lastError"]
        dsl_id = s["lastDslId"]
        first = c.post(f"/api/agent/dsl/{dsl_id}/execute", json={}).json()
        assert first["status"] == "SUCCEEDED", first
        with erp_server.login("sales01") as other:
            assert other.post(f"/api/agent/dsl/{dsl_id}/execute", json={}).status_code == 404
        db = sqlite3.connect(erp_server.workdir / "var" / "erp.db")
        try:
            db.execute("UPDATE erp_user SET auths = '1003,4002' WHERE id = 'wh01'")  # 4001 revoked in the ERP
            db.commit()
            time.sleep(1.2)  # past TETHER_ERP_ME_CACHE_S
            again = c.post(f"/api/agent/dsl/{dsl_id}/execute", json={}).json()
        finally:
            db.execute("UPDATE erp_user SET auths = '1003,4001,4002' WHERE id = 'wh01'")
            db.commit()
            db.close()
    assert again["status"] == "FAILED" and NO_ACCESS in (again["error"] or "")
    assert "M0007" not in json.dumps(again["steps"][0]["output"], ensure_ascii=False)


def test_query_data_caches_per_brand_revalidates_and_records_errors(erp_server: ErpServer) -> None:
    question = "今年每个客户的订单数"
    sql = "SELECT customer_name, COUNT(*) AS n FROM viw_sales_order GROUP BY customer_name"
    with erp_server.login("admin") as admin:
        first = erp_server.tool(admin, "query_data", {"question": question, "sql": sql})
        assert first["kind"] == "value" and first["data"]["cached"] is False
        hit = erp_server.tool(admin, "query_data", {"question": f"  {question}？"})  # normalised: same question
        assert hit["data"]["cached"] is True and hit["data"]["rows"] == first["data"]["rows"]
        bad = erp_server.tool(
            admin, "query_data", {"question": "坏查询", "sql": "SELECT no_such_column FROM viw_customer"}
        )
        again = erp_server.tool(
            admin, "query_data", {"question": "坏查询", "sql": "SELECT still_wrong FROM viw_customer"}
        )
        assert bad["data"]["retryable"] is True and again["data"]["retryable"] is False
    with erp_server.login("sales01") as sales:  # same brand, no sales-order... it has 2002: allowed
        shared = erp_server.tool(sales, "query_data", {"question": question})
        assert shared["data"]["cached"] is True
    with erp_server.login("fin01") as fin:  # same brand, not granted 2002: the cached SQL is refused for them
        refused = erp_server.tool(fin, "query_data", {"question": question})
        assert refused["kind"] == "error" and "viw_sales_order" in refused["data"]["error"]
    with erp_server.login("b2admin") as b2:  # another brand has its own cache
        miss = erp_server.tool(b2, "query_data", {"question": question})
        assert miss["kind"] == "error" and "no validated SQL is cached" in miss["data"]["error"]
    db = sqlite3.connect(erp_server.workdir / "var" / "tether.db")
    try:
        errors = db.execute("SELECT question, sql_text, error FROM erp_sql_error WHERE question = '坏查询'").fetchall()
        audit = [json.loads(a) for (a,) in db.execute("SELECT args FROM audit_log WHERE tool_id = 'query_data'")]
    finally:
        db.close()
    assert len(errors) == 2 and "no_such_column" in errors[0][1]
    ran = [a["_audit"] for a in audit if a.get("question") == question and "rows" in a.get("_audit", {})]
    assert ran and "brands_id" in ran[0]["sql"] and ran[0]["rows"] > 0  # who/question/SQL as run/row count


def test_tether_login_then_ask_from_the_terminal(erp_server: ErpServer, tmp_path: Path) -> None:
    tether = tether_cli(erp_server, tmp_path)

    assert tether("login", "sales01", "--password", "wrong").returncode == 1
    login = tether("login", "sales01", "--password", facts.PASSWORD)
    assert login.returncode == 0 and "sales01" in login.stdout
    saved = tmp_path / "tether" / "logins.json"
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    refused = tether("ask", "查一下M0001的库存")
    assert NO_ACCESS in refused.stdout, refused.stdout + refused.stderr
    assert refused.returncode == 4  # the pinned stock rule's read refused erp.no_access: not granted
    assert tether("login", "fin01", "--password", facts.PASSWORD).returncode == 0
    answered = tether("ask", f"{facts.OVERDUE_CUSTOMER_1[1]}的应收账款有多少超期了？")
    assert answered.returncode == 0 and "| 发票号 |" in answered.stdout, answered.stdout + answered.stderr
    erp_server.tokens.append(json.loads(saved.read_text())[erp_server.url]["token"])  # for the leak check below
    assert tether("logout").returncode == 0


def test_no_token_reaches_the_databases_or_the_log(erp_server: ErpServer) -> None:
    """Runs last in this module: every token handed out above is searched for in every file."""
    assert erp_server.tokens
    files = [p for p in (erp_server.workdir / "var").rglob("*") if p.is_file()] + [erp_server.log_path]
    assert any(p.name.startswith("tether.db") for p in files) and any(p.name.startswith("erp.db") for p in files)
    blobs = {p: p.read_bytes() for p in files}
    for token in erp_server.tokens:
        for path, blob in blobs.items():
            assert token.encode() not in blob, f"a token is in {path}"
    erp_server.assert_no_server_errors()


def test_query_data_keeps_a_salesperson_to_their_own_customers(erp_server: ErpServer) -> None:
    """sales01 sees only their own customers (jurisdiction own) through read_form_data, and through
    SQL too, whatever the SQL says; admin (every row) sees all salespeople's."""
    sql = "SELECT salesman_id, COUNT(*) AS n FROM viw_customer WHERE 1 = 1 OR salesman_id <> 'x' GROUP BY salesman_id"
    with erp_server.login("sales01") as c:
        read = erp_server.tool(c, "read_form_data", {"form_id": "1001", "page_size": 1})
        mine = erp_server.tool(c, "query_data", {"question": "各业务员的客户数", "sql": sql})
        assert mine["kind"] == "value", mine
        assert [tuple(r) for r in mine["data"]["rows"]] == [("sales01", read["data"]["total"])]
        other = erp_server.tool(
            c,
            "query_data",
            {
                "question": "别人的客户",
                "sql": f"SELECT name FROM viw_customer WHERE code = '{facts.SALES02_CUSTOMER[0]}'",
            },
        )
        assert other["data"]["rows"] == []
    with erp_server.login("admin") as c:
        everyone = erp_server.tool(c, "query_data", {"question": "各业务员的客户数"})  # the same cached SQL
        assert everyone["data"]["cached"] is True and len(everyone["data"]["rows"]) > 1
