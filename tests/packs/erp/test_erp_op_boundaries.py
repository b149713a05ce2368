"""Where a confirm must stop although the op is the caller's own: its form is no longer granted, or
it failed and its proposal has expired since; and a cancel that comes after the ERP already carried
the op out (through its own API) records what happened there instead of a cancel."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import sqlalchemy as sa

from tests.packs.erp.conftest import ErpServer
from tests.packs.erp.test_erp_ops import erp_rows, erp_total, erp_write, propose, record, wait_op

ME_CACHE_S = 1.0  # tether's cache of who a token is, as the erp_server fixture (conftest) sets it


@pytest.fixture(scope="module")
def admin(erp_server: ErpServer) -> str:
    return erp_server.token("admin")


def _database(server: ErpServer, name: str, sql: str, **params: Any) -> Any:
    engine = sa.create_engine(f"sqlite:///{server.workdir / 'var' / name}")
    try:
        with engine.begin() as conn:
            result = conn.execute(sa.text(sql), params)
            return result.scalar() if result.returns_rows else None
    finally:
        engine.dispose()


def test_an_op_whose_form_is_no_longer_granted_cannot_be_confirmed(erp_server: ErpServer, admin: str) -> None:
    before = erp_total(erp_server, admin, "2001")
    auths = str(_database(erp_server, "erp.db", "SELECT auths FROM erp_user WHERE id = 'sales01'"))
    assert "2001" in auths.split(",")
    with erp_server.login("sales01") as c:
        _, op_id = propose(erp_server, c)
        revoked = ",".join(a for a in auths.split(",") if a != "2001")
        _database(erp_server, "erp.db", "UPDATE erp_user SET auths = :a WHERE id = 'sales01'", a=revoked)
        try:
            time.sleep(ME_CACHE_S + 0.5)  # tether's cache of who the token is
            r = c.post(f"/api/ops/{op_id}/confirm")
            assert r.status_code == 404 and "no access to form '2001'" in r.text, r.text
            assert c.get(f"/api/ops/{op_id}").json()["state"] == "draft"  # nothing moved
            assert erp_total(erp_server, admin, "2001") == before
        finally:
            _database(erp_server, "erp.db", "UPDATE erp_user SET auths = :a WHERE id = 'sales01'", a=auths)
        time.sleep(ME_CACHE_S + 0.5)
        assert c.post(f"/api/ops/{op_id}/confirm").status_code == 200  # granted again: the same op goes on
        assert wait_op(c, op_id, {"done", "failed"})["state"] == "done"
    assert erp_total(erp_server, admin, "2001") == before + 1


def test_a_failed_op_whose_proposal_expired_cannot_be_retried(erp_server: ErpServer, admin: str) -> None:
    made = erp_write(
        erp_server,
        admin,
        {"sFormId": "1003", "handleType": "add", "data": {"name": "试用物料", "unit": "个", "price": 5}},
    )
    code = record(erp_server, admin, "1003", made["sId"])["master"]["code"]
    with erp_server.login("sales01") as c:
        _, op_id = propose(erp_server, c, f"给恒达自动化报价：{code} 1个，单价5")
        erp_write(erp_server, admin, {"sFormId": "1003", "handleType": "del", "sId": made["sId"]})  # the line will fail
        assert c.post(f"/api/ops/{op_id}/confirm").status_code == 200
        assert wait_op(c, op_id, {"failed", "done"})["state"] == "failed"
        _database(erp_server, "tether.db", "UPDATE op_queue SET expire_at = 0 WHERE op_id = :i", i=op_id)
        before = erp_rows(erp_server, "quotation")
        r = c.post(f"/api/ops/{op_id}/confirm")
        assert r.status_code == 409 and "expired" in r.text and "propose again" in r.text, r.text
        op = c.get(f"/api/ops/{op_id}").json()
        assert op["state"] == "failed" and op["attempts"] == 1
        assert erp_rows(erp_server, "quotation") == before


def test_a_cancel_after_the_erp_carried_the_op_out_records_that_instead(erp_server: ErpServer, admin: str) -> None:
    before = erp_total(erp_server, admin, "2001")
    with erp_server.login("sales01") as c:
        _, op_id = propose(erp_server, c)  # an auto op: the ERP's execStaging may carry it out itself
        with erp_server.erp_direct(c.headers["Authorization"].split(" ", 1)[1], agent=True) as erp:
            done = erp.post(f"/ai/execStaging/{op_id}", json={"mode": "execute"}).json()
        assert done["status"] == "executed"
        with ThreadPoolExecutor(10) as pool:  # ten cancels at once: none is told "cancelled"
            answers = list(pool.map(lambda _: c.post(f"/api/ops/{op_id}/cancel"), range(10)))
        for r in answers:
            assert r.status_code == 409 and "already carried out" in r.text, r.text
        op = c.get(f"/api/ops/{op_id}").json()
        assert op["state"] == "done" and op["billId"] == done["resultBillId"], op
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "done"  # and nothing runs twice
    assert erp_total(erp_server, admin, "2001") == before + 1


def test_stopping_the_session_keeps_what_the_erp_already_carried_out(erp_server: ErpServer, admin: str) -> None:
    before = erp_total(erp_server, admin, "2001")
    with erp_server.login("sales01") as c:
        s, op_id = propose(erp_server, c)
        with erp_server.erp_direct(c.headers["Authorization"].split(" ", 1)[1], agent=True) as erp:
            assert erp.post(f"/ai/execStaging/{op_id}", json={"mode": "execute"}).json()["status"] == "executed"
        r = c.post(f"/api/agent/sessions/{s['sessionId']}/cancel")
        assert r.status_code == 200 and r.json()["status"] == "CANCELLED", r.text
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "done"
    assert erp_total(erp_server, admin, "2001") == before + 1


def test_the_users_token_alone_cannot_confirm_or_execute_a_draft_in_the_erp(erp_server: ErpServer) -> None:
    """The attacker holds the user's ERP token and the op id (it is in the deep link), and calls
    execStaging itself to skip the chat's confirm: the ERP refuses without the agent backend's key,
    the op stays a draft (which the ERP's form page will not save) and nothing is written."""
    token = erp_server.token("sales01")
    from tests.packs.erp.test_erp_ops import draft_quotation

    bill = draft_quotation(erp_server, token)
    with erp_server.client(token, timeout=60) as c:
        s, op_id = propose(erp_server, c, f"把报价单{bill['sBillNo']}的备注改成攻击者的备注")
        assert s["pendingInteraction"]["payload"]["auto"] is False
        with erp_server.erp_direct(token) as erp:
            for body in ({"mode": "validate"}, {}, {"mode": "execute"}, None):
                r = erp.post(f"/ai/execStaging/{op_id}", json=body)
                assert r.status_code == 403 and "confirm the proposal in the chat" in r.json()["msg"], r.text
            r = erp.post(f"/ai/execStaging/{op_id}", json={"mode": "validate"}, headers={"X-Agent-Key": "guess"})
            assert r.status_code == 403, r.text
            assert erp.get(f"/ai/staging/{op_id}").json()["status"] == "draft"  # its form page will not save it
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "draft"
        assert record(erp_server, token, "2001", bill["sId"])["master"]["remark"] == "原备注"
        r = c.post(f"/api/ops/{op_id}/confirm")  # the chat's confirm still works: tether holds the key
        assert r.status_code == 200 and r.json()["state"] == "pending", r.text
