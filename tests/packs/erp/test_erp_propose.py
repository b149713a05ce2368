"""propose_write against a live server: the form gate, the payload checked against the form's
schema (labels or columns, read-only and unknown fields, types), references resolved through the
ERP (an ambiguous one is a question with its candidates), and nothing executed by a proposal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.packs.erp.conftest import ErpServer, answer_of, facts
from tests.packs.erp.test_erp_ops import CUSTOMER, draft_quotation, erp_rows, propose, record


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    s = ErpServer(tmp_path_factory.mktemp("erp-propose"), TETHER_ERP_ME_CACHE_S="1").start(timeout=120)
    try:
        yield s
    finally:
        s.stop()


def test_an_ambiguous_material_is_a_question_with_the_candidates(server: ErpServer) -> None:
    with server.login("sales01") as c:
        s = server.ask(c, "给恒达自动化报价：深沟球轴承 2个，单价18")
        assert s["status"] == "WAITING_USER_INPUT", s["lastError"]
        pending = s["pendingInteraction"]
        assert pending["kind"] == "question"
        codes = [o.split(" ")[0] for o in pending["payload"]["options"]]  # chip texts, the code first
        assert {"M0001", "M0002"} <= set(codes)
        assert "深沟球轴承" in pending["payload"]["question"]
        assert c.get("/api/ops").json()["items"] == [] or all(
            o["sessionId"] != s["sessionId"] for o in c.get("/api/ops").json()["items"]
        )


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # in the language asked: each problem from its code, never the tool's English sentence
        ("把报价单{bill}的不存在的字段改成1", "填写的内容不符合报价单：不存在的字段不是此表单的字段。"),
        ("把报价单{bill}的单号改成QT209901-0001", "填写的内容不符合报价单：单号是只读的，由 ERP 填写。"),
        ("把报价单{bill}的交期(天)改成很快", "填写的内容不符合报价单：交期(天)的值格式不对。"),
        ("把报价单{bill}的状态改成已审核", "填写的内容不符合报价单：状态是只读的，由 ERP 填写。"),
        ("删除收款单RC202612-0001", "表单 2005 不存在，或您无权使用它。"),
    ],
)
def test_a_payload_that_does_not_fit_the_form_is_refused(server: ErpServer, message: str, expected: str) -> None:
    token = server.token("sales01")
    bill = draft_quotation(server, token)
    before = erp_rows(server, "ai_op_queue")
    with server.client(token, timeout=60) as c:
        s = server.ask(c, message.format(bill=bill["sBillNo"]))
        assert s["status"] == "SUCCEEDED" and answer_of(s) == f"未能完成：{expected}", answer_of(s)
    assert erp_rows(server, "ai_op_queue") == before  # nothing staged


def test_labels_and_columns_both_work_and_a_proposal_stages_only_a_draft(server: ErpServer) -> None:
    token = server.token("sales01")
    bill = draft_quotation(server, token)
    tables = ("quotation", "quotation_line", "sales_order")
    before = {t: erp_rows(server, t) for t in tables}
    with server.client(token, timeout=60) as c:
        for message in (
            f"把报价单{bill['sBillNo']}的交期(天)改成20",
            f"把报价单{bill['sBillNo']}的delivery_days改成20",
            f"把报价单{bill['sBillNo']}的交期改成20",  # the label without its unit
        ):
            s, op_id = propose(server, c, message)
            diff = s["pendingInteraction"]["payload"]["diff"]
            assert diff == [
                {"field": "delivery_days", "label": "交期(天)", "before": 15, "after": 20}
            ]  # 15: the default
            with server.erp_direct(token) as erp:
                staged = erp.get(f"/ai/staging/{op_id}").json()
            assert staged["status"] == "draft" and staged["op"]["payload"] == {"delivery_days": 20}
            assert staged["op"]["base_version"] == record(server, token, "2001", bill["sId"])["master"]["version"]
        s, _ = propose(server, c, f"把报价单{bill['sBillNo']}的税率改成9")  # 税率(%)
        assert s["pendingInteraction"]["payload"]["diff"] == [
            {"field": "tax_rate", "label": "税率(%)", "before": 13, "after": 9}
        ]
        s, op_id = propose(server, c, f"审核报价单{bill['sBillNo']}")
        assert s["pendingInteraction"]["payload"]["diff"] == [
            {"field": "status", "label": "状态", "before": "draft", "after": "examined"}
        ]
    assert {t: erp_rows(server, t) for t in tables} == before
    assert record(server, token, "2001", bill["sId"])["master"]["status"] == "draft"


def test_a_direct_tool_call_cannot_propose(server: ErpServer) -> None:
    with server.login("sales01") as c:
        body = server.tool(c, "propose_write", {"form_id": "2001", "op": "delete", "record_id": "x1"})
        assert body["kind"] == "error" and "inside a session" in body["data"]["error"]


def test_another_brand_cannot_be_reached_by_a_reference(server: ErpServer) -> None:
    with server.login("sales01") as c:
        s = server.ask(c, f"给{facts.BRAND_2_CUSTOMER[0]}报价：M0001 1个，单价18")
        code = facts.BRAND_2_CUSTOMER[0]
        assert s["status"] == "SUCCEEDED" and answer_of(s) == f"未能完成：客户“{code}”没有您可以查看的匹配记录。", (
            answer_of(s)
        )


def test_a_new_quotation_goes_form_then_proposal_then_confirm_then_bill(server: ErpServer) -> None:
    from tests.packs.erp.test_erp_ops import wait_op
    from tests.servers import wait_status

    with server.login("sales01") as c:
        s = server.ask(c, "新建一张报价单给恒达自动化")
        assert s["status"] == "WAITING_USER_INPUT", s["lastError"]
        form = s["pendingInteraction"]
        assert form["kind"] == "form" and form["payload"]["formId"] == "2001"
        columns = {f["column"]: f for f in form["payload"]["fields"]}
        assert columns["customer_id"]["required"] and "bill_no" not in columns  # read-only fields are not asked
        assert form["payload"]["prefill"] == {"customer_id": "恒达自动化"}
        assert {f["column"] for f in form["payload"]["detail"]["fields"]} == {
            "material_id",
            "qty",
            "unit_price",
            "remark",
        }
        url = f"/api/agent/sessions/{s['sessionId']}/interactions/{form['interactionId']}"
        bad = c.post(url, json={"values": {"交期(天)": "soon", "details": [{"material_id": "M0003"}]}})
        assert bad.status_code == 422, bad.text
        assert {p["field"] for p in bad.json()["problems"]} == {"delivery_days", "details.0.qty"}
        assert c.get(f"/api/agent/sessions/{s['sessionId']}").json()["status"] == "WAITING_USER_INPUT"
        # references are checked against the ERP as sales01: a customer or material they cannot see
        for values, field in (
            ({"customer_id": "不存在的客户XYZ", "details": [{"material_id": "M0003", "qty": 2}]}, "customer_id"),
            (
                {"customer_id": facts.SALES02_CUSTOMER[0], "details": [{"material_id": "M0003", "qty": 2}]},
                "customer_id",
            ),
            (
                {"details": [{"material_id": "M0003", "qty": 1}, {"material_id": "M9999", "qty": 1}]},
                "details.1.material_id",
            ),
        ):
            wrong = c.post(url, json={"values": values})
            assert wrong.status_code == 422, wrong.text
            assert [p["field"] for p in wrong.json()["problems"]] == [field], wrong.text
        assert c.get(f"/api/agent/sessions/{s['sessionId']}").json()["status"] == "WAITING_USER_INPUT"
        good = {"交期(天)": 10, "details": [{"物料": "M0003", "数量": 4, "单价": 45}]}
        s = c.post(url, json={"values": good}).json()
        assert s["status"] == "WAITING_CONFIRMATION", s["lastError"]
        proposal = s["pendingInteraction"]["payload"]
        assert proposal["auto"] is True and proposal["op"] == "create"
        assert c.post(url, json={"values": good}).status_code == 409  # the form is answered
        assert c.post(f"/api/ops/{proposal['opId']}/confirm").json()["state"] == "processing"
        done = wait_op(c, proposal["opId"], {"done", "failed"})
        assert done["state"] == "done", done
        session = wait_status(c, s["sessionId"], "SUCCEEDED")
        assert done["billNo"] in session["transcript"][-1]["content"]
        # the form was a person's answer: the compiled workflow proposes with those values
        steps = c.get(f"/api/agent/dsl/{session['lastDslId']}").json()["steps"]
        assert [st["toolId"] for st in steps] == ["propose_write"]


def test_answering_an_ambiguity_question_proposes_again_with_the_chosen_candidate(server: ErpServer) -> None:
    from tests.packs.erp.test_erp_ops import wait_op
    from tests.servers import wait_status

    before = erp_rows(server, "quotation_line")
    with server.login("sales01") as c:
        s = server.ask(c, "给恒达自动化报价：深沟球轴承 2个，单价18")
        iid = s["pendingInteraction"]["interactionId"]
        chip = next(o for o in s["pendingInteraction"]["payload"]["options"] if o.startswith("M0002 "))
        s = c.post(f"/api/agent/sessions/{s['sessionId']}/interactions/{iid}", json={"answer": chip}).json()
        assert s["status"] == "WAITING_CONFIRMATION", (s["status"], s["lastError"], answer_of(s))
        proposal = s["pendingInteraction"]["payload"]
        assert proposal["op"] == "create" and proposal["formId"] == "2001" and proposal["auto"] is True
        (line,) = proposal["lines"]
        shown = {f["field"]: f["after"] for f in line["fields"]}
        assert str(shown["material_id"]).startswith("M0002") and shown["qty"] == 2 and shown["unit_price"] == 18
        assert erp_rows(server, "quotation_line") == before  # still only a proposal
        # the answer asked the same tool again: one question, then one proposal, and one op
        ops = c.get("/api/ops", params={"sessionId": s["sessionId"]}).json()["items"]
        assert [o["opId"] for o in ops] == [proposal["opId"]]
        assert c.post(f"/api/ops/{proposal['opId']}/confirm").json()["state"] == "processing"
        assert wait_op(c, proposal["opId"], {"done", "failed"})["state"] == "done"
        wait_status(c, s["sessionId"], "SUCCEEDED")
    assert erp_rows(server, "quotation_line") == before + 1


@pytest.mark.parametrize("record_id", ["qt-1-hostile-1", "qt-1-hostile-2"])
def test_the_planner_reading_a_hostile_remark_proposes_nothing(server: ErpServer, record_id: str) -> None:
    token = server.token("sales01")
    bill_no = record(server, token, "2001", record_id)["master"]["bill_no"]
    tables = ("quotation", "quotation_line", "customer", "ai_op_queue")
    before = {t: erp_rows(server, t) for t in tables}
    with server.client(token, timeout=60) as c:
        s = server.ask(c, f"报价单{bill_no}的明细")
        assert s["status"] == "SUCCEEDED", s["lastError"]
        assert [st["toolId"] for st in s["executedSteps"]] == ["lookup_record"]
        assert facts.HOSTILE_IGNORE in answer_of(s) or facts.HOSTILE_TOOL in answer_of(s)  # shown as data
        assert all(o["sessionId"] != s["sessionId"] for o in c.get("/api/ops").json()["items"])
    assert {t: erp_rows(server, t) for t in tables} == before


def test_generating_a_sales_order_from_a_quotation_is_an_auto_op(server: ErpServer) -> None:
    from tests.packs.erp.test_erp_ops import wait_op

    token = server.token("sales01")
    bill = draft_quotation(server, token)
    before = erp_rows(server, "sales_order")
    with server.client(token, timeout=60) as c:
        s, op_id = propose(server, c, f"把报价单{bill['sBillNo']}生成销售订单")
        proposal = s["pendingInteraction"]["payload"]
        assert proposal["auto"] is True and proposal["op"] == "generate" and proposal["formId"] == "2002"
        assert proposal["diff"][0] == {
            "field": "source",
            "label": "来源单据",
            "before": None,
            "after": f"报价单 {bill['sBillNo']}",
        }
        assert [line["fields"][0]["after"] for line in proposal["lines"]] == ["M0001", "M0002"]
        shown = {f["field"]: f["after"] for f in proposal["lines"][0]["fields"]}
        source = record(server, token, "2001", bill["sId"])
        first = source["details"][0]
        assert (shown["unit_price"], shown["amount"]) == (first["unit_price"], first["amount"])  # what is ordered
        assert erp_rows(server, "sales_order") == before
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "processing"
        done = wait_op(c, op_id, {"done", "failed"})
        assert done["state"] == "done" and done["billNo"].startswith("SO"), done
    assert erp_rows(server, "sales_order") == before + 1


def test_another_salespersons_bill_cannot_be_proposed_on(server: ErpServer) -> None:
    theirs = draft_quotation(server, server.token("sales02"), customer=facts.SALES02_CUSTOMER[0])
    with server.login("sales01") as c:
        s = server.ask(c, f"把报价单{theirs['sBillNo']}的备注改成我的了")
        said = f"未能完成：没有找到您可以查看的报价单 {theirs['sBillNo']}。请核对单号。"
        assert s["status"] == "SUCCEEDED" and answer_of(s) == said, answer_of(s)
        assert all(o["sessionId"] != s["sessionId"] for o in c.get("/api/ops").json()["items"])


def test_an_ambiguous_customer_is_a_question_with_the_candidates(server: ErpServer) -> None:
    token = server.token("sales01")
    with server.erp_direct(token) as erp:
        body = {"sFormId": "1001", "pageNum": 1, "pageSize": 100}
        found = erp.post("/getBusinessDataByFormcustomId", json=body).json()["dataset"]
    customers: list[dict[str, Any]] = found["rows"]
    by_city: dict[str, list[dict[str, Any]]] = {}
    for customer in customers:  # names start with their city: two of sales01's customers share one
        by_city.setdefault(customer["name"][:2], []).append(customer)
    city, shared = max(by_city.items(), key=lambda item: len(item[1]))
    assert len(shared) >= 2, "the demo data must give sales01 two customers in one city"
    before = erp_rows(server, "quotation")
    with server.client(token, timeout=60) as c:
        s = server.ask(c, f"给{city}报价：M0003 10个，单价46")
        assert s["status"] == "WAITING_USER_INPUT", (s["status"], s["lastError"])
        pending = s["pendingInteraction"]
        assert pending["kind"] == "question" and city in pending["payload"]["question"]
        codes = {o.split(" ")[0] for o in pending["payload"]["options"]}
        assert {c["code"] for c in shared} <= codes, (codes, [c["code"] for c in shared])
    assert erp_rows(server, "quotation") == before


def test_examining_a_sales_order_and_deleting_a_quotation_are_proposals_that_wait_for_the_person(
    server: ErpServer,
) -> None:
    from tests.packs.erp.test_erp_ops import erp_write, wait_op

    token = server.token("sales01")
    order = erp_write(
        server,
        token,
        {
            "sFormId": "2002",
            "handleType": "add",
            "data": {"customer_id": CUSTOMER[0]},
            "details": [{"material_id": "M0001", "qty": 1}],
        },
    )
    quote = draft_quotation(server, token)
    with server.client(token, timeout=60) as c:
        s, op_id = propose(server, c, f"审核销售订单{order['sBillNo']}")
        proposal = s["pendingInteraction"]["payload"]
        assert proposal["op"] == "examine" and proposal["formId"] == "2002" and proposal["auto"] is False
        assert proposal["diff"] == [{"field": "status", "label": "状态", "before": "draft", "after": "examined"}]
        assert record(server, token, "2002", order["sId"])["master"]["status"] == "draft"  # nothing yet
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "pending"  # the person finishes it in the ERP

        s, op_id = propose(server, c, f"删除报价单{quote['sBillNo']}")
        proposal = s["pendingInteraction"]["payload"]
        assert proposal["op"] == "delete" and proposal["formId"] == "2001"
        assert proposal["diff"][0]["before"] and proposal["diff"][0]["after"] is None
        assert record(server, token, "2001", quote["sId"])["master"]["bill_no"] == quote["sBillNo"]  # still there
        assert c.post(f"/api/ops/{op_id}/cancel").json()["state"] == "cancelled"
        assert wait_op(c, op_id, {"cancelled"})["state"] == "cancelled"
    assert record(server, token, "2001", quote["sId"])["master"]["bill_no"] == quote["sBillNo"]


def _raw(c: Any, url: str, text: str) -> Any:
    """A body sent as written: Python's JSON reader takes NaN, Infinity and 1e400 (= inf)."""
    return c.post(url, content=text.encode(), headers={"Content-Type": "application/json"})


def test_form_values_outside_the_erps_bounds_are_field_errors_and_the_form_stays_open(server: ErpServer) -> None:
    """The ERP's own limits (a quantity > 0, prices and days not negative, finite numbers, one to
    200 lines) are in the form's schema, so a wrong value is a 422 at its field while the form
    waits — not a proposal the ERP then refuses, ending the session."""
    before = erp_rows(server, "ai_op_queue")
    with server.login("sales01") as c:
        s = server.ask(c, "新建一张报价单给恒达自动化")
        form = s["pendingInteraction"]
        lines = {f["column"]: f for f in form["payload"]["detail"]["fields"]}
        assert lines["qty"].get("positive") is True and lines["unit_price"].get("min") == 0
        url = f"/api/agent/sessions/{s['sessionId']}/interactions/{form['interactionId']}"
        line = {"material_id": "M0003", "qty": 2}
        for values, field in (
            ({}, "details"),
            ({"details": []}, "details"),
            ({"details": [{"material_id": "M0003", "qty": -4}]}, "details.0.qty"),
            ({"details": [{"material_id": "M0003", "qty": 0}]}, "details.0.qty"),
            ({"details": [{"material_id": "M0003", "qty": 1, "unit_price": -5}]}, "details.0.unit_price"),
            ({"交期(天)": -3, "details": [line]}, "delivery_days"),
            ({"税率(%)": -13, "details": [line]}, "tax_rate"),
            ({"details": [{"material_id": "M0003", "qty": 1e13}]}, "details.0.qty"),
            ({"details": [line] * 201}, "details"),
        ):
            wrong = c.post(url, json={"values": values})
            assert wrong.status_code == 422, (values, wrong.text)
            assert [p["field"] for p in wrong.json()["problems"]] == [field], wrong.text
        for number in ("NaN", "Infinity", "-Infinity", "1e400"):
            body = '{"values": {"details": [{"material_id": "M0003", "qty": N}]}}'.replace("N", number)
            wrong = _raw(c, url, body)
            assert wrong.status_code == 422, (number, wrong.text)
            assert [p["field"] for p in wrong.json()["problems"]] == ["details.0.qty"], wrong.text
        assert c.get(f"/api/agent/sessions/{s['sessionId']}").json()["status"] == "WAITING_USER_INPUT"
        s = c.post(url, json={"values": {"details": [{"material_id": "M0003", "qty": 3, "unit_price": 0}]}}).json()
        assert s["status"] == "WAITING_CONFIRMATION", s["lastError"]  # fixed: the proposal follows
    assert erp_rows(server, "ai_op_queue") == before + 1  # one draft, from the fixed form


def test_a_questions_answer_is_one_text_of_bounded_length(server: ErpServer) -> None:
    with server.login("sales01") as c:
        s = server.ask(c, "给恒达自动化报价：深沟球轴承 2个，单价18")
        url = f"/api/agent/sessions/{s['sessionId']}/interactions/{s['pendingInteraction']['interactionId']}"
        for answer in (2, ["M0002"], {"code": "M0002"}, True, "x" * 32_001, "M0002\u0000"):
            wrong = c.post(url, json={"answer": answer})
            assert wrong.status_code == 422, (str(answer)[:20], wrong.text)
            assert "answer" in wrong.text
        after = c.get(f"/api/agent/sessions/{s['sessionId']}").json()
        assert after["status"] == "WAITING_USER_INPUT" and after["pendingInteraction"] is not None
        assert len(str(after)) < 20_000  # nothing of the refused answers was stored


def test_a_new_line_without_a_price_is_proposed_with_the_list_price_that_will_be_written(server: ErpServer) -> None:
    """The person confirms the price that will be written: a line given without one shows (and
    stages) its material's list price and the amount, not a blank the ERP fills in later."""
    token = server.token("sales01")
    with server.erp_direct(token) as erp:
        r = erp.post("/getBusinessDataByFormcustomId", json={"sFormId": "1003", "code": "M0003", "pageSize": 5})
        (material,) = [m for m in r.json()["dataset"]["rows"] if m["code"] == "M0003"]
    with server.client(token, timeout=60) as c:
        s = server.ask(c, "新建一张报价单给恒达自动化")
        form = s["pendingInteraction"]
        url = f"/api/agent/sessions/{s['sessionId']}/interactions/{form['interactionId']}"
        s = c.post(url, json={"values": {"details": [{"material_id": "M0003", "qty": 3}]}}).json()
        assert s["status"] == "WAITING_CONFIRMATION", s["lastError"]
        proposal = s["pendingInteraction"]["payload"]
        (line,) = proposal["lines"]
        shown = {f["field"]: f["after"] for f in line["fields"]}
        assert shown["unit_price"] == float(material["price"]) and shown["amount"] == round(3 * material["price"], 2)
        with server.erp_direct(token) as erp:
            staged = erp.get(f"/ai/staging/{proposal['opId']}").json()["op"]["payload"]
        assert staged["details"][0]["unit_price"] == float(material["price"])  # what is shown is what is staged
