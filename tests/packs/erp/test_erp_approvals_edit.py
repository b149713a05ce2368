"""Approvers' edits from the attacker's side, against a live ``tether serve`` with the demo ERP: where
every rule an op matched says ``approvers_may_edit``, an approver of its brand may replace its
values while it awaits approval — the approvals given so far are void, the op goes back to its
requester as a draft, and only their confirm and a fresh approval execute it, once, with the
edited values. Without the switch an approver's edit is 403; another brand, a user without a grant
the request needs, the requester's peers: 404, as for an unknown op; nothing changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.packs.erp.conftest import ErpServer
from tests.packs.erp.test_erp_approvals import BIG_QUOTE, EVERY_DATABASE, _server, audit_verify, policy_servers
from tests.packs.erp.test_erp_ops import erp_total, propose, wait_op

# two seats: a sales manager's (approve.sales: mgr01) and a quotation form holder's (admin, or
# mgr01 if admin has not taken it) — so one approval (admin's) is given before mgr01 edits
EDITABLE_POLICY = """
rules:
  - name: big-quotation
    forms: ["2001"]
    ops: [create, update]
    when: [{total_above: 50000}]
    approvers:
      - {grant: approve.sales, count: 1}
      - {grant: "2001", count: 1}
    approvers_may_edit: %s
"""
EDITED: dict[str, Any] = {"customer_id": "C0001", "details": [{"material_id": "M0005", "qty": 30, "unit_price": 2600}]}


def _lines(op: dict[str, Any]) -> list[tuple[float, float]]:
    def value(line: dict[str, Any], field: str) -> Any:
        return next(f["after"] for f in line["fields"] if f["field"] == field)

    return [(float(value(x, "qty")), float(value(x, "unit_price"))) for x in op["lines"]]


@pytest.mark.parametrize("kind", EVERY_DATABASE)
def test_an_approvers_edit_voids_the_approvals_and_the_requester_confirms_what_runs(kind: str, tmp_path: Path) -> None:
    with policy_servers(kind, tmp_path, EDITABLE_POLICY % "false") as served:
        (server,) = served.servers
        policy = served.policy
        admin_token = server.token("admin")
        before = erp_total(server, admin_token, "2001")
        with server.login("sales01") as sales, server.login("mgr01") as mgr, server.login("admin") as admin:
            proposed, op_id = propose(server, sales, BIG_QUOTE)
            assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "awaiting_approval"
            first = admin.post(f"/api/approvals/{op_id}/approve").json()
            assert (
                first["approval"]["approvedBy"] == ["admin@erp-1-1"] and first["approval"]["approversMayEdit"] is False
            )

            # the switch off: the approver may approve or reject, not edit — and the list carries no values
            (item,) = [x for x in mgr.get("/api/approvals").json()["items"] if x["opId"] == op_id]
            assert item["approval"]["approversMayEdit"] is False and "values" not in item, item
            r = mgr.patch(f"/api/ops/{op_id}", json={"payload": EDITED})
            assert r.status_code == 403 and "does not let approvers edit" in r.json()["error"], r.text
            assert sales.get(f"/api/ops/{op_id}").json()["state"] == "awaiting_approval"

            policy.write_text(EDITABLE_POLICY % "true")  # reloaded on change: a version that binds nothing
            # brand 2 (holding the quotation form), no grant the request needs: as unknown as a wrong id
            for outsider in ("b2admin", "wh01", "fin02"):
                with server.login(outsider) as c:
                    r = c.patch(f"/api/ops/{op_id}", json={"payload": EDITED})
                    assert r.status_code == 404, (outsider, r.text)
            assert sales.get(f"/api/ops/{op_id}").json()["state"] == "awaiting_approval"

            (item,) = [x for x in mgr.get("/api/approvals").json()["items"] if x["opId"] == op_id]
            assert item["approval"]["approversMayEdit"] is True and item["values"]["details"][0]["qty"] == 40, item
            r = mgr.patch(f"/api/ops/{op_id}", json={"payload": EDITED})
            assert r.status_code == 200, r.text
            edited = r.json()
            assert edited["state"] == "draft" and _lines(edited) == [(30.0, 2600.0)], edited
            # admin's approval was for the old values: void, with why; approving the old request is 409
            given = sales.get(f"/api/approvals/{op_id}").json()["approval"]
            assert [(g["approver"], g["void"]) for g in given["given"]] == [("admin", "the op was edited by mgr01")]
            assert admin.post(f"/api/approvals/{op_id}/approve").status_code == 409
            assert mgr.post(f"/api/approvals/{op_id}/approve").status_code == 409  # the edit is no approval
            assert erp_total(server, admin_token, "2001") == before  # nothing ran on values nobody confirmed

            # back to the requester: they see the edited values (their session's card too), and may edit again
            card = sales.get(f"/api/agent/sessions/{proposed['sessionId']}").json()["pendingInteraction"]["payload"]
            assert card.get("edited") is True and _lines(card) == [(30.0, 2600.0)], card
            assert card["editedBy"] == "mgr01"  # the card says who changed the values
            mine = sales.get(f"/api/ops/{op_id}").json()
            assert mine["state"] == "draft" and _lines(mine) == [(30.0, 2600.0)], mine
            assert mgr.patch(f"/api/ops/{op_id}", json={"payload": EDITED}).status_code == 409  # a draft now
            held = sales.post(f"/api/ops/{op_id}/confirm").json()
            assert held["state"] == "awaiting_approval" and held["approval"]["approvedBy"] == [], held
            assert mgr.post(f"/api/approvals/{op_id}/approve").status_code == 200
            assert admin.post(f"/api/approvals/{op_id}/approve").status_code == 200
            done = wait_op(sales, op_id, {"done", "failed"})
            assert done["state"] == "done" and done["attempts"] == 1, done
            with server.erp_direct(admin_token) as erp:
                bill = erp.get(f"/getBusinessDataById/2001/{done['billId']}").json()
            assert [(float(x["qty"]), float(x["unit_price"])) for x in bill["details"]] == [(30.0, 2600.0)]
            assert bill["master"]["created_by"] == "sales01"  # in the requester's name
        assert erp_total(server, admin_token, "2001") == before + 1
        served.finish()
        rows = served.audit_rows(op_id)
        actions = [str(r["tool_id"]) for r in rows]
        assert actions == [
            "op.propose",
            "op.approval_request",
            "op.approve",
            "op.approval_void",
            "op.edit",
            "op.approval_request",
            "op.approve",
            "op.approve",
            "op.confirm",
            "op.execute",
        ], actions
        import json

        void, edit = (json.loads(rows[i]["args"]) for i in (3, 4))
        assert void["editor"] == "mgr01" and void["voided"] == 1 and void["reason"] == "the op was edited by mgr01"
        assert edit["editor"] == "mgr01" and edit["payload"]["details"][0]["qty"] == 30
        audit_verify(served.url)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    s = _server(tmp_path_factory.mktemp("erp-approvals-edit")).start(timeout=120)
    try:
        yield s
    finally:
        s.stop()


def test_under_the_demo_policy_only_a_sales_manager_edits_a_quotation_and_no_one_a_delete(server: ErpServer) -> None:
    """The demo policy lets approvers edit the quotation rule's ops: mgr01 may (the list carries
    the values; a value that does not fit is 422 and the op still waits); the requester's
    peer (same forms, no approval grant), finance and brand 2 get 404. A delete's rule does not
    let approvers edit: mgr01's PATCH is 403 and the op still waits for approval."""
    from tests.packs.erp.test_erp_ops import draft_quotation

    with server.login("sales01") as sales, server.login("mgr01") as mgr:
        proposal, op_id = propose(server, sales, BIG_QUOTE)
        assert mgr.patch(f"/api/ops/{op_id}", json={"payload": EDITED}).status_code == 404  # a draft: not theirs
        held = sales.post(f"/api/ops/{op_id}/confirm").json()
        assert held["approval"]["approversMayEdit"] is True, held
        # the approvers' list carries the proposed values, as staged, where they may edit them
        items = {x["opId"]: x for x in mgr.get("/api/approvals").json()["items"]}
        staged = sales.get(f"/api/agent/sessions/{proposal['sessionId']}").json()["pendingInteraction"]["payload"]
        assert items[op_id]["values"] == staged["values"] and items[op_id]["values"]["details"][0]["qty"] == 40
        for outsider in ("sales02", "fin02", "b2admin"):
            with server.login(outsider) as c:
                assert c.patch(f"/api/ops/{op_id}", json={"payload": EDITED}).status_code == 404, outsider
        assert sales.get(f"/api/ops/{op_id}").json()["state"] == "awaiting_approval"
        # a value that does not fit the form: 422 beside its field, and the op still awaits approval
        bad = {**EDITED, "details": [{**EDITED["details"][0], "qty": -3}]}
        r = mgr.patch(f"/api/ops/{op_id}", json={"payload": bad})
        assert r.status_code == 422 and [(p["field"], p["code"]) for p in r.json()["problems"]] == [
            ("details.0.qty", "min")
        ], r.text
        assert sales.get(f"/api/ops/{op_id}").json()["state"] == "awaiting_approval"
        assert op_id in {x["opId"] for x in mgr.get("/api/approvals").json()["items"]}
        r = mgr.patch(f"/api/ops/{op_id}", json={"payload": EDITED})
        assert r.status_code == 200 and r.json()["state"] == "draft", r.text

        bill = draft_quotation(server, server.token("sales01"))
        _, delete = propose(server, sales, f"删除报价单{bill['sBillNo']}")
        assert sales.post(f"/api/ops/{delete}/confirm").json()["approval"]["rules"] == ["delete-bill"]
        (listed,) = [x for x in mgr.get("/api/approvals").json()["items"] if x["opId"] == delete]
        assert listed["approval"]["approversMayEdit"] is False and "values" not in listed, listed
        with server.login("b2admin") as c:  # another brand's approvals: neither the op nor its values
            assert delete not in {x["opId"] for x in c.get("/api/approvals").json().get("items", [])}
        r = mgr.patch(f"/api/ops/{delete}", json={"payload": {"remark": "x"}})
        assert r.status_code == 403 and "delete-bill" in r.json()["error"], r.text
        assert sales.get(f"/api/ops/{delete}").json()["state"] == "awaiting_approval"
    server.assert_no_server_errors()


def test_values_that_do_not_fit_leave_an_op_awaiting_approval_as_it_was(server: ErpServer) -> None:
    """An edit the form refuses is a 422 that changes nothing — from the approver and from the
    requester alike: the op still awaits approval, nothing is voided, and an approval then
    executes it with the values as proposed (the check runs before the op goes back to draft)."""
    bad = {"customer_id": "C0001", "details": [{"material_id": "M0005", "qty": "abc", "unit_price": 2600}]}
    with server.login("sales01") as sales, server.login("mgr01") as mgr:
        _, op_id = propose(server, sales, BIG_QUOTE)
        assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "awaiting_approval"
        proposed = _lines(sales.get(f"/api/ops/{op_id}").json())
        for editor in (mgr, sales):
            r = editor.patch(f"/api/ops/{op_id}", json={"payload": bad})
            assert r.status_code == 422 and "qty" in r.text, r.text
            op = sales.get(f"/api/ops/{op_id}").json()
            assert op["state"] == "awaiting_approval" and _lines(op) == proposed, op
        approval = sales.get(f"/api/approvals/{op_id}").json()["approval"]
        assert approval["status"] == "pending" and not any(g.get("void") for g in approval["given"]), approval
        assert mgr.post(f"/api/approvals/{op_id}/approve").status_code == 200
        done = wait_op(sales, op_id, {"done", "failed"})
        assert done["state"] == "done" and done["attempts"] == 1 and _lines(done) == proposed, done
    server.assert_no_server_errors()


def test_an_updates_edit_sends_the_whole_bill_and_a_line_left_out_is_deleted(server: ErpServer) -> None:
    """An update's staged values are the whole bill (every line, ``detailIndex`` on each changed
    line of the diff saying where it is): sent back with a line's quantity retyped, the diff is
    that change alone; sent back without a line, that line is deleted — never brought back."""
    from tests.packs.erp.test_erp_ops import draft_quotation

    bill = draft_quotation(server, server.token("sales01"))  # M0001 × 5, M0002 × 3
    with server.login("sales01") as sales:
        s, op_id = propose(server, sales, f"把报价单{bill['sBillNo']}的第2行的数量改成4")
        proposal = s["pendingInteraction"]["payload"]
        whole = proposal["values"]["details"]
        assert [x["qty"] for x in whole] == [5, 4], whole
        assert [(x["lineNo"], x["change"], x["detailIndex"]) for x in proposal["lines"]] == [(2, "update", 1)]

        retyped = {**proposal["values"], "details": [whole[0], {**whole[1], "qty": 6}]}
        op = sales.patch(f"/api/ops/{op_id}", json={"payload": retyped}).json()
        assert [(x["lineNo"], x["change"], x["detailIndex"]) for x in op["lines"]] == [(2, "update", 1)], op
        assert [(f["field"], f["before"], f["after"]) for f in op["lines"][0]["fields"]] == [("qty", 3, 6)]

        r = sales.patch(f"/api/ops/{op_id}", json={"payload": {**proposal["values"], "details": [whole[1]]}})
        assert r.status_code == 200, r.text
        assert [(x["lineNo"], x["change"]) for x in r.json()["lines"]] == [(2, "update"), (1, "delete")], r.text
        pending = sales.get(f"/api/agent/sessions/{s['sessionId']}").json()["pendingInteraction"]["payload"]
        assert [x["qty"] for x in pending["values"]["details"]] == [4]  # what the ERP's update would write
    server.assert_no_server_errors()
