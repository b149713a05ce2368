"""What runs is what was approved — from the attacker's side, against a live ``tether serve`` with
the demo ERP and the demo approval policy, ordinary user tokens, real HTTP (issue 36):

1. the requester rewrites their confirmed op in the ERP (``reviseStaging``) while it awaits approval;
2. the requester rewrites a draft no rule holds before confirming it;
3. an approver rewrites the requester's draft in the ERP;
4. (``test_erp_login_binding.py``) the ERP's own login has no throttle.

Each attack is refused (403), and the bill read back from the ERP holds what was approved. Behind
that door, a rewrite by someone holding the agent key (an insider, a tampered database) is caught
by the binding: the ERP refuses a fingerprint that is not its staged row's, tether's re-read voids
the op, and nothing runs — also with twenty rewrites racing the approval. ``tether audit verify``
fails when an executed op's fingerprint is not its approved one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.packs.erp.conftest import ErpServer, facts, wait_status
from tests.packs.erp.test_erp_ops import audit_rows, propose, record, wait_op
from tether.ops.approvals.source import DEMO_POLICY

CUSTOMER = facts.SALES01_CUSTOMER[1][4:10]
BIG_QUOTE = f"给{CUSTOMER}报价：M0003 2000个，单价46"  # 92,000 元: waits for a sales manager
PLAIN_QUOTE = f"给{CUSTOMER}报价：M0003 10个，单价46"  # 460 元: no rule holds it
REWRITE = {
    "customer_id": facts.SALES01_CUSTOMER[0],
    "details": [{"material_id": "M0003", "qty": 90000, "unit_price": 1}],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    s = ErpServer(
        tmp_path_factory.mktemp("erp-binding"), TETHER_ERP_ME_CACHE_S="1", TETHER_APPROVAL_POLICIES=str(DEMO_POLICY)
    ).start(timeout=120)
    try:
        yield s
    finally:
        s.stop()


def token_of(c: httpx.Client) -> str:
    return str(c.headers["Authorization"].split(" ", 1)[1])


def staged(server: ErpServer, token: str, op_id: str) -> dict[str, Any]:
    with server.erp_direct(token) as erp:
        r = erp.get(f"/ai/staging/{op_id}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body


def rewrite(server: ErpServer, token: str, op_id: str, agent: bool = False) -> httpx.Response:
    with server.erp_direct(token, agent=agent) as erp:
        return erp.post(f"/ai/reviseStaging/{op_id}", json={"payload": REWRITE})


def bill_of(server: ErpServer, token: str, op: dict[str, Any]) -> tuple[float, list[tuple[float, float]]]:
    """(total, [(qty, unit price)]) of the op's bill, read back from the ERP."""
    found = record(server, token, "2001", str(op["billId"]))
    lines = [(float(d["qty"]), float(d["unit_price"])) for d in found["details"]]
    return float(found["master"]["total_amount"]), lines


def test_attack_1_the_requester_rewrites_an_op_awaiting_approval_in_the_erp(server: ErpServer) -> None:
    with server.login("sales01") as sales, server.login("mgr01") as mgr:
        _, op_id = propose(server, sales, BIG_QUOTE)
        assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "awaiting_approval"
        r = rewrite(server, token_of(sales), op_id)
        assert r.status_code == 403 and "X-Agent-Key" in r.json()["msg"], r.text
        assert staged(server, token_of(sales), op_id)["op"]["payload"]["details"][0]["qty"] == 2000
        shown = next(i for i in mgr.get("/api/approvals").json()["items"] if i["opId"] == op_id)
        assert "2000" in json.dumps(shown["lines"][0], ensure_ascii=False), shown["lines"]
        assert mgr.post(f"/api/approvals/{op_id}/approve").status_code == 200
        done = wait_op(sales, op_id, {"done", "failed", "draft"})
        assert done["state"] == "done", done
        assert bill_of(server, token_of(sales), done) == (92000.0, [(2000.0, 46.0)])
    server.assert_no_server_errors()


def test_attack_2_the_requester_rewrites_a_plain_draft_before_confirming(server: ErpServer) -> None:
    with server.login("sales01") as sales:
        _, op_id = propose(server, sales, PLAIN_QUOTE)
        r = rewrite(server, token_of(sales), op_id)
        assert r.status_code == 403, r.text
        assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "processing"
        done = wait_op(sales, op_id, {"done", "failed", "draft"})
        assert done["state"] == "done", done
        assert bill_of(server, token_of(sales), done) == (460.0, [(10.0, 46.0)])


def test_attack_3_an_approver_rewrites_the_requesters_draft_in_the_erp(server: ErpServer) -> None:
    with server.login("sales01") as sales, server.login("mgr01") as mgr:
        _, op_id = propose(server, sales, PLAIN_QUOTE)
        r = rewrite(server, token_of(mgr), op_id)
        assert r.status_code == 403, r.text
        assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "processing"
        done = wait_op(sales, op_id, {"done", "failed", "draft"})
        assert bill_of(server, token_of(sales), done) == (460.0, [(10.0, 46.0)])
        assert staged(server, token_of(sales), op_id)["revisedBy"] is None


def test_a_rewrite_behind_the_door_voids_the_op_and_nothing_runs(server: ErpServer) -> None:
    """Someone holding the agent key rewrites the staged op after the confirm: tether's re-read
    finds another fingerprint and voids the op (approvals void, back to the requester as a draft,
    an audit row); the ERP itself refuses an execStaging whose fingerprint is not its row's."""
    with server.login("sales01") as sales, server.login("mgr01") as mgr:
        token = token_of(sales)
        _, op_id = propose(server, sales, BIG_QUOTE)
        assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "awaiting_approval"
        assert rewrite(server, token, op_id, agent=True).status_code == 200  # the insider's rewrite
        assert mgr.post(f"/api/approvals/{op_id}/approve").status_code == 200
        op = wait_op(sales, op_id, {"done", "failed", "draft"})
        assert op["state"] == "draft" and "differs from what was confirmed and approved" in op["error"], op
        assert staged(server, token, op_id)["status"] == "draft"  # not executed in the ERP
        given = mgr.get(f"/api/approvals/{op_id}").json()["approval"]
        assert given["status"] == "void" and all(g["void"] for g in given["given"]), given
        actions = [r["tool_id"] for r in audit_rows(server, op_id)]
        assert actions[-1] == "op.binding_void" and "op.execute" not in actions, actions
        # the ERP's own comparison: a fingerprint that is not the staged row's is refused, nothing written
        with server.erp_direct(token, agent=True) as erp:
            r = erp.post(f"/ai/execStaging/{op_id}", json={"mode": "execute", "fingerprint": "0" * 64})
            assert r.status_code == 409 and r.json()["code"] == -3, r.text
        assert staged(server, token, op_id)["status"] == "draft"
    server.assert_no_server_errors()


def test_twenty_rewrites_racing_the_approval_never_execute_a_rewritten_value(server: ErpServer) -> None:
    with server.login("sales01") as sales, server.login("mgr01") as mgr:
        token = token_of(sales)
        _, op_id = propose(server, sales, BIG_QUOTE)
        assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "awaiting_approval"
        start = threading.Barrier(21)
        codes: list[int] = []

        def attacker(i: int) -> None:
            start.wait()
            codes.append(rewrite(server, token, op_id, agent=i % 2 == 0).status_code)

        threads = [threading.Thread(target=attacker, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        start.wait()
        approved = mgr.post(f"/api/approvals/{op_id}/approve")
        for t in threads:
            t.join()
        assert approved.status_code == 200, approved.text
        assert codes.count(403) == 10, codes  # the user's token alone: refused every time
        op = wait_op(sales, op_id, {"done", "failed", "draft"})
        there = staged(server, token, op_id)
        if op["state"] == "done":  # the approval ran before any rewrite landed: what was approved
            assert bill_of(server, token, op) == (92000.0, [(2000.0, 46.0)])
            assert there["status"] == "executed"
        else:  # a rewrite landed first: voided, nothing executed
            assert op["state"] == "draft", op
            assert there["status"] == "draft" and there["resultBillId"] is None


def test_audit_verify_fails_when_an_executed_op_ran_other_values_than_approved(server: ErpServer) -> None:
    """The attacker who can write the audit table rewrites the approved fingerprint and recomputes
    the chain (there is no secret): the chain verifies, the binding check does not."""
    import sqlalchemy as sa

    from tether.store.audit import chain_hash

    with server.login("sales01") as sales:
        s, op_id = propose(server, sales, PLAIN_QUOTE)
        sales.post(f"/api/ops/{op_id}/confirm")
        assert wait_op(sales, op_id, {"done", "failed"})["state"] == "done"
        wait_status(sales, s["sessionId"], "SUCCEEDED")  # no row is appended while the chain is rewritten
    execute = next(r for r in audit_rows(server, op_id) if r["tool_id"] == "op.execute")
    confirm = next(r for r in audit_rows(server, op_id) if r["tool_id"] == "op.confirm")
    assert json.loads(execute["args"])["executedFingerprint"] == json.loads(confirm["args"])["stagedFingerprint"]
    env = {**server.env, "TETHER_DATABASE_URL": f"sqlite:///{server.workdir / 'var' / 'tether.db'}"}
    verify = [sys.executable, "-m", "tether.cli", "audit", "verify"]
    ok = subprocess.run(verify, cwd=server.workdir, env=env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "ran what was approved" in ok.stdout, ok.stdout + ok.stderr

    engine = sa.create_engine(env["TETHER_DATABASE_URL"])
    try:
        with engine.begin() as conn:
            rows = [dict(r) for r in conn.execute(sa.text("SELECT * FROM audit_log ORDER BY id")).mappings()]
            prev = "0" * 64
            for row in rows:
                if row["id"] == confirm["id"]:
                    args = json.loads(row["args"])
                    args["stagedFingerprint"] = "f" * 64
                    row["args"] = json.dumps(args, ensure_ascii=False, sort_keys=True)
                row["prev_hash"], row["hash"] = prev, chain_hash(prev, row)
                conn.execute(
                    sa.text("UPDATE audit_log SET args = :args, prev_hash = :prev_hash, hash = :hash WHERE id = :id"),
                    row,
                )
                prev = row["hash"]
            conn.execute(sa.text("UPDATE audit_head SET hash = :h WHERE name = 'chain'"), {"h": prev})
    finally:
        engine.dispose()
    broken = subprocess.run(verify, cwd=server.workdir, env=env, capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert f"op {op_id} executed fingerprint" in broken.stdout and "not what was approved" in broken.stdout


def test_stopping_a_session_whose_op_awaits_approval_is_409_and_withdrawing_says_so(server: ErpServer) -> None:
    with server.login("sales01") as sales:
        s, op_id = propose(server, sales, BIG_QUOTE)
        assert sales.post(f"/api/ops/{op_id}/confirm").json()["state"] == "awaiting_approval"
        for body in (None, {}, {"withdraw": False}):
            r = sales.post(f"/api/agent/sessions/{s['sessionId']}/cancel", json=body)
            assert r.status_code == 409 and r.json()["code"] == "SESSION_AWAITING_APPROVAL", r.text
            assert "withdraw" in r.json()["error"]
        assert sales.get(f"/api/ops/{op_id}").json()["state"] == "awaiting_approval"  # nothing withdrawn
        assert sales.post(f"/api/agent/sessions/{s['sessionId']}/cancel", json={"withdraw": "yes"}).status_code == 422
        r = sales.post(f"/api/agent/sessions/{s['sessionId']}/cancel", json={"withdraw": True})
        assert r.status_code == 200 and r.json()["status"] == "CANCELLED", r.text
        assert sales.get(f"/api/ops/{op_id}").json()["state"] == "cancelled"
    server.assert_no_server_errors()
