"""The op queue from the user's and the attacker's side, against a live ``tether serve`` and the
demo ERP over HTTP: a proposal writes nothing; only its owner's confirm executes it, exactly once,
whatever the number of concurrent confirms; cancelled / expired ops are 409; the ERP's optimistic
check and atomicity reach the user as a failed op that a retry may execute safely."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import date, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_database
from tests.packs.erp.conftest import ErpServer, facts, get_session, runtime_events, wait_status
from tests.servers import ServerProcess, wait_until

FAILPOINT_SERVE = Path(__file__).with_name("serve_with_failpoint.py")
CUSTOMER = facts.SALES01_CUSTOMER  # C0001, sales01's own customer
EVERY_DATABASE = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mariadb", marks=pytest.mark.mariadb),
]
QUOTE = f"给{CUSTOMER[1][4:10]}报价：M0003 10个，单价46"


def propose(server: ErpServer, c: httpx.Client, message: str = QUOTE) -> tuple[dict[str, Any], str]:
    s = server.ask(c, message)
    assert s["status"] == "WAITING_CONFIRMATION", (s["status"], s["lastError"], s["transcript"][-1])
    pending = s["pendingInteraction"]
    assert pending["kind"] == "proposal"
    return s, str(pending["payload"]["opId"])


def erp_total(server: ErpServer, admin: str, form_id: str, **filters: Any) -> int:
    with server.erp_direct(admin) as erp:
        body = {"sFormId": form_id, "pageNum": 1, "pageSize": 1, **filters}
        r = erp.post("/getBusinessDataByFormcustomId", json=body)
        assert r.status_code == 200, r.text
        return int(r.json()["dataset"]["total"])


def wait_op(c: httpx.Client, op_id: str, states: set[str], timeout: float = 30.0) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        r = c.get(f"/api/ops/{op_id}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body if body["state"] in states else None

    return wait_until(check, timeout=timeout, interval=0.1, what=f"op {op_id} to reach {states}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    s = ErpServer(tmp_path_factory.mktemp("erp-ops"), TETHER_ERP_ME_CACHE_S="1").start(timeout=120)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def admin(server: ErpServer) -> str:
    return server.token("admin")


def test_a_quotation_proposal_writes_nothing_and_its_confirm_creates_one_bill(server: ErpServer, admin: str) -> None:
    before = erp_total(server, admin, "2001")
    with server.login("sales01") as c:
        s, op_id = propose(server, c)
        payload = s["pendingInteraction"]["payload"]
        assert payload["auto"] is True and payload["op"] == "create" and payload["formId"] == "2001"
        assert payload["lines"][0]["change"] == "add"
        assert erp_total(server, admin, "2001") == before  # nothing executed by the proposal
        proposal_event = next(e for e in runtime_events(c, s["sessionId"]) if e["type"] == "WRITE_PROPOSAL")
        data = proposal_event["data"]
        assert data["kind"] == "proposal" and data["interactionId"] == s["pendingInteraction"]["interactionId"]
        assert set(data["payload"]) >= {
            "opId",
            "formId",
            "formName",
            "op",
            "auto",
            "summary",
            "diff",
            "lines",
            "expiresAt",
        }
        r = c.get(f"/api/ops/{op_id}")
        assert r.status_code == 200 and r.json()["state"] == "draft", r.text
        r = c.post(f"/api/ops/{op_id}/confirm")
        assert r.status_code == 200 and r.json()["state"] == "processing", r.text
        done = wait_op(c, op_id, {"done", "failed"})
        assert done["state"] == "done", done
        assert done["billNo"].startswith("QT") and done["link"] == f"/erp/form/2001?bill={done['billId']}"
        session = wait_status(c, s["sessionId"], "SUCCEEDED")
        assert done["billNo"] in session["transcript"][-1]["content"]
        tool_messages = [m for m in session["transcript"] if m.get("role") == "tool"]
        assert '"kind": "value"' in tool_messages[-1]["content"] and done["billNo"] in tool_messages[-1]["content"]
        types = [e["type"] for e in runtime_events(c, s["sessionId"])]
        assert types.index("OP_RESULT") < types.index("LINK") < len(types) - 1
        # confirming again executes nothing
        again = c.post(f"/api/ops/{op_id}/confirm").json()
        assert again["state"] == "done" and again["billId"] == done["billId"]
        listed = c.get("/api/ops", params={"sessionId": s["sessionId"]}).json()["items"]
        assert [o["opId"] for o in listed] == [op_id]
    assert erp_total(server, admin, "2001") == before + 1
    audit = audit_rows(server, op_id)
    assert [r["tool_id"] for r in audit] == ["op.propose", "op.confirm", "op.execute"]
    assert audit[-1]["outcome"] == "executed" and done["billId"] in audit[-1]["args"]
    assert all(r["user_id"] == "sales01" and r["tenant"] == "erp-1-1" for r in audit)
    dump = str(audit_rows(server))
    assert not any(t in dump for t in server.tokens)  # no credential in the audit log
    server.assert_no_server_errors()


def test_a_quotation_made_through_tether_has_its_forms_defaults_shown_and_written(server: ErpServer) -> None:
    """有效期至 / 交期(天) come from the ERP's form config (30 days after the bill date, 15 days): the
    proposal shows them as added values and the quotation its confirm creates has them."""
    today = date.today()
    valid = (today + timedelta(days=30)).isoformat()
    with server.login("sales01") as c:
        s, op_id = propose(server, c)
        payload = s["pendingInteraction"]["payload"]
        shown = {f["field"]: f for f in payload["diff"]}
        assert shown["bill_date"] == {
            "field": "bill_date",
            "label": "单据日期",
            "before": None,
            "after": today.isoformat(),
        }
        assert shown["valid_until"] == {"field": "valid_until", "label": "有效期至", "before": None, "after": valid}
        assert shown["delivery_days"] == {"field": "delivery_days", "label": "交期(天)", "before": None, "after": 15}
        assert (payload["values"]["valid_until"], payload["values"]["delivery_days"]) == (valid, 15)  # the edit form's
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "processing"
        done = wait_op(c, op_id, {"done", "failed"})
        assert done["state"] == "done", done
        master = record(server, server.token("sales01"), "2001", str(done["billId"]))["master"]
    assert (master["bill_date"], master["valid_until"], master["delivery_days"]) == (today.isoformat(), valid, 15)


def test_values_the_person_gives_win_over_the_forms_defaults(server: ErpServer) -> None:
    """An edit with its own 交期 and bill date: the quotation has them, valid 30 days from that date."""
    with server.login("sales01") as c:
        s, op_id = propose(server, c)
        values = {k: v for k, v in s["pendingInteraction"]["payload"]["values"].items() if k != "valid_until"}
        r = c.patch(f"/api/ops/{op_id}", json={"payload": {**values, "bill_date": "2026-11-20", "delivery_days": 45}})
        assert r.status_code == 200, r.text
        shown = {f["field"]: f["after"] for f in r.json()["diff"]}
        assert (shown["bill_date"], shown["valid_until"], shown["delivery_days"]) == ("2026-11-20", "2026-12-20", 45)
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "processing"
        done = wait_op(c, op_id, {"done", "failed"})
        assert done["state"] == "done", done
        master = record(server, server.token("sales01"), "2001", str(done["billId"]))["master"]
    assert (master["bill_date"], master["valid_until"], master["delivery_days"]) == ("2026-11-20", "2026-12-20", 45)


def audit_rows(server: ErpServer, op_id: str | None = None) -> list[dict[str, Any]]:
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{server.workdir / 'var' / 'tether.db'}")
    try:
        with engine.connect() as conn:
            query = "SELECT * FROM audit_log" + (" WHERE tool_call_id = :op ORDER BY id" if op_id else "")
            return [dict(r) for r in conn.execute(sa.text(query), {"op": op_id}).mappings()]
    finally:
        engine.dispose()


def test_another_user_cannot_see_confirm_or_cancel_an_op(server: ErpServer, admin: str) -> None:
    before = erp_total(server, admin, "2001")
    with server.login("sales01") as owner, server.login("sales02") as other, server.client("dev-alice") as dev:
        _, op_id = propose(server, owner)
        for c in (other, dev):
            assert c.get(f"/api/ops/{op_id}").status_code == 404
            assert c.post(f"/api/ops/{op_id}/confirm").status_code == 404
            assert c.post(f"/api/ops/{op_id}/cancel").status_code == 404
            assert op_id not in str(c.get("/api/ops").json())
        assert server.client(None).post(f"/api/ops/{op_id}/confirm").status_code == 401
        assert owner.get("/api/ops/op-guessed-id").status_code == 404
        with server.erp_direct(server.token("sales02"), agent=True) as erp:  # and the ERP refuses them too
            assert erp.post(f"/ai/execStaging/{op_id}", json={"mode": "execute"}).status_code == 404
        assert owner.get(f"/api/ops/{op_id}").json()["state"] == "draft"
        r = owner.post(f"/api/ops/{op_id}/cancel")
        assert r.status_code == 200 and r.json()["state"] == "cancelled"
        assert owner.post(f"/api/ops/{op_id}/confirm").status_code == 409
        with server.erp_direct(owner.headers["Authorization"].split(" ", 1)[1]) as erp:
            assert erp.get(f"/ai/staging/{op_id}").json()["status"] == "cancelled"  # the ERP's draft too
    assert erp_total(server, admin, "2001") == before
    assert [r["tool_id"] for r in audit_rows(server, op_id)] == ["op.propose", "op.cancel"]


def test_stopping_a_session_that_waits_for_a_confirmation_cancels_its_proposal(server: ErpServer, admin: str) -> None:
    before = erp_total(server, admin, "2001")
    with server.login("sales01") as c:
        s, op_id = propose(server, c)
        r = c.post(f"/api/agent/sessions/{s['sessionId']}/cancel")
        assert r.status_code == 200 and r.json()["status"] == "CANCELLED", r.text
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "cancelled"
        assert c.post(f"/api/ops/{op_id}/confirm").status_code == 409  # a stopped proposal cannot be carried out
        with server.erp_direct(c.headers["Authorization"].split(" ", 1)[1]) as erp:
            assert erp.get(f"/ai/staging/{op_id}").json()["status"] == "cancelled"
        wait_until(
            lambda: any(
                e["type"] == "OP_RESULT" and e["data"].get("state") == "cancelled"
                for e in runtime_events(c, s["sessionId"])
            ),
            timeout=10,
            what="the card to show the op cancelled",
        )
        assert get_session(c, s["sessionId"])["status"] == "CANCELLED"  # the outcome does not restart the turn
    assert erp_total(server, admin, "2001") == before
    assert [r["tool_id"] for r in audit_rows(server, op_id)] == ["op.propose", "op.cancel"]


def test_an_expired_proposal_cannot_be_confirmed(tmp_path: Path) -> None:
    server = ErpServer(tmp_path, TETHER_OP_TTL_S="60", TETHER_SWEEP_S="0.2").start(timeout=120)
    try:
        admin = server.token("admin")
        before = erp_total(server, admin, "2001")
        with server.login("sales01") as c:
            s, op_id = propose(server, c)
            # the clock cannot be moved in another process: age the op in tether's database instead
            import sqlalchemy as sa

            engine = sa.create_engine(f"sqlite:///{tmp_path / 'var' / 'tether.db'}")
            with engine.begin() as conn:
                conn.execute(sa.text("UPDATE op_queue SET expire_at = 0 WHERE op_id = :i"), {"i": op_id})
            engine.dispose()
            wait_op(c, op_id, {"expired"})
            assert c.post(f"/api/ops/{op_id}/confirm").status_code == 409
            wait_status(c, s["sessionId"], "SUCCEEDED")
            assert "已过期" in get_session(c, s["sessionId"])["transcript"][-1]["content"]
            assert [r["tool_id"] for r in audit_rows(server, op_id)] == ["op.propose", "op.expire"]
        assert erp_total(server, admin, "2001") == before
    finally:
        server.stop()


def _confirm_storm(server: ErpServer, token: str, op_id: str, n: int = 50) -> list[int]:
    barrier = threading.Barrier(n)
    codes: list[int] = []

    def one() -> None:
        with server.client(token, timeout=60) as c:
            barrier.wait()
            codes.append(c.post(f"/api/ops/{op_id}/confirm").status_code)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    return codes


@pytest.mark.slow
@pytest.mark.parametrize("kind", EVERY_DATABASE)
def test_fifty_concurrent_confirms_execute_once(kind: str, tmp_path: Path) -> None:
    for url in fresh_database(kind, tmp_path):
        env = {} if kind == "sqlite" else {"TETHER_DATABASE_URL": url, "TETHER_ERP_DATABASE_URL": url}
        server = ErpServer(tmp_path, **env).start(timeout=180)
        try:
            admin = server.token("admin")
            before = erp_total(server, admin, "2001")
            token = server.token("sales01")
            with server.client(token, timeout=60) as c:
                s, op_id = propose(server, c)
                codes = _confirm_storm(server, token, op_id)
                assert codes == [200] * 50, codes
                done = wait_op(c, op_id, {"done", "failed"})
                assert done["state"] == "done" and done["attempts"] == 1, done
                wait_status(c, s["sessionId"], "SUCCEEDED")
                results = [e for e in runtime_events(c, s["sessionId"]) if e["type"] == "OP_RESULT"]
                assert len(results) == 1
            assert erp_total(server, admin, "2001") == before + 1
            with server.erp_direct(admin) as erp:
                lines = erp.get(f"/getBusinessDataById/2001/{done['billId']}").json()["details"]
            assert len(lines) == 1
            check_a_failing_third_line_writes_nothing(server, admin)  # atomic on this database too
            server.assert_no_server_errors()
        finally:
            server.stop()


def erp_write(server: ErpServer, token: str, body: dict[str, Any]) -> dict[str, Any]:
    with server.erp_direct(token) as erp:
        r = erp.post("/addUpdateDelBusinessData", json=body)
        assert r.status_code == 200, r.text
        answer: dict[str, Any] = r.json()
        return answer


def draft_quotation(
    server: ErpServer, token: str, remark: str = "原备注", customer: str = CUSTOMER[0]
) -> dict[str, Any]:
    data = {"customer_id": customer, "remark": remark}
    lines = [{"material_id": "M0001", "qty": 5, "unit_price": 18.5}, {"material_id": "M0002", "qty": 3}]
    return erp_write(server, token, {"sFormId": "2001", "handleType": "add", "data": data, "details": lines})


def record(server: ErpServer, token: str, form_id: str, record_id: str) -> dict[str, Any]:
    with server.erp_direct(token) as erp:
        r = erp.get(f"/getBusinessDataById/{form_id}/{record_id}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body


def test_a_manual_update_shows_its_diff_waits_in_the_erp_and_is_reconciled(server: ErpServer) -> None:
    token = server.token("sales01")
    bill = draft_quotation(server, token)
    with server.client(token, timeout=60) as c:
        s, op_id = propose(server, c, f"把报价单{bill['sBillNo']}的备注改成请加急发货")
        proposal = s["pendingInteraction"]["payload"]
        assert proposal["op"] == "update" and proposal["auto"] is False
        assert proposal["diff"] == [{"field": "remark", "label": "备注", "before": "原备注", "after": "请加急发货"}]
        assert record(server, token, "2001", bill["sId"])["master"]["remark"] == "原备注"

        def write_state() -> Any:  # what the conversation list shows beside this conversation
            items = c.get("/api/agent/sessions", params={"limit": 200}).json()["items"]
            listed = next(i["writeState"] for i in items if i["sessionId"] == s["sessionId"])
            assert c.get(f"/api/agent/sessions/{s['sessionId']}").json()["writeState"] == listed  # the view agrees
            return listed

        assert write_state() == "draft"
        r = c.post(f"/api/ops/{op_id}/confirm")
        assert r.status_code == 200, r.text
        pending = r.json()
        assert pending["state"] == "pending" and pending["link"] == f"/erp/form/2001?staging={op_id}", pending
        session = wait_status(c, s["sessionId"], "SUCCEEDED")
        assert "待处理" in session["transcript"][-1]["content"]
        assert record(server, token, "2001", bill["sId"])["master"]["remark"] == "原备注"  # the user has not saved
        mine = {"status": "confirmed", "sessionId": s["sessionId"]}
        todos = c.get("/api/ops", params=mine).json()["items"]
        assert [o["opId"] for o in todos] == [op_id]  # my AI todos: waiting for me in the ERP
        assert write_state() == "pending"
        # the user saves in the ERP's native form (its Save executes the staged op)
        with server.erp_direct(token, agent=True) as erp:
            assert erp.post(f"/ai/execStaging/{op_id}", json={"mode": "execute"}).json()["status"] == "executed"
        assert c.get("/api/ops", params=mine).json()["items"] == []  # reconciled in the list
        listed = c.get("/api/ops", params={"sessionId": s["sessionId"]}).json()["items"]
        assert [(o["opId"], o["state"]) for o in listed] == [(op_id, "done")]
        done = c.get(f"/api/ops/{op_id}").json()
        assert done["state"] == "done" and done["billId"] == bill["sId"], done
        assert write_state() is None  # nothing left to do
        assert record(server, token, "2001", bill["sId"])["master"]["remark"] == "请加急发货"
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "done"
        types = [e["type"] for e in runtime_events(c, s["sessionId"])]
        assert types.count("OP_RESULT") == 2  # pending, then done on reconciliation


class _FormFields(HTMLParser):
    """The values a browser would submit from a server-rendered form (inputs, selects, textareas)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "input" and a.get("name"):
            self.values[a["name"]] = a.get("value", "")
        elif tag == "select":
            self._select = a.get("name")
            self.values.setdefault(self._select or "", "")
        elif tag == "option" and self._select and "selected" in a:
            self.values[self._select] = a.get("value", "")
        elif tag == "textarea":
            self._textarea = a.get("name")
            self.values[self._textarea or ""] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.values[self._textarea] += data


def form_fields(html: str) -> dict[str, str]:
    parser = _FormFields()
    parser.feed(html)
    return {k: v for k, v in parser.values.items() if k}


def test_a_line_price_revision_is_saved_in_the_erp_form_prefilled_with_the_new_price(server: ErpServer) -> None:
    """As a user would: change a line's price → the diff → confirm → the prefill link opens the
    ERP's own form with the new price → its Save writes it → the op reads executed."""
    token = server.token("sales01")
    bill = draft_quotation(server, token)
    with server.client(token, timeout=60) as c:
        s, op_id = propose(server, c, f"把报价单{bill['sBillNo']}的第1行的单价改成17")
        proposal = s["pendingInteraction"]["payload"]
        assert proposal["op"] == "update" and proposal["diff"] == []
        (line,) = proposal["lines"]
        assert line["lineNo"] == 1 and line["change"] == "update"
        assert [(f["field"], f["before"], f["after"]) for f in line["fields"]] == [("unit_price", 18.5, 17)]
        pending = c.post(f"/api/ops/{op_id}/confirm").json()
        assert pending["state"] == "pending", pending
        with server.erp_direct(token) as erp:
            page = erp.get(pending["link"].removeprefix("/erp"))
            assert page.status_code == 200, page.text
            fields = form_fields(page.text)
            assert fields["line0.unit_price"] == "17" and fields["line1.material_id"]  # both lines, the new price
            assert record(server, token, "2001", bill["sId"])["details"][0]["unit_price"] == 18.5  # not yet
            saved = erp.post(f"/form/2001/save?staging={op_id}", data=fields)
            assert saved.status_code == 303, saved.text
        done = c.get(f"/api/ops/{op_id}").json()
        assert done["state"] == "done" and done["billId"] == bill["sId"], done
    lines = record(server, token, "2001", bill["sId"])["details"]
    assert (lines[0]["unit_price"], lines[0]["qty"]) == (17, 5) and len(lines) == 2


def test_a_record_changed_after_the_proposal_fails_the_op_and_writes_nothing(server: ErpServer) -> None:
    token = server.token("sales01")
    bill = draft_quotation(server, token)
    with server.client(token, timeout=60) as c:
        s, op_id = propose(server, c, f"把报价单{bill['sBillNo']}的备注改成新的备注")
        version = record(server, token, "2001", bill["sId"])["master"]["version"]
        erp_write(
            server,
            token,
            {"sFormId": "2001", "handleType": "update", "sId": bill["sId"], "data": {"delivery_days": 9}},
        )
        failed = c.post(f"/api/ops/{op_id}/confirm").json()
        assert failed["state"] == "failed" and "propose again" in failed["error"], failed
        assert failed["retryable"] is False and "可重试" not in failed["text"]  # a retry cannot succeed
        master = record(server, token, "2001", bill["sId"])["master"]
        assert master["remark"] == "原备注" and master["version"] == version + 1
        wait_status(c, s["sessionId"], "SUCCEEDED")


def erp_rows(server: ErpServer, table: str) -> int:
    import sqlalchemy as sa

    url = server.env.get("TETHER_ERP_DATABASE_URL") or f"sqlite:///{server.workdir / 'var' / 'erp.db'}"
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()


def test_a_create_whose_third_line_fails_writes_no_row_and_a_retry_is_safe(server: ErpServer, admin: str) -> None:
    check_a_failing_third_line_writes_nothing(server, admin)


def check_a_failing_third_line_writes_nothing(server: ErpServer, admin: str) -> None:
    """Atomic: an op whose third detail line fails leaves no partial rows; its retry is safe."""
    made = erp_write(
        server, admin, {"sFormId": "1003", "handleType": "add", "data": {"name": "临时物料", "unit": "个", "price": 9}}
    )
    code = record(server, admin, "1003", made["sId"])["master"]["code"]
    tables = ("quotation", "quotation_line", "bill_seq")
    with server.login("sales01") as c:
        s, op_id = propose(server, c, f"给恒达自动化报价：M0001 1个，单价18；M0002 2个，单价22；{code} 1个，单价9")
        assert len(s["pendingInteraction"]["payload"]["lines"]) == 3
        # the third line's material goes away between the proposal and the confirm
        erp_write(server, admin, {"sFormId": "1003", "handleType": "del", "sId": made["sId"]})
        before = {t: erp_rows(server, t) for t in tables}
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "processing"
        failed = wait_op(c, op_id, {"failed", "done"})
        assert failed["state"] == "failed" and "details[2]" in failed["error"], failed
        assert {t: erp_rows(server, t) for t in tables} == before  # no header, no first two lines
        wait_status(c, s["sessionId"], "SUCCEEDED")
        assert "失败" in get_session(c, s["sessionId"])["transcript"][-1]["content"]
        assert c.get(f"/api/ops/{op_id}").json()["retryable"] is True  # a constraint failure: retrying is safe
        again = c.post(f"/api/ops/{op_id}/confirm").json()  # retry from failed: safe, nothing half-written
        assert again["state"] == "processing" and again["attempts"] == 2
        assert wait_op(c, op_id, {"failed", "done"})["state"] == "failed"
        assert {t: erp_rows(server, t) for t in tables} == before


@pytest.mark.slow
@pytest.mark.parametrize("kind", EVERY_DATABASE)
def test_an_op_left_executing_by_a_killed_server_ends_executed_with_the_same_bill(kind: str, tmp_path: Path) -> None:
    """SIGKILL right after the ERP executed and before tether recorded it (the op service's
    ``op-after-execute`` failpoint, injected by serve_with_failpoint.py); the owner's next read
    drives the op again through the idempotent execStaging."""
    for url in fresh_database(kind, tmp_path):
        env = {} if kind == "sqlite" else {"TETHER_DATABASE_URL": url, "TETHER_ERP_DATABASE_URL": url}
        server = ErpServer(tmp_path, TETHER_OP_LEASE_S="1", **env)
        server.launcher = (str(FAILPOINT_SERVE), "op-after-execute")
        _killed_after_the_erp_executed(server)


def _killed_after_the_erp_executed(server: ErpServer) -> None:
    server.start(timeout=180)
    try:
        admin = server.token("admin")
        token = server.token("sales01")
        before = erp_total(server, admin, "2001")
        with server.client(token, timeout=60) as c:
            s, op_id = propose(server, c)
            with contextlib.suppress(httpx.HTTPError):  # the process may die before its answer is out
                c.post(f"/api/ops/{op_id}/confirm")
        assert server.proc is not None
        assert server.proc.wait(timeout=30) == -9  # killed by the failpoint
        server.launcher = ServerProcess.launcher  # the plain tether serve from here on
        server.start(timeout=120)  # the embedded ERP died with it and comes back on the same database
        assert erp_total(server, admin, "2001") == before + 1  # the ERP had executed it
        with server.erp_direct(token) as erp:
            assert erp.get(f"/ai/staging/{op_id}").json()["status"] == "executed"
        with server.client(token, timeout=60) as c:
            stop = c.post(f"/api/agent/sessions/{s['sessionId']}/cancel")  # the write is in flight: not stopped
            assert stop.status_code == 409 and "cannot be stopped" in stop.text, stop.text
            done = wait_op(c, op_id, {"done", "failed"})
            assert done["state"] == "done" and done["attempts"] == 2, done
            with server.erp_direct(token) as erp:
                staged = erp.get(f"/ai/staging/{op_id}").json()
            assert staged["status"] == "executed" and staged["resultBillId"] == done["billId"]
            session = wait_status(c, s["sessionId"], "SUCCEEDED")
            assert done["billNo"] in session["transcript"][-1]["content"]
            assert c.post(f"/api/ops/{op_id}/confirm").json()["billId"] == done["billId"]
        assert erp_total(server, admin, "2001") == before + 1  # one bill, not two
    finally:
        server.stop()


def test_replaying_a_session_that_proposed_proposes_again_and_never_writes(server: ErpServer, admin: str) -> None:
    with server.login("sales01") as c:
        s, op_id = propose(server, c)
        c.post(f"/api/ops/{op_id}/confirm")
        assert wait_op(c, op_id, {"done", "failed"})["state"] == "done"
        session = wait_status(c, s["sessionId"], "SUCCEEDED")
        dsl_id = session["lastDslId"]
        assert dsl_id, "the session compiled no DSL"
        steps = c.get(f"/api/agent/dsl/{dsl_id}").json()["steps"]
        assert [st["toolId"] for st in steps] == ["propose_write"]
        before = erp_total(server, admin, "2001")
        r = c.post(f"/api/agent/dsl/{dsl_id}/execute", json={})
        assert r.status_code == 200, r.text
        run = r.json()
        assert run["status"] == "PROPOSED" and run["steps"][0]["status"] == "PROPOSED", run
        new_op = run["steps"][0]["output"]["payload"]["opId"]
        assert new_op != op_id
        assert c.get(f"/api/ops/{new_op}").json()["state"] == "draft"
        assert erp_total(server, admin, "2001") == before  # the replay wrote nothing
        assert c.post(f"/api/ops/{new_op}/confirm").json()["state"] == "processing"
        assert wait_op(c, new_op, {"done", "failed"})["state"] == "done"
        assert erp_total(server, admin, "2001") == before + 1


def test_the_op_list_filters_by_status_and_session(server: ErpServer) -> None:
    with server.login("sales01") as c:
        s, op_id = propose(server, c)
        drafts = c.get("/api/ops", params={"status": "draft"}).json()["items"]
        assert op_id in [o["opId"] for o in drafts] and all(o["status"] == "draft" for o in drafts)
        assert [o["opId"] for o in c.get("/api/ops", params={"sessionId": s["sessionId"]}).json()["items"]] == [op_id]
        assert c.get("/api/ops", params={"status": "bogus"}).status_code == 422
        everything = c.get("/api/ops").json()["items"]
        assert c.get("/api/ops", params={"status": "", "sessionId": ""}).json()["items"] == everything  # no filter
        c.post(f"/api/ops/{op_id}/cancel")
        assert op_id not in [o["opId"] for o in c.get("/api/ops", params={"status": "draft"}).json()["items"]]


def test_a_lapsed_login_cannot_confirm_and_a_new_login_of_the_same_user_can(server: ErpServer, admin: str) -> None:
    import time

    old = server.token("sales01")
    before = erp_total(server, admin, "2001")
    with server.client(old, timeout=60) as c:
        s, op_id = propose(server, c)
        with server.erp_direct(old) as erp:
            assert erp.post("/logout").status_code == 200
        time.sleep(1.2)  # the identity cache (TETHER_ERP_ME_CACHE_S=1) lets go of the token
        assert c.post(f"/api/ops/{op_id}/confirm").status_code == 401
    with server.login("sales01") as c:  # the same user, a new token: the op is theirs
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "draft"
        assert c.post(f"/api/ops/{op_id}/confirm").json()["state"] == "processing"
        assert wait_op(c, op_id, {"done", "failed"})["state"] == "done"
        wait_status(c, s["sessionId"], "SUCCEEDED")
    assert erp_total(server, admin, "2001") == before + 1
