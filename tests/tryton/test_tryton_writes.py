"""Governed writes on a real Tryton: a model (the local Chat Completions server, scripted) proposes,
the person confirms through ``/api/ops/{opId}/confirm``, and Tryton's own database shows exactly
the approved values, written in the user's own Tryton session, once — also across a server
killed right after Tryton committed. From the attacker's side: a record rewritten in Tryton after
the proposal, a role whose groups may not write sales, another user's op."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.models.chat_server import ChatServer, completion
from tests.servers import ServerProcess, wait_until
from tests.tryton.conftest import PreparedTryton
from tether.tryton import demo_data
from tether.tryton.server import RunningTrytond, copy_database, start_trytond

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
PASSWORDS = {u.login: u.password for u in demo_data.USERS}
FAILPOINT_SERVE = Path(__file__).parents[1] / "packs" / "erp" / "serve_with_failpoint.py"


class Stack:
    def __init__(self, trytond: RunningTrytond, server: ServerProcess, chat: ChatServer) -> None:
        self.trytond = trytond
        self.server = server
        self.chat = chat
        self._calls = 0

    def db(self) -> sqlite3.Connection:
        """Tryton's own database, read beside it (never written)."""
        assert self.trytond.settings.sqlite_file is not None
        return sqlite3.connect(f"file:{self.trytond.settings.sqlite_file}?mode=ro", uri=True)

    def one(self, sql: str, *args: Any) -> Any:
        with contextlib.closing(self.db()) as db:
            return db.execute(sql, args).fetchone()

    def token(self, login: str) -> str:
        r = httpx.post(
            f"{self.server.url}/api/auth/login", json={"username": login, "password": PASSWORDS[login]}, timeout=30
        )
        assert r.status_code == 200, r.text
        return str(r.json()["token"])

    def client(self, login: str) -> httpx.Client:
        return self.server.client(self.token(login), timeout=60.0)

    def turn(self, c: httpx.Client, args: dict[str, Any]) -> dict[str, Any]:
        """A turn whose model calls propose_write with ``args`` (and then says it is done)."""
        self._calls += 1
        call = (f"call_{self._calls}", "propose_write", json.dumps(args, ensure_ascii=False))
        self.chat.push(completion(tool_calls=[call]), completion("已处理。"))
        r = c.post("/api/agent/sessions", json={"message": "把这张销售订单修改为我说的"})
        assert r.status_code == 200, r.text
        session: dict[str, Any] = r.json()
        return session

    def propose(self, c: httpx.Client, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        session = self.turn(c, args)
        assert session["status"] == "WAITING_CONFIRMATION", (session["status"], session["transcript"][-3:])
        return session, session["pendingInteraction"]["payload"]

    def sale_form(self) -> str:
        return str(self.one("select id from ir_model where name = 'sale.sale'")[0])


def serve(tryton_prepared: PreparedTryton, where: Path, chat: ChatServer, **env: str) -> Stack:
    settings = copy_database(tryton_prepared.data_dir, where / "tryton", settings=tryton_prepared.settings)
    trytond = start_trytond(settings)
    server = ServerProcess(
        where,
        {
            "TETHER_PACKS": "tether.erp_demo.pack,tether.packs.erp.pack",
            "TETHER_ERP_KIND": "tryton",
            "TETHER_ERP_BASE_URL": trytond.url,
            "TETHER_ERP_ME_CACHE_S": "0",
            "TETHER_MODEL": "openai",
            "TETHER_MODEL_PROVIDER": "custom",
            "TETHER_MODEL_BASE_URL": chat.base_url,
            "TETHER_MODEL_NAME": "test-model",
            "TETHER_MODEL_API_KEY": "sk-test",
            "TETHER_MODEL_STREAM": "false",
            "TETHER_SKILL_ROUTING": "rules",
            **env,
        },
        stop_timeout=15.0,
    )
    return Stack(trytond, server, chat)


@pytest.fixture(scope="module")
def stack(tryton_prepared: PreparedTryton, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with ChatServer([]) as chat:
        s = serve(tryton_prepared, tmp_path_factory.mktemp("tryton-writes"), chat)
        try:
            s.server.start(timeout=180)
            yield s
        finally:
            s.server.stop()
            s.trytond.stop()


def confirm(c: httpx.Client, op_id: str) -> dict[str, Any]:
    r = c.post(f"/api/ops/{op_id}/confirm")
    assert r.status_code == 200, r.text
    return wait_op(c, op_id, {"done", "failed"})


def wait_op(c: httpx.Client, op_id: str, states: set[str], timeout: float = 30.0) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        body: dict[str, Any] = c.get(f"/api/ops/{op_id}").json()
        return body if body.get("state") in states else None

    return wait_until(check, timeout=timeout, interval=0.1, what=f"op {op_id} to reach {states}")


QUOTE = {"party_id": "华东机电设备有限公司", "details": [{"material_id": "P001", "qty": 40, "unit_price": 1.15}]}


def sale_lines(stack: Stack, sale_id: int) -> list[tuple[Any, ...]]:
    with contextlib.closing(stack.db()) as db:
        return db.execute(
            "select p.code, l.quantity, cast(l.unit_price as real) from sale_line l join product_product p on p.id = l.product "
            "where l.sale = ? order by l.id",
            (sale_id,),
        ).fetchall()


def test_a_proposed_sale_writes_nothing_until_confirmed_then_exactly_the_approved_values_once(stack: Stack) -> None:
    form = stack.sale_form()
    before = stack.one("select count(*) from sale_sale")[0]
    with stack.client("sales") as c:
        _session, proposal = stack.propose(c, {"form_id": form, "op": "create", "payload": QUOTE})
        assert proposal["auto"] is True and proposal["formName"] == "销售订单"
        shown = {f["field"]: f["after"] for f in proposal["diff"]}
        assert "华东机电设备有限公司" in str(shown["party_id"]) and shown["sale_date"]  # today, as Tryton writes it
        assert stack.one("select count(*) from sale_sale")[0] == before  # proposed: nothing in Tryton
        done = confirm(c, proposal["opId"])
        assert done["state"] == "done", done
        sale_id = int(done["billId"])
        party, creator, state, comment = stack.one(
            "select party, create_uid, state, comment from sale_sale where id = ?", sale_id
        )
        assert stack.one("select name from party_party where id = ?", party)[0] == "华东机电设备有限公司"
        assert stack.one("select login from res_user where id = ?", creator)[0] == "sales"  # the user's session
        assert state == "draft" and f"[tether-op:{proposal['opId']}]" in comment
        assert sale_lines(stack, sale_id) == [("P001", 40.0, pytest.approx(1.15))]
        again = c.post(f"/api/ops/{proposal['opId']}/confirm")  # a second confirm: the same sale, no other
        assert again.status_code == 200 and str(again.json().get("billId")) == str(sale_id), again.text
    assert stack.one("select count(*) from sale_sale")[0] == before + 1


def draft_sale(stack: Stack) -> int:
    """A draft sale of the salesperson's, made through tether."""
    with stack.client("sales") as c:
        _s, proposal = stack.propose(c, {"form_id": stack.sale_form(), "op": "create", "payload": QUOTE})
        return int(confirm(c, proposal["opId"])["billId"])


def test_an_update_quote_and_confirm_run_in_trytons_workflow_with_the_diff_shown(stack: Stack) -> None:
    sale = draft_sale(stack)
    form = stack.sale_form()
    with stack.client("sales") as c:
        change = {"description": "加急发货", "details": [{"line_no": 1, "qty": 55}]}
        _s, proposal = stack.propose(c, {"form_id": form, "op": "update", "record_id": str(sale), "payload": change})
        assert {f["field"]: f["after"] for f in proposal["diff"]} == {"description": "加急发货"}
        assert [f["after"] for line in proposal["lines"] for f in line["fields"] if f["field"] == "qty"] == [55]
        assert confirm(c, proposal["opId"])["state"] == "done"
        assert stack.one("select description from sale_sale where id = ?", sale)[0] == "加急发货"
        assert sale_lines(stack, sale) == [("P001", 55.0, pytest.approx(1.15))]
        for to in ("quotation", "confirmed"):
            _s, step = stack.propose(c, {"form_id": form, "op": "examine", "record_id": str(sale)})
            assert [(f["field"], f["after"]) for f in step["diff"]] == [("state", to)]
            assert confirm(c, step["opId"])["state"] == "done"
            state = stack.one("select state from sale_sale where id = ?", sale)[0]
            assert state == to or (to == "confirmed" and state == "processing"), state
        number = stack.one("select number from sale_sale where id = ?", sale)[0]
        assert number  # Tryton numbered it when it was quoted


def test_a_draft_is_deleted_on_confirm_and_only_then(stack: Stack) -> None:
    sale = draft_sale(stack)
    with stack.client("sales") as c:
        _s, proposal = stack.propose(c, {"form_id": stack.sale_form(), "op": "delete", "record_id": str(sale)})
        assert stack.one("select count(*) from sale_sale where id = ?", sale)[0] == 1
        assert confirm(c, proposal["opId"])["state"] == "done"
    assert stack.one("select count(*) from sale_sale where id = ?", sale)[0] == 0


def test_a_sale_rewritten_in_tryton_after_the_proposal_is_not_written(stack: Stack) -> None:
    """The attacker (or a colleague) changes the draft in Tryton between the proposal and the
    confirm: Tryton's own version check refuses the approved write; nothing of it lands."""
    sale = draft_sale(stack)
    with stack.client("sales") as c:
        payload = {"description": "按报价执行"}
        _s, proposal = stack.propose(c, {"form_id": stack.sale_form(), "op": "update", "record_id": str(sale),
                                         "payload": payload})  # fmt: skip
        manager = stack.token("manager")
        direct(stack, manager, "model.sale.sale.write", [sale], {"description": "经理改过", "reference": "X-1"})
        done = confirm(c, proposal["opId"])
        assert done["state"] == "failed" and "changed in Tryton" in str(done.get("error")), done
    assert stack.one("select description from sale_sale where id = ?", sale)[0] == "经理改过"


def test_a_role_whose_groups_may_not_write_sales_cannot_propose_nor_confirm(stack: Stack) -> None:
    sale = draft_sale(stack)
    with stack.client("stock") as c:  # the stock keeper reads no sales in Tryton: not a form of theirs
        refused = stack.turn(c, {"form_id": stack.sale_form(), "op": "delete", "record_id": str(sale)})
        assert refused["status"] != "WAITING_CONFIRMATION" and refused.get("pendingInteraction") is None
        said = json.dumps(refused["transcript"], ensure_ascii=False)
        assert "no such form or no access" in said or "not granted" in said or "erp.no_access" in said, said[-600:]
        assert c.get("/api/ops").json().get("items") == []  # nothing proposed
    with stack.client("sales") as c:
        _s, proposal = stack.propose(c, {"form_id": stack.sale_form(), "op": "delete", "record_id": str(sale)})
    with stack.client("stock") as c:  # another user's op: not theirs to see or confirm
        assert c.post(f"/api/ops/{proposal['opId']}/confirm").status_code == 404
    assert stack.one("select count(*) from sale_sale where id = ?", sale)[0] == 1


def direct(stack: Stack, token: str, method: str, *params: Any) -> Any:
    """Tryton itself over JSON-RPC in ``token``'s session (tether's token is that session)."""
    body = {"id": 1, "method": method, "params": [*params, {"language": "zh_CN"}]}
    r = httpx.post(stack.trytond.rpc_url, json=body, headers={"Authorization": f"Session {token}"}, timeout=30)
    assert r.status_code == 200 and r.json().get("error") is None, r.text
    return r.json()["result"]


def test_a_server_killed_after_tryton_committed_ends_with_the_same_sale_never_two(
    tryton_prepared: PreparedTryton, tmp_path: Path
) -> None:
    """SIGKILL right after Tryton created the sale and before tether recorded it (the op service's
    ``op-after-execute`` failpoint): the restarted server drives the op again, finds its mark on
    the sale and records that sale; Tryton holds one."""
    with ChatServer([]) as chat:
        s = serve(tryton_prepared, tmp_path, chat, TETHER_OP_LEASE_S="1")
        s.server.launcher = (str(FAILPOINT_SERVE), "op-after-execute")
        try:
            s.server.start(timeout=180)
            before = s.one("select count(*) from sale_sale")[0]
            with s.client("sales") as c:
                _session, proposal = s.propose(c, {"form_id": s.sale_form(), "op": "create", "payload": QUOTE})
                with contextlib.suppress(httpx.HTTPError):
                    c.post(f"/api/ops/{proposal['opId']}/confirm")
            assert s.server.proc is not None and s.server.proc.wait(timeout=30) == -9
            assert s.one("select count(*) from sale_sale")[0] == before + 1  # Tryton had committed it
            s.server.launcher = ServerProcess.launcher
            s.server.start(timeout=120)
            with s.client("sales") as c:
                done = wait_op(c, proposal["opId"], {"done", "failed"}, timeout=60)
            assert done["state"] == "done" and done["attempts"] == 2, done
            marked = s.one("select id from sale_sale where comment like ?", f"%{proposal['opId']}%")[0]
            assert int(done["billId"]) == marked
            assert s.one("select count(*) from sale_sale")[0] == before + 1  # one sale, not two
        finally:
            s.server.stop()
            s.trytond.stop()


POLICY = """
rules:
  - name: big-sale
    forms: ["sale.sale"]          # by Tryton's model: the form id is the database's
    ops: [create, update]
    when:
      - total_above: 10000
    approvers:
      - {grant: approve.sales, count: 1}
"""


def test_a_big_sale_waits_for_the_sales_manager_tryton_names_and_runs_once_approved(
    tryton_prepared: PreparedTryton, tmp_path: Path
) -> None:
    """The approver is whom Tryton's groups make one (sale.group_sale_admin → approve.sales): the
    salesperson's confirm holds the op, nothing reaches Tryton until the manager approves, and
    the salesperson cannot approve their own."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    with ChatServer([]) as chat:
        s = serve(tryton_prepared, tmp_path, chat, TETHER_APPROVAL_POLICIES=str(policy))
        try:
            s.server.start(timeout=180)
            before = s.one("select count(*) from sale_sale")[0]
            big = {**QUOTE, "details": [{"material_id": "P001", "qty": 10000, "unit_price": 1.2}]}
            with s.client("sales") as c:
                _session, proposal = s.propose(c, {"form_id": s.sale_form(), "op": "create", "payload": big})
                held = c.post(f"/api/ops/{proposal['opId']}/confirm").json()
                assert held["state"] == "awaiting_approval" and held["approval"]["rules"] == ["big-sale"], held
                assert c.post(f"/api/approvals/{proposal['opId']}/approve").status_code in (403, 404)
            assert s.one("select count(*) from sale_sale")[0] == before  # held: nothing in Tryton
            with s.client("manager") as m:
                approved = m.post(f"/api/approvals/{proposal['opId']}/approve")
                assert approved.status_code == 200, approved.text
            with s.client("sales") as c:
                done = wait_op(c, proposal["opId"], {"done", "failed"})
            assert done["state"] == "done", done
            assert sale_lines(s, int(done["billId"])) == [("P001", 10000.0, pytest.approx(1.2))]
            assert s.one("select count(*) from sale_sale")[0] == before + 1
        finally:
            s.server.stop()
            s.trytond.stop()
