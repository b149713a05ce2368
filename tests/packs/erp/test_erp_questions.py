"""Everyday questions through the live server, as each demo user types them, answered by the
offline planner's metadata reader: the form and filters of every read it made are checked, and
each answer against what the ERP itself hands out for the same read."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.packs.erp.conftest import ErpServer, answer_of, erp_rows, facts


def reads(session: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(tool, arguments) of every tool call the planner made, in order."""
    out = []
    for message in session["transcript"]:
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or call
            out.append((str(fn["name"]), json.loads(fn.get("arguments") or "{}")))
    return out


def ask(
    server: ErpServer, client: httpx.Client, question: str
) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    s = server.ask(client, question)
    return s, [c for c in reads(s) if c[0] != "read_question"]


def test_fin01_payables_and_overdue_receivables_are_the_right_forms_and_filters(erp_server: ErpServer) -> None:
    token = erp_server.token("fin01")
    with erp_server.erp_direct(token) as erp:
        ap_overdue = erp_rows(erp, "5002", min_overdue_days=1)["total"]
        ar_60 = erp_rows(erp, "5001", min_overdue_days=60)["total"]
    assert ap_overdue > 0 and ar_60 > 0, "the demo data must hold overdue payables and receivables"
    with erp_server.client(token) as c:
        s, calls = ask(erp_server, c, "哪些供应商的应付已经超期了？")
        assert s["status"] == "SUCCEEDED", s["lastError"]
        assert calls == [
            ("read_form_data", {"form_id": "5002", "filters": {"min_overdue_days": 1}, "page": 1, "page_size": 20})
        ]
        assert f"按 应付账款（5002），最少逾期天数 ≥ 1：共 {ap_overdue} 条" in answer_of(s)
        assert "| 供应商名称 |" in answer_of(s) and "客户名称" not in answer_of(s)
        s, calls = ask(erp_server, c, "超期超过60天的应收有哪些？")
        assert calls[0][1]["form_id"] == "5001" and calls[0][1]["filters"] == {"min_overdue_days": 60}
        assert f"共 {ar_60} 条" in answer_of(s)


def test_fin01_totals_counts_and_one_field(erp_server: ErpServer) -> None:
    token = erp_server.token("fin01")
    with erp_server.erp_direct(token) as erp:
        invoice = erp_rows(erp, "2004", status="examined")["rows"][0]
    with erp_server.client(token) as c:
        s, calls = ask(erp_server, c, "本月一共收了多少款？")
        assert s["status"] == "SUCCEEDED", s["lastError"]
        ((tool, args),) = calls
        assert tool == "query_data" and args["sql"].startswith("SELECT SUM(amount) AS amount")
        assert "按 收款单（2005），单据日期" in answer_of(s) and "收款金额合计" in answer_of(s)
        s, calls = ask(erp_server, c, f"发票{invoice['bill_no']}的价税合计是多少？")
        assert calls == [
            (
                "read_form_data",
                {"form_id": "2004", "filters": {"bill_no": invoice["bill_no"]}, "page": 1, "page_size": 20},
            )
        ]
        assert f"{float(invoice['total_amount']):,.2f}" in answer_of(s) or str(invoice["total_amount"]) in answer_of(s)


def test_sales01_sees_only_their_forms_and_their_customers(erp_server: ErpServer) -> None:
    with erp_server.login("sales01") as c:
        s, calls = ask(erp_server, c, "哪些报价单还没审核？")
        assert calls[0][1] == {"form_id": "2001", "filters": {"status": "draft"}, "page": 1, "page_size": 20}
        assert "状态 = 草稿" in answer_of(s) and "| 已审核 |" not in answer_of(s)
        s, calls = ask(erp_server, c, "恒达自动化的联系电话是多少？")
        assert calls[0][1]["form_id"] == "1001" and "联系电话" in answer_of(s)
        assert facts.SALES01_CUSTOMER[1] in answer_of(s)
        s, calls = ask(erp_server, c, "哪些供应商的应付已经超期了？")  # 5002 is not granted to sales01
        assert calls == [] and answer_of(s) == "您没有供应商档案、应付账款的权限。"  # named, never read
        assert s["outcome"] == "not_granted"
        s, calls = ask(erp_server, c, f"{facts.SALES02_CUSTOMER[1]}的报价单")  # sales02's: unseen here
        assert calls == [] and "| 单号 |" not in answer_of(s)


def test_wh01_stock_by_spec_and_an_ambiguous_name_is_asked(erp_server: ErpServer) -> None:
    with erp_server.login("wh01") as c:
        s, calls = ask(erp_server, c, "6205-2RS还有多少库存")  # a quantity: its sum, the rows beside it
        assert [t for t, _ in calls] == ["query_data", "query_data"]
        assert "SUM(qty)" in calls[0][1]["sql"] and "material_code = 'M0002'" in calls[0][1]["sql"]
        assert "库存数量合计" in answer_of(s) and "| " in answer_of(s)
        s = erp_server.ask(c, "深沟球轴承的库存情况怎么样")
        assert s["status"] in ("SUCCEEDED", "WAITING_USER_INPUT"), s["lastError"]
        if s["status"] == "WAITING_USER_INPUT":
            pending = s["pendingInteraction"]
            chip = next(o for o in pending["payload"]["options"] if o.startswith("M0001"))
            url = f"/api/agent/sessions/{s['sessionId']}/interactions/{pending['interactionId']}"
            s = c.post(url, json={"answer": chip}).json()
            assert s["status"] == "SUCCEEDED", s["lastError"]
            assert [a for t, a in reads(s) if t == "read_form_data"][-1]["filters"] == {"material_code": "M0001"}


def test_admin_asks_which_forms_amount_then_ranks_customers(erp_server: ErpServer) -> None:
    with erp_server.login("admin") as c:
        s = erp_server.ask(c, "金额最大的5个客户")
        assert s["status"] == "WAITING_USER_INPUT" and "销售订单" in s["pendingInteraction"]["payload"]["options"]
        url = f"/api/agent/sessions/{s['sessionId']}/interactions/{s['pendingInteraction']['interactionId']}"
        s = c.post(url, json={"answer": "销售订单"}).json()
        assert s["status"] == "SUCCEEDED", s["lastError"]
        sql = next(a["sql"] for t, a in reads(s) if t == "query_data")
        assert "FROM viw_sales_order" in sql and "GROUP BY customer_name" in sql and "LIMIT 5" in sql
        assert "按 销售订单（2002）" in answer_of(s) and "前 5 名" in answer_of(s)
        s, calls = ask(erp_server, c, "How many customers do I have?")
        assert calls[0][1]["form_id"] == "1001" and answer_of(s).startswith("From 客户档案 (1001)")
        s, calls = ask(erp_server, c, "做液压气动的供应商有哪些？")
        assert calls[0][1] == {"form_id": "1002", "filters": {"category": "液压气动"}, "page": 1, "page_size": 20}


def test_a_question_it_cannot_place_names_the_word_and_the_users_forms(erp_server: ErpServer) -> None:
    with erp_server.login("sales02") as c:
        s, calls = ask(erp_server, c, "哪些客户的员工请假了")
        assert calls == [] and "员工" in answer_of(s) and "报价单" in answer_of(s)


def test_wh01_a_stock_list_names_each_material_by_code_under_the_forms_labels(erp_server: ErpServer) -> None:
    with erp_server.login("wh01") as c:
        s, calls = ask(erp_server, c, "库存超过500的有哪些")
        answer = answer_of(s)
        assert s["status"] == "SUCCEEDED" and "库存数量 > 500" in answer
        assert calls[0][0] == "query_data" and "qty > 500" in calls[0][1]["sql"]
        head, _, *rows = [line for line in answer.splitlines() if line.startswith("|")]
        assert head == "| 物料编码 | 物料名称 | 仓库 | 数量 | 最近入库 | 最近出库 |"  # never last_in_date
        assert rows and all(float(r.split("|")[4].strip().replace(",", "")) > 500 for r in rows)
        assert all(r.split("|")[1].strip().startswith("M") for r in rows)
