"""Tainted values from the attacker's side: a scripted model reads a quotation whose remark holds
a hostile instruction, then proposes a quotation whose remark is that text. The proposal marks
the value with where it came from; under the demo policy (``acknowledge_tainted: true``) a confirm
without the acknowledgement is 409 naming it and writes nothing; with it the op proceeds. The
same text typed by the person is theirs: not marked, confirmed as usual."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.packs.erp.test_erp_approvals import audit_verify
from tests.packs.erp.test_erp_approvals_scripted import _client, _ended, _token, serving
from tether.erp_demo import facts
from tether.models.scripted import ScriptedModel, calls, text

HOSTILE_ID = "qt-1-hostile-1"  # its remark: "交期请确认。" + facts.HOSTILE_IGNORE
LINE = {"material_id": "M0003", "qty": 10, "unit_price": 46}  # 460 元: no approval rule matches
COPY = {
    "form_id": "2001",
    "op": "create",
    "payload": {"customer_id": "C0001", "remark": facts.HOSTILE_IGNORE, "details": [LINE]},
}
BIG_LINE = {"material_id": "M0005", "qty": 40, "unit_price": 2680}  # 107,200 元: the quotation rule
BIG_COPY = {
    "form_id": "2001",
    "op": "create",
    "payload": {"customer_id": "C0001", "remark": facts.HOSTILE_IGNORE, "details": [BIG_LINE]},
}


def _remark(proposal: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in proposal["diff"] if f["field"] == "remark")


def _audit_args(database: str, op_id: str, action: str) -> list[dict[str, Any]]:
    """The details of the op's audit rows of ``action`` (``op.confirm``, ...), oldest first."""
    import sqlalchemy as sa

    engine = sa.create_engine(database)
    try:
        with engine.connect() as conn:
            query = sa.text("SELECT args FROM audit_log WHERE tool_call_id = :op AND tool_id = :action ORDER BY id")
            return [json.loads(r[0]) for r in conn.execute(query, {"op": op_id, "action": f"op.{action}"})]
    finally:
        engine.dispose()


def test_a_value_copied_from_a_hostile_remark_is_marked_and_needs_the_confirmers_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [
            calls(("lookup_record", {"form_id": "2001", "record_id": HOSTILE_ID})),
            calls(("propose_write", COPY)),
            text("已提议。"),
            calls(("propose_write", COPY)),
            text("已提议。"),
            calls(("lookup_record", {"form_id": "2001", "record_id": HOSTILE_ID})),
            calls(("propose_write", BIG_COPY)),
            text("已提议。"),
        ]
    )
    with serving(tmp_path, monkeypatch, model) as (url, _policy, database), _client(url, _token(url, "sales01")) as c:
        s = c.post("/api/agent/sessions", json={"message": "照着那张报价单的备注给C0001报价"}).json()
        assert s["status"] == "WAITING_CONFIRMATION", str(s["transcript"][-3:])[-1500:]
        read = next(m for m in s["transcript"] if m.get("role") == "tool")
        bill_no = str(json.loads(read["content"])["data"]["master"]["bill_no"])
        proposal = s["pendingInteraction"]["payload"]
        assert _remark(proposal)["tainted"] == f"from the remark of {bill_no}", proposal["diff"]
        assert all("tainted" not in f for f in proposal["diff"] if f["field"] != "remark")  # the customer: not
        op_id = str(proposal["opId"])
        op = c.get(f"/api/ops/{op_id}").json()
        assert _remark(op)["tainted"] == f"from the remark of {bill_no}", op  # the op's diff, as stored

        refused = c.post(f"/api/ops/{op_id}/confirm")
        assert refused.status_code == 409, refused.text
        assert "acknowledgeTainted" in refused.json()["error"] and bill_no in refused.json()["error"]
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "draft"  # nothing ran
        assert c.post(f"/api/ops/{op_id}/confirm", json={"acknowledgeTainted": False}).status_code == 409
        done = c.post(f"/api/ops/{op_id}/confirm", json={"acknowledgeTainted": True})
        assert done.status_code == 200 and done.json()["state"] in ("processing", "done"), done.text
        _ended(c, s["sessionId"])
        # the audit shows the person ticked it off, and which values they ticked
        (confirmed,) = _audit_args(database, op_id, "confirm")
        assert confirmed["acknowledgedTainted"] is True, confirmed
        assert confirmed["taintedFields"] == [f"备注 (from the remark of {bill_no})"], confirmed

        # the person types the same text themselves: it is theirs, not marked, confirmed as usual
        typed = c.post("/api/agent/sessions", json={"message": f"给C0001报价，备注写：{facts.HOSTILE_IGNORE}"}).json()
        assert typed["status"] == "WAITING_CONFIRMATION", str(typed["transcript"][-3:])[-1500:]
        mine = typed["pendingInteraction"]["payload"]
        assert "tainted" not in _remark(mine)
        assert c.post(f"/api/ops/{mine['opId']}/confirm").status_code == 200
        (plain,) = _audit_args(database, str(mine["opId"]), "confirm")
        assert "acknowledgedTainted" not in plain and "taintedFields" not in plain, plain  # nothing was marked
        _ended(c, typed["sessionId"])

        # a big quotation copying the remark: the ticked confirm is held for approval, and the
        # approval request's audit row carries the tick
        big = c.post("/api/agent/sessions", json={"message": "照着那张报价单的备注给C0001报价，M0005 40个"}).json()
        assert big["status"] == "WAITING_CONFIRMATION", str(big["transcript"][-3:])[-1500:]
        big_id = str(big["pendingInteraction"]["payload"]["opId"])
        held = c.post(f"/api/ops/{big_id}/confirm", json={"acknowledgeTainted": True}).json()
        assert held["state"] == "awaiting_approval", held
        (request,) = _audit_args(database, big_id, "approval_request")
        assert request["acknowledgedTainted"] is True and request["requester"] == "sales01", request
        assert request["taintedFields"] == [f"备注 (from the remark of {bill_no})"], request
        assert _audit_args(database, big_id, "confirm") == []  # not past the gate yet
    audit_verify(database)


def test_what_the_person_typed_into_a_form_is_theirs_even_beside_a_hostile_remark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A form's answer is the person's own words (the chat page's quotation form with a 备注 was
    held as tainted 'from the remark of a collect_form result'): a remark they typed there is not
    marked, though the model read a hostile remark in the same session, and needs no tick."""
    typed = "请尽快报价，含运费"
    from_form = {
        "form_id": "2001",
        "op": "create",
        "payload": {"customer_id": "C0001", "remark": typed, "details": [LINE]},
    }
    model = ScriptedModel(
        [
            calls(("lookup_record", {"form_id": "2001", "record_id": HOSTILE_ID})),
            calls(("collect_form", {"form_id": "2001", "prefill": {"customer_id": "C0001"}})),
            calls(("propose_write", from_form)),
            text("已提议。"),
        ]
    )
    with serving(tmp_path, monkeypatch, model) as (url, _policy, _database), _client(url, _token(url, "sales01")) as c:
        s = c.post("/api/agent/sessions", json={"message": "新建一张报价单给C0001"}).json()
        assert s["status"] == "WAITING_USER_INPUT", str(s["transcript"][-3:])[-1500:]
        form = s["pendingInteraction"]
        answer = {"values": {"customer_id": "C0001", "remark": typed, "details": [LINE]}}
        s = c.post(f"/api/agent/sessions/{s['sessionId']}/interactions/{form['interactionId']}", json=answer).json()
        assert s["status"] == "WAITING_CONFIRMATION", str(s["transcript"][-3:])[-1500:]
        settled = [json.loads(m["content"]) for m in s["transcript"] if m.get("role") == "tool"]
        assert [b["kind"] for b in settled] == ["value", "answer", "interaction"]  # the form's: an answer
        mine = s["pendingInteraction"]["payload"]
        assert _remark(mine)["after"] == typed and "tainted" not in _remark(mine), mine["diff"]
        assert c.post(f"/api/ops/{mine['opId']}/confirm").status_code == 200  # no tick needed
        _ended(c, s["sessionId"])
