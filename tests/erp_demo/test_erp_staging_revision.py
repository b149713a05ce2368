"""``/ai/reviseStaging`` from the attacker's side: the staged op's owner, or an approver of their
brand holding the approval grant that covers the op's form, may replace a draft's payload; a
brand-2 user holding that grant, the requester's peers without it, and holders of another
approval grant are refused as for an unknown id (404), and the payload is unchanged. What an
approver stages is checked as its owner — the write runs in their name — and only the owner
executes it. The row records who revised it; ``prepare()`` adds those columns to an older database."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from tests.erp_demo.conftest import Erp
from tether.erp_demo import facts
from tether.erp_demo.schema import erp_user
from tether.errors import ConfigError


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


def test_the_row_records_who_revised_it_the_requester_or_the_approver(erp: Erp) -> None:
    op_id = _stage_quote(erp)
    unrevised = erp.get("sales01", f"/ai/staging/{op_id}").json()
    assert unrevised["revisedBy"] is None and unrevised["op"]["revised_at"] is None, unrevised
    mine = {"customer_id": facts.SALES01_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 4}]}
    assert erp.post("sales01", f"/ai/reviseStaging/{op_id}", {"payload": mine}).status_code == 200
    by_requester = erp.get("sales01", f"/ai/staging/{op_id}").json()
    assert by_requester["revisedBy"] == by_requester["op"]["revised_by"] == "sales01", by_requester
    assert by_requester["revisedAt"] and by_requester["revisedAt"] == by_requester["op"]["revised_at"]

    theirs = {"customer_id": facts.SALES01_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 2}]}
    answer = erp.post("mgr01", f"/ai/reviseStaging/{op_id}", {"payload": theirs}).json()
    assert answer["revisedBy"] == "mgr01" and answer["op"]["user_id"] == "sales01", answer
    by_approver = erp.get("sales01", f"/ai/staging/{op_id}").json()  # the owner reads who changed their op
    assert by_approver["revisedBy"] == "mgr01" and by_approver["revisedAt"] >= by_requester["revisedAt"]
    # a refused revision records nobody
    refused = {"customer_id": facts.SALES02_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 3}]}
    assert erp.post("sales01", f"/ai/reviseStaging/{op_id}", {"payload": refused}).status_code == 422
    assert erp.get("sales01", f"/ai/staging/{op_id}").json()["revisedBy"] == "mgr01"


def _drop_columns(erp: Erp, *names: str) -> None:
    with erp.demo.engine.begin() as conn:
        for name in names:
            conn.exec_driver_sql(f"ALTER TABLE ai_op_queue DROP COLUMN {name}")


def _columns(erp: Erp) -> set[str]:
    with erp.demo.engine.connect() as conn:
        return {c["name"] for c in sa.inspect(conn).get_columns("ai_op_queue")}


def test_prepare_upgrades_an_older_database_and_keeps_its_rows(erp: Erp) -> None:
    """A database made before the revision columns: ``prepare()`` adds them, the staged ops stay
    and can be revised; run again it changes nothing. A missing column that may not be null
    cannot be added to existing rows: the start stops and says so."""
    op_id = _stage_quote(erp)
    _drop_columns(erp, "revised_by", "revised_at")
    assert not {"revised_by", "revised_at"} & _columns(erp)

    assert erp.demo.prepare() == {}  # not seeded again: the users are there
    assert {"revised_by", "revised_at"} <= _columns(erp)
    kept = erp.get("sales01", f"/ai/staging/{op_id}").json()
    assert kept["status"] == "draft" and kept["revisedBy"] is None and _payload(erp, op_id)["details"], kept
    edited = {"customer_id": facts.SALES01_CUSTOMER[0], "details": [{"material_id": "M0004", "qty": 5}]}
    assert erp.post("mgr01", f"/ai/reviseStaging/{op_id}", {"payload": edited}).json()["revisedBy"] == "mgr01"
    erp.demo.prepare()
    assert erp.get("sales01", f"/ai/staging/{op_id}").json()["revisedBy"] == "mgr01"

    _drop_columns(erp, "target_table")
    with pytest.raises(ConfigError, match="ai_op_queue lacks the column target_table"):
        erp.demo.prepare()
