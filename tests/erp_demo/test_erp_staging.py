"""The staging queue (ai_op_queue) and its executor: drafts as the caller, owner-only reads, my
todos, execStaging idempotent on the op id, base_version checks, generate, validate for manual ops."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tests.erp_demo.conftest import Erp
from tether.erp_demo import facts
from tether.erp_demo.schema import ai_op_queue

COLUMNS = {
    "id", "user_id", "brands_id", "subsidiary_id", "op_type", "target_form_id", "target_module_id", "target_table",
    "target_bill_id", "payload", "source_ref", "base_version", "auto_execute", "status", "result_bill_id",
    "result_msg", "error_msg", "session_id", "created_at", "confirmed_at", "executed_at", "expire_at", "revised_by",
    "revised_at",
}  # fmt: skip


def _count(erp: Erp, table: str) -> int:
    with erp.demo.engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one())


def _stage(erp: Erp, user: str = "sales01", **body: Any) -> dict[str, Any]:
    r = erp.post(user, "/ai/staging", body)
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


def _execute(erp: Erp, op_id: str) -> Any:
    """execStaging as tether calls it after its confirm: a manual op is validated (confirmed) first."""
    op = erp.get("sales01", f"/ai/staging/{op_id}").json()["op"]
    if op["status"] == "draft" and not op["auto_execute"]:
        erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "validate"})
    return erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "execute"})


def _create_quote(erp: Erp, **extra: Any) -> dict[str, Any]:
    payload = {
        "customer_id": facts.SALES01_CUSTOMER[0],
        "remark": "AI 报价",
        "details": [{"material_id": "M0004", "qty": 3}],
    }
    return _stage(erp, opType="create", targetFormId="2001", payload=payload, sessionId="sess-1", **extra)


def test_stage_get_todos(erp: Erp) -> None:
    before = _count(erp, "quotation")
    staged = _create_quote(erp)
    op = staged["op"]
    assert set(op) == COLUMNS and staged["status"] == "draft" and staged["sId"] == op["id"]
    assert op["user_id"] == "sales01" and op["brands_id"] == 1 and op["target_table"] == "quotation"
    assert op["target_module_id"] == "sales" and op["payload"]["remark"] == "AI 报价" and op["session_id"] == "sess-1"
    assert op["expire_at"] > op["created_at"] and op["auto_execute"] is False
    assert _count(erp, "quotation") == before  # staged, not executed
    got = erp.get("sales01", f"/ai/staging/{op['id']}").json()
    assert got["op"]["id"] == op["id"] and got["link"] == f"/erp/form/2001?staging={op['id']}"
    for other in ("sales02", "admin", "b2admin"):  # the owner's only
        r = erp.get(other, f"/ai/staging/{op['id']}")
        assert r.status_code == 404 and r.json()["code"] == -1
        assert erp.post(other, f"/ai/execStaging/{op['id']}", {"mode": "execute"}).status_code == 404
    assert erp.get("sales01", "/ai/myTodos").json()["ops"] == []  # a draft waits for its confirm in the chat
    manual = erp.post("sales01", f"/ai/execStaging/{op['id']}", {"mode": "execute"})  # no confirm yet
    assert manual.status_code == 409 and "confirm it in the chat first" in manual.json()["msg"]
    assert (
        _count(erp, "quotation") == before and erp.get("sales01", f"/ai/staging/{op['id']}").json()["status"] == "draft"
    )
    assert erp.post("sales01", f"/ai/execStaging/{op['id']}", {"mode": "validate"}).json()["status"] == "confirmed"
    todos = erp.get("sales01", "/ai/myTodos").json()
    assert [t["id"] for t in todos["ops"]] == [op["id"]] and todos["ops"][0]["link"].endswith(f"staging={op['id']}")
    assert erp.get("sales02", "/ai/myTodos").json()["ops"] == []
    # a client-chosen id makes staging itself idempotent
    first = _create_quote(erp, sId="client-op-0001")
    again = _create_quote(erp, sId="client-op-0001")
    assert first["sId"] == again["sId"] == "client-op-0001"
    assert (
        erp.post(
            "sales02", "/ai/staging", {"opType": "create", "targetFormId": "2001", "sId": "client-op-0001"}
        ).status_code
        == 409
    )


def test_staging_validation(erp: Erp) -> None:
    bad = [
        ({"opType": "truncate", "targetFormId": "2001"}, 422, "op_type"),
        ({"opType": "create", "targetFormId": "9999"}, 404, "no such form"),
        ({"opType": "create", "targetFormId": "5001"}, 422, "read-only"),
        ({"opType": "create", "targetFormId": "2001", "payload": {"no_such": 1}}, 422, "no_such"),
        ({"opType": "create", "targetFormId": "2001", "payload": {"details": [{"qty": "x"}]}}, 422, "details[0].qty"),
        ({"opType": "create", "targetFormId": "2001", "payload": "drop"}, 422, "payload"),
        ({"opType": "update", "targetFormId": "2001", "payload": {}}, 422, "target_bill_id"),
        ({"opType": "update", "targetFormId": "2001", "targetBillId": "nope"}, 404, "no record"),
        ({"opType": "examine", "targetFormId": "1001", "targetBillId": "x"}, 422, "no examine"),
        ({"opType": "generate", "targetFormId": "2002", "sourceRef": {"formId": "2001"}}, 422, "billId"),
        (
            {"opType": "generate", "targetFormId": "2004", "sourceRef": {"formId": "2001", "billId": "x"}},
            422,
            "cannot generate",
        ),
        ({"opType": "create", "targetFormId": "2001", "sId": "x"}, 422, "sId"),
    ]
    for body, status, word in bad:
        r = erp.post("sales01", "/ai/staging", body)
        assert r.status_code == status and word in r.text, (body, r.text)
    # another salesperson's quotation cannot be the target of sales01's op
    other = erp.all_rows("sales02", "2001")[0]["id"]
    assert (
        erp.post(
            "sales01", "/ai/staging", {"opType": "delete", "targetFormId": "2001", "targetBillId": other}
        ).status_code
        == 404
    )
    assert _count(erp, "ai_op_queue") == 0


def test_exec_is_idempotent(erp: Erp) -> None:
    before = _count(erp, "quotation")
    op_id = _create_quote(erp, autoExecute=True)["sId"]
    first = erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "execute"}).json()
    assert first["code"] == 1 and first["status"] == "executed", first
    assert first["resultBillNo"].startswith("QT") and first["link"] == f"/erp/form/2001?bill={first['resultBillId']}"
    assert first["resultMsg"] == f"已新增报价单 {first['resultBillNo']}"
    second = erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "execute"}).json()
    assert {k: v for k, v in second.items()} == first  # the first outcome, nothing executed again
    assert erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "validate"}).json()["status"] == "executed"
    assert _count(erp, "quotation") == before + 1
    bill = erp.get("sales01", f"/getBusinessDataById/2001/{first['resultBillId']}").json()
    assert bill["master"]["created_by"] == "sales01" and [d["qty"] for d in bill["details"]] == [3]
    op = erp.get("sales01", f"/ai/staging/{op_id}").json()["op"]
    assert op["executed_at"] and op["result_bill_id"] == first["resultBillId"] and op["confirmed_at"]
    assert erp.get("sales01", "/ai/myTodos").json()["ops"] == []
    assert [o["id"] for o in erp.get("sales01", "/ai/myTodos?all=1").json()["ops"]] == [op_id]


def test_failed_execution_writes_nothing(erp: Erp) -> None:
    before = {t: _count(erp, t) for t in ("quotation", "quotation_line", "bill_seq")}
    op_id = _stage(erp, opType="create", targetFormId="2001", payload={"remark": "缺客户"})["sId"]  # required missing
    r = _execute(erp, op_id).json()
    assert r["status"] == "failed" and r["code"] == -1 and "customer_id" in r["errorMsg"] and r["link"] is None
    assert {t: _count(erp, t) for t in before} == before
    # a failed op wrote nothing, so executing it again is a retry: it fails again, still writing nothing
    assert _execute(erp, op_id).json()["status"] == "failed"
    assert {t: _count(erp, t) for t in before} == before
    assert erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "run"}).status_code == 422


def test_base_version_mismatch_fails(erp: Erp) -> None:
    qid = facts.REVISION_QUOTATION_ID
    version = erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()["master"]["version"]
    op_id = _stage(
        erp, opType="update", targetFormId="2001", targetBillId=qid, baseVersion=version, payload={"remark": "已下调5%"}
    )["sId"]
    # the record changes after the proposal
    touched = erp.post(
        "sales01",
        "/addUpdateDelBusinessData",
        {"sFormId": "2001", "handleType": "update", "sId": qid, "data": {"remark": "人工改过"}},
    )
    assert touched.status_code == 200
    r = _execute(erp, op_id).json()
    assert r["status"] == "failed" and "the record changed since the proposal; propose again" in r["errorMsg"]
    master = erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()["master"]
    assert master["remark"] == "人工改过" and master["version"] == version + 1
    stale = erp.post(
        "sales01",
        "/ai/staging",
        {"opType": "delete", "targetFormId": "2001", "targetBillId": qid, "baseVersion": version},
    )
    assert stale.status_code == 409  # already stale when proposed
    # validate (manual ops) checks the same
    op2 = _stage(erp, opType="examine", targetFormId="2001", targetBillId=qid)["sId"]
    ok = erp.post("sales01", f"/ai/execStaging/{op2}", {"mode": "validate"}).json()
    assert ok["status"] == "confirmed" and ok["code"] == 1 and ok["link"] == f"/erp/form/2001?staging={op2}"
    assert erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()["master"]["status"] == "draft"  # not executed
    done = erp.post("sales01", f"/ai/execStaging/{op2}", {"mode": "execute"}).json()
    assert done["status"] == "executed" and done["resultMsg"].startswith("已审核报价单")
    assert erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()["master"]["status"] == "examined"


def test_update_and_delete_ops(erp: Erp) -> None:
    made = erp.post(
        "sales01", "/addUpdateDelBusinessData",
        {"sFormId": "2001", "handleType": "add", "data": {"customer_id": "C0001"}, "details": [{"material_id": "M0001", "qty": 5}]},
    ).json()  # fmt: skip
    up = _stage(
        erp,
        opType="update",
        targetFormId="2001",
        targetBillId=made["sId"],
        payload={"remark": "AI 改", "details": [{"material_id": "M0002", "qty": 7, "unit_price": 20}]},
    )
    assert up["op"]["base_version"] == 1  # the current version when not given
    assert _execute(erp, up["sId"]).json()["status"] == "executed"
    bill = erp.get("sales01", f"/getBusinessDataById/2001/{made['sId']}").json()
    assert (
        bill["master"]["remark"] == "AI 改"
        and bill["master"]["total_amount"] == 140
        and bill["details"][0]["material_code"] == "M0002"
    )
    rm = _stage(erp, opType="delete", targetFormId="2001", targetBillId=made["sId"])
    r = _execute(erp, rm["sId"]).json()
    assert r["status"] == "executed" and r["link"] is None and r["resultBillId"] is None
    assert erp.get("sales01", f"/getBusinessDataById/2001/{made['sId']}").status_code == 404


def test_generate_sales_order_from_quotation(erp: Erp) -> None:
    quote = erp.get("sales01", f"/getBusinessDataById/2001/{facts.REVISION_QUOTATION_ID}").json()
    picked = [quote["details"][0]["id"], quote["details"][2]["id"]]
    op = _stage(
        erp, opType="generate", targetFormId="2002", autoExecute=True,
        sourceRef={"formId": "2001", "billId": facts.REVISION_QUOTATION_ID, "lineIds": picked}, payload={"remark": "据报价生成"},
    )  # fmt: skip
    r = erp.post("sales01", f"/ai/execStaging/{op['sId']}", {}).json()  # auto op: execute by default
    assert r["status"] == "executed" and r["resultBillNo"].startswith("SO"), r
    order = erp.get("sales01", f"/getBusinessDataById/2002/{r['resultBillId']}").json()
    assert order["master"]["quotation_id"] == facts.REVISION_QUOTATION_ID and order["master"]["remark"] == "据报价生成"
    assert order["master"]["quotation_bill_no"] == facts.REVISION_QUOTATION_BILL_NO
    assert [d["source_line_id"] for d in order["details"]] == picked
    assert [d["qty"] for d in order["details"]] == [quote["details"][0]["qty"], quote["details"][2]["qty"]]
    assert order["master"]["total_amount"] == round(quote["details"][0]["amount"] + quote["details"][2]["amount"], 2)
    # and on down the chain: delivery from the order
    dn = _stage(erp, opType="generate", targetFormId="2003", sourceRef={"formId": "2002", "billId": r["resultBillId"]})
    out = _execute(erp, dn["sId"]).json()
    assert out["status"] == "executed" and out["resultBillNo"].startswith("DN")
    bad = _stage(
        erp,
        opType="generate",
        targetFormId="2002",
        sourceRef={"formId": "2001", "billId": facts.REVISION_QUOTATION_ID, "lineIds": ["nope"]},
    )
    assert _execute(erp, bad["sId"]).json()["status"] == "failed"


def test_a_generate_is_bound_to_its_upstream_bill_as_proposed(erp: Erp) -> None:
    """The upstream bill changed between the proposal and the confirm: the generate fails and
    writes nothing, as an update of a changed record does (seed §10's 确认前底层数据变化)."""
    qid = facts.REVISION_QUOTATION_ID
    version = erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()["master"]["version"]
    ref = {"formId": "2001", "billId": qid}
    op = _stage(erp, opType="generate", targetFormId="2002", autoExecute=True, sourceRef=ref)
    assert op["op"]["base_version"] == version  # bound to the quotation as it stood
    manual = _stage(erp, opType="generate", targetFormId="2002", sourceRef=ref)
    changed = erp.post(
        "sales01",
        "/addUpdateDelBusinessData",
        {"sFormId": "2001", "handleType": "update", "sId": qid, "data": {"remark": "改了单价之前"}},
    )
    assert changed.status_code == 200
    orders = _count(erp, "sales_order")
    r = erp.post("sales01", f"/ai/execStaging/{op['sId']}", {}).json()
    assert r["status"] == "failed" and "the record changed since the proposal" in r["errorMsg"], r
    checked = erp.post("sales01", f"/ai/execStaging/{manual['sId']}", {"mode": "validate"}).json()
    assert checked["status"] == "failed" and "the record changed since the proposal" in checked["errorMsg"]
    assert _count(erp, "sales_order") == orders
    stale = erp.post(
        "sales01",
        "/ai/staging",
        {"opType": "generate", "targetFormId": "2002", "sourceRef": ref, "baseVersion": version},
    )
    assert stale.status_code == 409  # already stale when proposed


def test_expiry_and_cancel(erp: Erp) -> None:
    before = _count(erp, "quotation")
    op_id = _create_quote(erp)["sId"]
    with erp.demo.engine.begin() as conn:
        conn.execute(ai_op_queue.update().values(expire_at=ai_op_queue.c.created_at))
    r = erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "execute"}).json()
    assert r["status"] == "expired" and "expired" in r["errorMsg"]
    op2 = _create_quote(erp)["sId"]
    assert erp.post("sales01", f"/ai/cancelStaging/{op2}", None).json()["status"] == "cancelled"
    assert erp.post("sales01", f"/ai/execStaging/{op2}", {"mode": "execute"}).json()["status"] == "cancelled"
    assert _count(erp, "quotation") == before


def test_concurrent_exec_and_numbering(erp: Erp) -> None:
    """Two executors racing on one op make one bill; parallel writers get distinct bill numbers."""
    from concurrent.futures import ThreadPoolExecutor

    from tether.erp_demo import staging as executor
    from tether.erp_demo import writes
    from tether.erp_demo.forms import BY_ID

    user = erp.demo.user_of(erp.token("sales01"))
    before = _count(erp, "quotation")
    op_id = _create_quote(erp, autoExecute=True)["sId"]

    def run(_: int) -> tuple[str, str | None]:
        with erp.demo.tx() as conn:
            op = executor.execute(conn, user, op_id, "execute")
            return str(op.status), op.result_bill_id

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    assert {r[0] for r in results} == {"executed"} and len({r[1] for r in results}) == 1
    assert _count(erp, "quotation") == before + 1

    def add(_: int) -> str:
        with erp.demo.tx() as conn:
            done = writes.add(conn, user, BY_ID["2001"], {"customer_id": "C0001"}, [{"material_id": "M0001", "qty": 1}])
            return str(done.bill_no)

    with ThreadPoolExecutor(4) as pool:
        numbers = list(pool.map(add, range(12)))
    assert len(set(numbers)) == 12
