"""``/ai/reviseStaging`` from the attacker's side: the staged op's owner, or an approver of their
brand holding the approval grant that covers the op's form, may replace a draft's payload; a
brand-2 user holding that grant, the requester's peers without it, and holders of another
approval grant are refused as for an unknown id (404), and the payload is unchanged. What an
approver stages is checked as its owner — the write runs in their name — and only the owner
executes it."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tests.erp_demo.conftest import Erp
from tether.erp_demo import facts
from tether.erp_demo.schema import erp_user


def _stage_quote(erp: Erp) -> str:
    payload = {"customer_id": facts.SALES01_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 3}]}
    r = erp.post("sales01", "/ai/staging", {"opType": "create", "targetFormId": "2001", "payload": payload})
    assert r.status_code == 200, r.text
    return str(r.json()["sId"])


def _payload(erp: Erp, op_id: str) -> dict[str, Any]:
    op: dict[str, Any] = erp.get("sales01", f"/ai/staging/{op_id}").json()["op"]
    return dict(op["payload"])


def _grant(erp: Erp, user: str, *grants: str) -> None:
    with erp.demo.engine.begin() as conn:
        auths = conn.execute(sa.select(erp_user.c.auths).where(erp_user.c.id == user)).scalar_one()
        conn.execute(erp_user.update().where(erp_user.c.id == user).values(auths=",".join([auths, *grants])))


def test_an_approver_of_the_brand_may_revise_and_only_the_owner_executes(erp: Erp) -> None:
    op_id = _stage_quote(erp)
    edited = {"customer_id": facts.SALES01_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 2}]}
    r = erp.post("mgr01", f"/ai/reviseStaging/{op_id}", {"payload": edited})
    assert r.status_code == 200, r.text
    op = r.json()["op"]
    assert op["user_id"] == "sales01" and op["payload"] == edited and op["status"] == "draft"  # still sales01's
    # the approver cannot carry it out, read it as theirs or cancel it: the op stays the requester's
    assert erp.post("mgr01", f"/ai/execStaging/{op_id}", {"mode": "execute"}).status_code == 404
    assert erp.get("mgr01", f"/ai/staging/{op_id}").status_code == 404
    assert erp.post("mgr01", f"/ai/cancelStaging/{op_id}", {}).status_code == 404
    assert _payload(erp, op_id) == edited
    done = erp.post("sales01", f"/ai/execStaging/{op_id}", {"mode": "validate"}).json()
    assert done["status"] == "confirmed", done
    # once confirmed it is no draft: nobody revises it any more
    r = erp.post("mgr01", f"/ai/reviseStaging/{op_id}", {"payload": {"details": [{"material_id": "M0004", "qty": 9}]}})
    assert r.status_code == 409 and "only a draft" in r.text, r.text


def test_others_are_refused_as_for_an_unknown_op_and_nothing_changes(erp: Erp) -> None:
    op_id = _stage_quote(erp)
    before = _payload(erp, op_id)
    _grant(erp, "b2admin", facts.SALES_APPROVAL)  # brand 2, holding the very grant
    _grant(erp, "wh01", facts.FINANCE_APPROVAL)  # an approval grant that does not cover quotations
    attack = {"payload": {"customer_id": facts.SALES01_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 999}]}}
    for user in ("b2admin", "sales02", "fin02", "wh01", "fin01"):
        r = erp.post(user, f"/ai/reviseStaging/{op_id}", attack)
        assert r.status_code == 404 and "of yours" in r.text, (user, r.text)
    assert _payload(erp, op_id) == before


def test_what_an_approver_stages_is_checked_as_the_owner(erp: Erp) -> None:
    """mgr01 sees every customer; sales01 only their own. A customer of sales02 put into
    sales01's quotation is refused (422), as it would be for sales01 — the write runs as them."""
    op_id = _stage_quote(erp)
    before = _payload(erp, op_id)
    theirs = {"customer_id": facts.SALES02_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 3}]}
    r = erp.post("mgr01", f"/ai/reviseStaging/{op_id}", {"payload": theirs})
    assert r.status_code == 422 and "customer_id" in r.text, r.text
    assert _payload(erp, op_id) == before
