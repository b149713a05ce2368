"""The ERP assistant on a real Tryton: ``tether serve`` with ``TETHER_ERP_KIND=tryton`` against a
``trytond`` serving a copy of the prepared demo company. Logins are Tryton's, every read runs in
the user's own Tryton session, a model the user's groups cannot read is no form of theirs, and
the numbers tether answers with are the ones Tryton itself gives that user (asked directly over
JSON-RPC beside it). Also from the attacker's side: another role's model through the tool API,
the direct-SQL tools, a session Tryton revoked, and Tryton down."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import ServerProcess
from tests.tryton.conftest import PreparedTryton
from tether.errors import ConfigError
from tether.packs.erp.tryton_client import TrytonClient
from tether.packs.erp.tryton_forms import FORMS
from tether.packs.erp.tryton_rpc import TrytonRpc
from tether.tryton import demo_data
from tether.tryton.demo import QUESTIONS, ask_each_role
from tether.tryton.server import RunningTrytond, copy_database, start_trytond

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
PASSWORDS = {u.login: u.password for u in demo_data.USERS}


class Stack:
    def __init__(self, trytond: RunningTrytond, server: ServerProcess) -> None:
        self.trytond = trytond
        self.server = server

    def token(self, login: str) -> str:
        r = httpx.post(
            f"{self.server.url}/api/auth/login", json={"username": login, "password": PASSWORDS[login]}, timeout=30
        )
        assert r.status_code == 200, r.text
        return str(r.json()["token"])

    def client(self, login: str) -> httpx.Client:
        return self.server.client(self.token(login), timeout=60.0)

    def direct(self, token: str, method: str, *params: Any) -> Any:
        """Tryton itself, in the same session: what Tryton alone hands this user."""

        async def call() -> Any:
            rpc = TrytonRpc(self.trytond.url, self.trytond.database)
            try:
                if method == "common.db.logout":
                    return await rpc.logout(f"Session {token}")
                return await rpc.call(f"Session {token}", method, *params, context={"language": "zh_CN"})
            finally:
                await rpc.aclose()

        return asyncio.run(call())


@pytest.fixture(scope="module")
def stack(tryton_prepared: PreparedTryton, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    where: Path = tmp_path_factory.mktemp("tryton-erp")
    settings = copy_database(tryton_prepared.data_dir, where / "tryton", settings=tryton_prepared.settings)
    trytond = start_trytond(settings)
    env = {
        "TETHER_PACKS": "tether.erp_demo.pack,tether.packs.erp.pack",  # the demo ERP stands aside on its own
        "TETHER_ERP_KIND": "tryton",
        "TETHER_ERP_BASE_URL": trytond.url,
        "TETHER_ERP_ME_CACHE_S": "0",
        "TETHER_ERP_BREAKER_FAILURES": "1",
    }
    server = ServerProcess(where, env, stop_timeout=15.0)
    try:
        server.start(timeout=180)
        yield Stack(trytond, server)
    finally:
        server.stop()
        trytond.stop()


def ask(c: httpx.Client, message: str) -> dict[str, Any]:
    r = c.post("/api/agent/sessions", json={"message": message})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def answer(session: dict[str, Any]) -> str:
    return str(session["transcript"][-1].get("content") or "")


def test_a_login_is_trytons_and_the_forms_are_what_trytons_rights_let_the_user_read(stack: Stack) -> None:
    wrong = httpx.post(f"{stack.server.url}/api/auth/login", json={"username": "sales", "password": "nope-nope"})
    assert wrong.status_code == 401
    for login in ("sales", "stock", "accountant"):
        token = stack.token(login)
        assert stack.direct(token, "model.res.user.get_preferences", True)["groups"]
        access = stack.direct(token, "model.ir.model.access.get_access", [f.model for f in FORMS])
        models = stack.direct(token, "model.ir.model.search_read", [["name", "in", [f.model for f in FORMS]]], 0,
                              None, None, ["name"])  # fmt: skip
        readable = {str(m["id"]) for m in models if access[m["name"]]["read"]}
        with stack.server.client(token) as c:
            me = c.get("/api/auth/me").json()
        assert set(me["grants"]) == readable, login
        assert me["provider"] == "erp" and me["profile"]["username"] == login
    sales = {m: stack.direct(stack.token("sales"), "model.ir.model.access.get_access", [m])[m]["read"]
             for m in ("sale.sale", "purchase.purchase")}  # fmt: skip
    assert sales == {"sale.sale": 1, "purchase.purchase": 0}  # the demo's groups: a real difference to test


def test_each_user_reads_the_forms_in_their_own_tryton_language(stack: Stack) -> None:
    PASSWORDS.setdefault("admin", demo_data.ADMIN_PASSWORD)  # Tryton's administrator works in English
    names = {}
    for login in ("sales", "admin", "sales"):
        with stack.client(login) as c:
            forms = c.post("/tools/find-forms", json={"query": ""}).json()["data"]["forms"]
        names[login] = {f["name"] for f in forms}
    assert "销售订单" in names["sales"] and "Sale" not in names["sales"]
    assert "Sale" in names["admin"] and "销售订单" not in names["admin"]


def test_questions_are_answered_with_what_tryton_gives_the_user(stack: Stack) -> None:
    token = stack.token("sales")
    drafts = stack.direct(token, "model.sale.sale.search_count", [["state", "=", "draft"]])
    totals = stack.direct(token, "model.sale.sale.search_read", [], 0, None, None, ["total_amount"])
    total = sum(Decimal(r["total_amount"]["decimal"]) for r in totals)
    shanghai = stack.direct(token, "model.party.party.search_read", [["addresses.city", "=", "上海"]], 0, None, None,
                            ["name"])  # fmt: skip
    with stack.server.client(token) as c:
        counted = ask(c, "草稿状态的销售订单有几张")
        assert counted["outcome"] == "answered" and f"共 {drafts} 条" in answer(counted), answer(counted)
        summed = ask(c, "销售订单含税合计一共多少")
        assert f"{total:,.2f}" in answer(summed), answer(summed)
        assert {s["toolId"] for s in summed["executedSteps"]} == {"read_question", "summarize_form_data"}
        listed = ask(c, "城市是上海的往来单位")
        assert listed["outcome"] == "answered", answer(listed)
        assert all(p["name"] in answer(listed) for p in shanghai) and "北京市" not in answer(listed)


def test_another_roles_model_is_refused_and_nothing_of_it_is_read(stack: Stack) -> None:
    with stack.client("sales") as c:
        refused = ask(c, "有哪些采购订单")
        assert refused["outcome"] == "not_granted" and "采购订单" in answer(refused)
        assert [s["toolId"] for s in refused["executedSteps"]] == ["read_question"]
        forms = c.post("/tools/find-forms", json={"query": "采购"}).json()
        purchase = next(str(f["formId"]) for f in form_ids(stack) if f["model"] == "purchase.purchase")
        assert purchase not in str(forms)
        read = c.post("/tools/read-form-data", json={"form_id": purchase, "filters": {}})
        assert read.status_code in (200, 403, 404) and "宝山钢材" not in read.text  # a supplier's name
        assert "no such form or no access" in read.text or read.status_code != 200
        for direct_sql in ("query-data", "kg-search"):  # tether never reads Tryton's tables
            r = c.post(f"/tools/{direct_sql}", json={"question": "采购订单", "sql": "SELECT * FROM purchase_purchase"})
            assert r.status_code == 404, r.text


def form_ids(stack: Stack) -> list[dict[str, Any]]:
    token = stack.token("manager")
    rows = stack.direct(token, "model.ir.model.search_read", [["name", "in", [f.model for f in FORMS]]], 0, None,
                        None, ["name"])  # fmt: skip
    return [{"formId": r["id"], "model": r["name"]} for r in rows]


def test_a_session_tryton_revoked_is_refused_at_once_and_a_new_login_has_the_same_conversations(
    stack: Stack,
) -> None:
    token = stack.token("sales")
    with stack.server.client(token) as c:
        assert c.get("/api/auth/me").status_code == 200
        kept = ask(c, "草稿状态的销售订单有几张")
        stack.direct(token, "common.db.logout")  # revoked in Tryton itself, not through tether
        assert c.get("/api/auth/me").status_code == 401
        assert ask_status(c) == 401
        assert (
            c.post(f"/api/agent/sessions/{kept['sessionId']}/messages", json={"message": "有几张"}).status_code == 401
        )
    with stack.client("sales") as again:  # a new Tryton login: the same person, the same conversations
        listed = again.get("/api/agent/sessions").json()["items"]
        assert kept["sessionId"] in [s["sessionId"] for s in listed]
        more = again.post(
            f"/api/agent/sessions/{kept['sessionId']}/messages", json={"message": "已完成的销售订单有几张"}
        )
        assert more.status_code == 200 and more.json()["outcome"] == "answered", more.text


def ask_status(c: httpx.Client) -> int:
    return c.post("/api/agent/sessions", json={"message": "草稿状态的销售订单有几张"}).status_code


def test_the_demos_questions_are_answered_per_role_and_refused_where_trytons_rights_say(stack: Stack) -> None:
    out = io.StringIO()
    answered = ask_each_role(stack.server.url, PASSWORDS, out)
    text = out.getvalue()
    assert answered >= sum(len(q) for _, q in QUESTIONS) - 2, text  # the two refusals below
    assert "您没有采购订单的权限" in text.split("== stock")[0]  # sales may not read purchases
    assert "您没有发票的权限" in text.split("== stock")[1].split("== accountant")[0]
    assert "宝山钢材供应有限公司" in text.split("== manager")[1]  # the manager reads the purchases


def test_doctor_checks_tryton_and_a_login_through_it(stack: Stack) -> None:
    def doctor(password: str) -> subprocess.CompletedProcess[str]:
        env = {**stack.server.env, "TETHER_ERP_CHECK_USER": "sales", "TETHER_ERP_CHECK_PASSWORD": password}
        cmd = [sys.executable, "-m", "tether.cli", "doctor"]
        return subprocess.run(cmd, cwd=stack.server.workdir, env=env, capture_output=True, text=True, timeout=120)

    good = doctor(PASSWORDS["sales"])
    assert good.returncode == 0, good.stdout + good.stderr
    assert "logged in as sales" in good.stdout and PASSWORDS["sales"] not in good.stdout
    bad = doctor("not-the-password")
    assert bad.returncode == 1 and "refused the login of sales" in bad.stdout, bad.stdout


def test_an_approver_group_tryton_does_not_have_is_a_config_error_naming_the_setting(stack: Stack) -> None:
    """TETHER_ERP_TRYTON_APPROVERS with a group no module of the database defines: the first
    login's ``me`` says so as the operator's mistake, not as Tryton failing (an outage, a 503)."""

    async def me_with(approvers: dict[str, str]) -> dict[str, Any]:
        client = TrytonClient(stack.trytond.url, stack.trytond.database, approvers=approvers)
        try:
            session = await client.login("manager", PASSWORDS["manager"])
            return await client.me(session["token"])
        finally:
            await client.aclose()

    bad = {"sale.group_sale_admin": "approve.sales", "sale.no_such_group": "approve.sales"}
    with pytest.raises(ConfigError) as refused:
        asyncio.run(me_with(bad))
    assert "TETHER_ERP_TRYTON_APPROVERS" in str(refused.value) and "sale.no_such_group" in str(refused.value)
    assert "approve.sales" in asyncio.run(me_with({"sale.group_sale_admin": "approve.sales"}))["sAuthsId"]


def test_tryton_down_is_503_with_retry_after_never_a_login_refused(stack: Stack) -> None:
    token = stack.token("sales")
    with stack.server.client(token) as c:
        stack.trytond.stop()  # the module's last test: Tryton is gone for good
        for path in ("/api/auth/me", "/api/agent/sessions"):
            down = c.get(path)
            assert down.status_code == 503 and int(down.headers["Retry-After"]) >= 1, down.text
            assert token not in down.text
