"""Approvals of a customer's credit-limit change (two approvers: a sales manager and finance),
proposed by a scripted model inside a real server with the demo ERP: the quorum needs both
grants, concurrent approvals from both count once each and confirm the op once, a policy change
that matters voids the approvals given so far, and the audit chain verifies after all of it."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tests.packs.erp.test_erp_approvals import storm_url
from tests.servers import free_port
from tether.app.main import create_app
from tether.erp_demo import facts
from tether.models.scripted import ScriptedModel, calls, text
from tether.ops.approvals.source import DEMO_POLICY
from tether.settings import create_settings
from tether.store.audit import SqlAuditLog

CREDIT = {"form_id": "1001", "op": "update", "record_id": "cus-1-00001"}  # C0001, sales01's customer


@contextmanager
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: ScriptedModel) -> Iterator[tuple[str, Path, str]]:
    """A real server with the demo ERP, a copy of the demo policy and ``model``: (url, policy, database)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    policy = tmp_path / "policy.yaml"
    shutil.copy(DEMO_POLICY, policy)
    monkeypatch.setenv("TETHER_ERP_DATABASE_URL", f"sqlite:///{tmp_path / 'erp.db'}")
    monkeypatch.setenv("TETHER_ERP_SEED_SCALE", "0.3")
    database = f"sqlite:///{tmp_path / 'tether.db'}"
    settings = create_settings(
        database_url=database,
        packs="tether.erp_demo.pack,tether.packs.erp.pack",
        public_url=url,
        skill_routing="rules",
        approval_policies=str(policy),
    )
    server = uvicorn.Server(uvicorn.Config(create_app(settings, model=model), port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    try:
        yield url, policy, database
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, str]]:
    model = ScriptedModel(
        [
            calls(("propose_write", {**CREDIT, "payload": {"credit_limit": 880000}})),
            text("信用额度的修改已处理。"),
            calls(("propose_write", {**CREDIT, "payload": {"credit_limit": 990000}})),
            text("信用额度的修改已处理。"),
        ]
    )
    with serving(tmp_path, monkeypatch, model) as running:
        yield running


def _token(url: str, user: str) -> str:
    r = httpx.post(f"{url}/api/auth/login", json={"username": user, "password": facts.PASSWORD}, timeout=30)
    assert r.status_code == 200, r.text
    return str(r.json()["token"])


def _client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _proposed(c: httpx.Client) -> tuple[str, str]:
    s = c.post("/api/agent/sessions", json={"message": "把客户C0001的信用额度改成新值"}).json()
    assert s["status"] == "WAITING_CONFIRMATION", str(s["transcript"][-3:])[-1500:]
    proposal = s["pendingInteraction"]["payload"]
    assert proposal["diff"][0]["field"] == "credit_limit" and proposal["auto"] is False
    return s["sessionId"], str(proposal["opId"])


def _ended(c: httpx.Client, session_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        s: dict[str, Any] = c.get(f"/api/agent/sessions/{session_id}").json()
        if s["status"] == "SUCCEEDED":
            return s
        assert time.monotonic() < deadline, s["status"]
        time.sleep(0.1)


def test_two_grants_both_needed_a_policy_change_voids_and_concurrent_approvals_count_once(
    served: tuple[str, Path, str],
) -> None:
    url, policy, database = served
    sales, mgr, fin = _token(url, "sales01"), _token(url, "mgr01"), _token(url, "fin02")
    with _client(url, sales) as c, _client(url, mgr) as m, _client(url, fin) as f:
        session, op_id = _proposed(c)
        held = c.post(f"/api/ops/{op_id}/confirm").json()
        assert held["state"] == "awaiting_approval" and held["approval"]["rules"] == ["customer-credit-limit"]
        assert held["approval"]["waitingFor"] == [
            {"grant": "approve.sales", "count": 1},
            {"grant": "approve.finance", "count": 1},
        ]
        first = m.post(f"/api/approvals/{op_id}/approve").json()
        assert first["state"] == "awaiting_approval"
        assert first["approval"]["waitingFor"] == [{"grant": "approve.finance", "count": 1}]
        # the operator edits the rule that matched: the approval given is void, mgr01 must approve again
        time.sleep(0.01)
        policy.write_text(
            policy.read_text().replace("fields_changed: [credit_limit]", "fields_changed: [credit_limit, payment_days]")
        )
        after = f.post(f"/api/approvals/{op_id}/approve").json()
        assert after["state"] == "awaiting_approval", after
        assert after["approval"]["voidReason"] == "the approval policy changed"
        assert after["approval"]["approvedBy"] == ["fin02@erp-1-1"]
        done = m.post(f"/api/approvals/{op_id}/approve").json()
        assert done["state"] == "pending", done  # a manual op: validated, the prefill link, as after a confirm
        given = f.get(f"/api/approvals/{op_id}").json()["approval"]["given"]
        assert [(g["approver"], bool(g["void"])) for g in given] == [
            ("mgr01", True),
            ("fin02", False),
            ("mgr01", False),
        ]
        _ended(c, session)

        # a second change: both approvers, ten clicks each, at once → two approvals, one confirm
        session, op_id = _proposed(c)
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "awaiting_approval"
        codes = storm_url(url, [mgr, fin], op_id, 20)
        assert codes == [200] * 20, codes
        op = c.get(f"/api/ops/{op_id}").json()
        assert op["state"] == "pending" and op["attempts"] == 1, op
        given = f.get(f"/api/approvals/{op_id}").json()["approval"]["given"]
        assert sorted(g["approver"] for g in given) == ["fin02", "mgr01"]
        _ended(c, session)
    log = SqlAuditLog(database)
    try:
        assert log.verify() is None
        actions = [r["tool_id"] for r in log.rows() if r["tool_call_id"] == op_id]
    finally:
        log.close()
    assert actions.count("op.approve") == 2 and actions.count("op.confirm") == 1, actions


def test_the_chain_continues_after_the_approval_with_a_generated_sales_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request, two steps: a 107,200 元 quotation (it waits for mgr01), then the sales order
    generated from it. The model's second step runs only once the approval executed the
    quotation — it reads the new bill's id from the outcome the session received — and the
    chained order is generated from that quotation; the audit chain verifies after all of it."""
    import json
    import re

    from tether.core.messages import ModelReply, ModelRequest

    line = {"material_id": "M0005", "qty": 40, "unit_price": 2680}
    quote = {"form_id": "2001", "op": "create", "payload": {"customer_id": "C0001", "details": [line]}}

    def generate(request: ModelRequest) -> ModelReply:
        outcome = next(m for m in reversed(request.messages) if m.get("role") == "tool" and "billId" in str(m))
        bill = re.search(r'"billId":\s*"([^"]+)"', str(outcome["content"]))
        assert bill is not None, outcome
        ref = {"formId": "2001", "billId": bill[1]}
        return calls(("propose_write", {"form_id": "2002", "op": "generate", "source_ref": ref}))

    model = ScriptedModel([calls(("propose_write", quote)), generate, text("销售订单已生成。")])
    with serving(tmp_path, monkeypatch, model) as (url, _policy, database):
        sales, mgr = _token(url, "sales01"), _token(url, "mgr01")
        with _client(url, sales) as c, _client(url, mgr) as m:
            s = c.post("/api/agent/sessions", json={"message": "给C0001报价M0005 40台，然后生成销售订单"}).json()
            assert s["status"] == "WAITING_CONFIRMATION", str(s["transcript"][-3:])[-1500:]
            quote_op = str(s["pendingInteraction"]["payload"]["opId"])
            assert c.post(f"/api/ops/{quote_op}/confirm").json()["state"] == "awaiting_approval"
            assert model.remaining == 2  # nothing chained while the quotation waits
            assert m.post(f"/api/approvals/{quote_op}/approve").status_code == 200
            deadline = time.monotonic() + 30
            while True:  # the session resumes with the quotation's outcome and proposes the next step
                s = c.get(f"/api/agent/sessions/{s['sessionId']}").json()
                pending = s.get("pendingInteraction") or {}
                if pending.get("kind") == "proposal" and pending["payload"]["opId"] != quote_op:
                    break
                assert time.monotonic() < deadline, s["status"]
                time.sleep(0.1)
            quoted = c.get(f"/api/ops/{quote_op}").json()
            assert quoted["state"] == "done", quoted
            order_op = str(pending["payload"]["opId"])
            assert pending["payload"]["op"] == "generate" and quoted["billNo"] in json.dumps(pending["payload"])
            confirmed = c.post(f"/api/ops/{order_op}/confirm").json()
            assert confirmed["state"] in ("processing", "done"), confirmed  # no rule matches a generated order
            ended = _ended(c, s["sessionId"])
            order = c.get(f"/api/ops/{order_op}").json()
            assert order["state"] == "done" and order["formId"] == "2002", order
            assert "销售订单已生成" in str(ended["transcript"][-1])
    model.assert_consumed()
    log = SqlAuditLog(database)
    try:
        assert log.verify() is None
    finally:
        log.close()
