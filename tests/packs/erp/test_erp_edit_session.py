"""Edit before approve, from the requester's session (docs/approvals.md): a successful
``PATCH /api/ops/{opId}`` reaches the session that proposed the op — its pending proposal holds
the edited diff (what a reloaded chat page shows) and an ``OP_RESULT`` with ``edited: true``
carries it to an open page; a refused edit changes neither. A value the model copied from a
hostile remark stays marked while the edit sends it back unchanged and loses its mark once the
person changes it (their own value then)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from tests.packs.erp.test_erp_approvals_scripted import _client, _token, serving
from tests.packs.erp.test_erp_tainted import COPY, HOSTILE_ID, LINE
from tests.servers import runtime_events
from tether.models.scripted import ScriptedModel, calls


def _field(fields: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(f for f in fields if f["field"] == name)


def _pending(c: httpx.Client, session_id: str) -> dict[str, Any]:
    payload: dict[str, Any] = c.get(f"/api/agent/sessions/{session_id}").json()["pendingInteraction"]["payload"]
    return payload


def _edits(c: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    return [e["data"] for e in runtime_events(c, session_id) if e["type"] == "OP_RESULT" and e["data"].get("edited")]


def test_an_edit_shows_in_the_session_and_keeps_the_mark_only_on_a_value_sent_back_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [calls(("lookup_record", {"form_id": "2001", "record_id": HOSTILE_ID})), calls(("propose_write", COPY))]
    )
    with serving(tmp_path, monkeypatch, model) as (url, _policy, _database), _client(url, _token(url, "sales01")) as c:
        s = c.post("/api/agent/sessions", json={"message": "照着那张报价单的备注给C0001报价"}).json()
        assert s["status"] == "WAITING_CONFIRMATION", str(s["transcript"][-3:])[-1500:]
        sid, proposal = s["sessionId"], s["pendingInteraction"]["payload"]
        op_id = proposal["opId"]
        mark = _field(proposal["diff"], "remark")["tainted"]
        assert mark.startswith("from the remark of"), proposal["diff"]

        # the quantity edited, the copied remark sent back as it was: the session shows the new diff
        same_remark = {**cast(dict[str, Any], COPY["payload"]), "details": [{**LINE, "qty": 12}]}
        r = c.patch(f"/api/ops/{op_id}", json={"payload": same_remark})
        assert r.status_code == 200, r.text
        pending = _pending(c, sid)
        assert pending["edited"] is True and pending["opId"] == op_id and pending["summary"] == proposal["summary"]
        assert _field(pending["lines"][0]["fields"], "qty")["after"] == 12
        assert pending["values"]["details"][0]["qty"] == 12 and pending["values"]["remark"] == same_remark["remark"]
        assert _field(pending["diff"], "remark")["tainted"] == mark  # not the person's: still marked
        assert c.post(f"/api/ops/{op_id}/confirm").status_code == 409  # and still needs the tick
        [event] = _edits(c, sid)
        assert event["opId"] == op_id and event["interactionId"] == s["pendingInteraction"]["interactionId"]
        assert event["state"] == "draft" and event["lines"] == pending["lines"] and event["diff"] == pending["diff"]
        assert event["editedBy"] is None and pending["editedBy"] is None  # the requester's own edit: no one else's

        # a refused edit: 422, the session's proposal and events as they were
        bad = c.patch(f"/api/ops/{op_id}", json={"payload": {**same_remark, "details": [{**LINE, "qty": -3}]}})
        assert bad.status_code == 422, bad.text
        assert [(p["field"], p["code"]) for p in bad.json()["problems"]] == [("details.0.qty", "min")], bad.text
        assert _pending(c, sid) == pending and len(_edits(c, sid)) == 1

        # the person's own remark: no mark, confirmed without the tick
        own = {**same_remark, "remark": "请按合同价报价"}
        assert c.patch(f"/api/ops/{op_id}", json={"payload": own}).status_code == 200
        pending = _pending(c, sid)
        assert _field(pending["diff"], "remark")["after"] == "请按合同价报价"
        assert not [f for f in pending["diff"] if f.get("tainted")], pending["diff"]
        assert len(_edits(c, sid)) == 2
        done = c.post(f"/api/ops/{op_id}/confirm")
        assert done.status_code == 200, done.text
