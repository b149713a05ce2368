"""``make demo`` / ``tether demo``: start the server on the embedded default (SQLite, the offline
planner, the demo data set), run the main job — seed 000's first example — with a readable
progress display, show where the report is, replay the compiled workflow for another business
line without the model; then, with the demo ERP, a read as fin01 and two governed writes as
sales01 (a change: its diff, the confirm, the prefill link; a new quotation: confirmed, executed,
its bill) — then keep serving (``--no-serve`` exits instead).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any, TextIO

import httpx

from tether.demo_scratch import scratch_settings
from tether.progress import Progress, follow_session
from tether.settings import Settings

MAIN_QUESTION = "请分析最近30天贵金属规则调整相关的客服问题并生成报告"
ERP_USER = "fin01"


def erp_question() -> str:
    from tether.erp_demo import facts

    return f"{facts.OVERDUE_CUSTOMER_1[1]}的应收账款有多少超期了？"


def _erp_users(out: TextIO) -> None:
    from tether.erp_demo import facts

    out.write(f"ERP users (password {facts.PASSWORD}; log in with `tether login <user>` or POST /api/auth/login):\n")
    for user, (name, brand, forms, scope) in facts.USERS.items():
        rows = "own customers" if scope == "own" else "all rows"
        grants = [f for f in forms if not f.isdigit()]
        approves = f"  approves: {','.join(grants)}" if grants else ""
        forms = tuple(f for f in forms if f.isdigit())
        out.write(f"  {user:<8} {name:<6} brand {brand}  forms {','.join(forms)}  ({rows}){approves}\n")


CHAT_USER = "sales01"


CHAT_CUSTOMER = "恒达自动化"  # sales01's customer, by a part of its name (the planner's fuzzy match)


def chat_examples(bill_no: str) -> list[tuple[str, str]]:
    """(what to type on the chat page as sales01, what happens): the three governed-write flows;
    ``bill_no``: the seeded quotation waiting for revision."""
    customer = CHAT_CUSTOMER
    return [
        (
            f"把报价单{bill_no}的备注改成请按新价格重新报价",
            "a before → after card → 确认 → 待处理 [去ERP操作] → the prefilled ERP form → 保存 "
            "(the ERP asks for its own login once: the same user and password) → back on /chat, reload: ✅ 已完成",
        ),
        (
            f"新建一张报价单给{customer}",
            "a form → fill in a line (物料 M0003, 数量 4) → 提交 → the proposal → 确认 → 处理中 → ✅ 已完成 [查看] the bill",
        ),
        (f"给{customer}报价：M0003 10个，单价46", "a complete proposal at once → 确认 → ✅ 已完成 with the bill"),
    ]


def chat_help(url: str, bill_no: str | None) -> str:
    """How a new user tries the chat page: where it is, how to log in, what to type (the ERP
    flows when the demo ERP is there: ``bill_no`` is its quotation waiting for revision)."""
    from tether.erp_demo import facts

    lines = [f"the chat page: {url}/chat"]
    if bill_no:
        name = facts.USERS[CHAT_USER][0]
        lines.append(
            f"  log in with the 「ERP 账号」 tab as {CHAT_USER} / {facts.PASSWORD} ({name}, a salesperson), then type:"
        )
        for query, outcome in chat_examples(bill_no):
            lines += [f"    {query}", f"      → {outcome}"]
    lines.append(f"  or the 「开发令牌」 tab with a dev token, and ask: {MAIN_QUESTION}")
    return "\n".join(lines) + "\n"


def _log_in(http: httpx.Client, user: str, out: TextIO) -> bool:
    """Log ``http`` in to tether as an ERP user (the demo password); say why when it cannot."""
    from tether.erp_demo import facts

    r = http.post("/api/auth/login", json={"username": user, "password": facts.PASSWORD})
    if r.status_code != 200:
        out.write(f"ERP login as {user} failed: {r.status_code} {r.text[:200]}\n")
        return False
    http.headers["Authorization"] = f"Bearer {r.json()['token']}"
    return True


def _erp_example(url: str, out: TextIO) -> str:
    """The ERP example: log in as fin01 and ask the overdue-receivables question."""

    with httpx.Client(base_url=url, timeout=60) as http:
        if not _log_in(http, ERP_USER, out):
            return "FAILED"
        question = erp_question()
        out.write(f"\nERP example, as {ERP_USER}: {question}\n")
        r = http.post("/api/agent/sessions", params={"wait": "false"}, json={"message": question})
        r.raise_for_status()
        session_id = r.json()["sessionId"]
        status = follow_session(http, session_id, Progress(out), timeout_s=120)
        out.write(f"\nsession {session_id}: {status}\n")
        return status


def _wait_op(http: httpx.Client, op_id: str, states: set[str], timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        op: dict[str, Any] = http.get(f"/api/ops/{op_id}").json()
        if op.get("state") in states or time.monotonic() > deadline:
            return op
        time.sleep(0.2)


def _propose_and_confirm(http: httpx.Client, url: str, question: str, out: TextIO) -> bool:
    """One governed write: the proposal (its diff shown), the person's confirm over HTTP, the outcome."""
    out.write(f"\nas {CHAT_USER}: {question}\n")
    r = http.post("/api/agent/sessions", params={"wait": "false"}, json={"message": question})
    r.raise_for_status()
    session_id = r.json()["sessionId"]
    progress = Progress(out)
    status = follow_session(http, session_id, progress, timeout_s=120)
    pending = http.get(f"/api/agent/sessions/{session_id}").json().get("pendingInteraction") or {}
    if status != "WAITING_CONFIRMATION" or pending.get("kind") != "proposal":
        out.write(f"expected a write proposal, the session is {status}\n")
        return False
    op_id = pending["payload"]["opId"]
    out.write(f"confirming op {op_id[:12]}… (POST /api/ops/{{opId}}/confirm: no model involved)\n")
    op = http.post(f"/api/ops/{op_id}/confirm").json()
    out.write(f"  → {op['state']}: {op.get('text') or ''}\n")
    if op["state"] == "processing":
        op = _wait_op(http, op_id, {"done", "failed"})
        out.write(f"  → {op['state']}: {op.get('text') or op.get('error') or ''}\n")
    if op.get("link"):
        out.write(f"  link: {url}{op['link']}\n")
    if op["state"] == "pending":
        out.write("  (a manual op: open the link, log in to the ERP page and Save there; the op then reads executed)\n")
    final = follow_session(http, session_id, progress, timeout_s=60)  # the outcome resumes the session
    out.write(f"session {session_id}: {final}\n")
    return op["state"] in ("pending", "done") and final == "SUCCEEDED"


def _erp_write_example(url: str, bill_no: str, out: TextIO) -> str:
    """The governed writes, as sales01: a quotation's change (manual: a diff, the confirm, a
    prefill link) and a new quotation (auto: confirm, the ERP executes, a bill link)."""
    with httpx.Client(base_url=url, timeout=60) as http:
        if not _log_in(http, CHAT_USER, out):
            return "FAILED"
        out.write("\nGoverned writes: a proposal shows its diff; only the confirm endpoint carries it out.\n")
        questions = (f"把报价单{bill_no}的交期(天)改成15", f"给{CHAT_CUSTOMER}报价：M0003 10个，单价46")
        ok = all([_propose_and_confirm(http, url, q, out) for q in questions])
        return "SUCCEEDED" if ok else "FAILED"


APPROVER = "mgr01"


def _approval_example(url: str, out: TextIO) -> str:
    """An approval: sales01's 92,000 元 quotation waits after the confirm; mgr01 (the sales
    manager) sees it in GET /api/approvals and approves it; the ERP then executes it."""
    with httpx.Client(base_url=url, timeout=60) as sales, httpx.Client(base_url=url, timeout=60) as mgr:
        if not _log_in(sales, CHAT_USER, out) or not _log_in(mgr, APPROVER, out):
            return "FAILED"
        question = f"给{CHAT_CUSTOMER}报价：M0003 2000个，单价46"
        out.write(
            f"\nApprovals (TETHER_APPROVAL_POLICIES): a quotation over 50,000 元 needs a sales manager.\nas {CHAT_USER}: {question}\n"
        )
        r = sales.post("/api/agent/sessions", params={"wait": "false"}, json={"message": question})
        r.raise_for_status()
        session_id = r.json()["sessionId"]
        progress = Progress(out)
        follow_session(sales, session_id, progress, timeout_s=120)
        pending = sales.get(f"/api/agent/sessions/{session_id}").json().get("pendingInteraction") or {}
        if pending.get("kind") != "proposal":
            out.write("expected a write proposal\n")
            return "FAILED"
        op_id = pending["payload"]["opId"]
        held = sales.post(f"/api/ops/{op_id}/confirm").json()
        waiting = ", ".join(f"{w['count']}× {w['grant']}" for w in (held.get("approval") or {}).get("waitingFor", []))
        out.write(f"  {CHAT_USER} confirms → {held['state']}: {held.get('text')} (waiting for {waiting or '—'})\n")
        items = mgr.get("/api/approvals", params={"status": "pending"}).json()["items"]
        mine = next((i for i in items if i["opId"] == op_id), None)
        if mine is None:
            out.write(f"  {APPROVER} does not see it under GET /api/approvals\n")
            return "FAILED"
        out.write(f"  {APPROVER} sees it (GET /api/approvals): {mine['summary']}, requested by {mine['requester']}\n")
        approved = mgr.post(f"/api/approvals/{op_id}/approve").json()
        out.write(f"  {APPROVER} approves → {approved['state']}\n")
        op = _wait_op(sales, op_id, {"done", "failed"})
        out.write(f"  → {op['state']}: {op.get('text') or op.get('error') or ''}\n")
        final = follow_session(sales, session_id, progress, timeout_s=60)
        out.write(f"session {session_id}: {final}\n")
        return "SUCCEEDED" if op["state"] == "done" and held["state"] == "awaiting_approval" else "FAILED"


def _revision_bill_no(url: str) -> str:
    """The seeded quotation waiting for revision, as the ERP numbered it (its number carries the
    month the ERP was seeded, which may be before today's)."""
    from tether.erp_demo import facts

    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            r = http.post("/api/auth/login", json={"username": CHAT_USER, "password": facts.PASSWORD})
            r.raise_for_status()
            headers = {"Authorization": f"Bearer {r.json()['token']}"}
            path = f"/erp/getBusinessDataById/2001/{facts.REVISION_QUOTATION_ID}"
            r = http.get(path, headers={"Authorization": r.json()["token"]})
            r.raise_for_status()
            http.post("/api/auth/logout", headers=headers)
            return str(r.json()["master"]["bill_no"])
    except (httpx.HTTPError, KeyError, ValueError):
        return facts.REVISION_QUOTATION_BILL_NO


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _stop_server(server: Any, timeout_s: float = 30) -> None:
    """Stop a server ``_start_server`` started, and wait for its shutdown (workers, pools)."""
    server.should_exit = True
    server.demo_thread.join(timeout_s)


def _start_server(settings: Settings, host: str, port: int, out: TextIO, quiet: bool = False) -> Any:
    import uvicorn

    from tether.app.main import create_app
    from tether.wiring import check_schemas

    if not quiet:
        out.write("preparing the embedded default (database, demo data, worker)…\n")
        out.flush()
    app = create_app(settings)
    check_schemas(app.state.services)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    server.demo_thread = thread  # type: ignore[attr-defined]
    deadline = time.monotonic() + 180
    while not server.started and time.monotonic() < deadline:
        if not thread.is_alive():
            raise SystemExit(f"tether: the server did not start (is port {port} free?)")
        time.sleep(0.1)
    return server


def replay_gist(output: Any, width: int = 120) -> str:
    """A replayed step's output on one line, as a person reads it: the handle's count, the
    analysis' headline finding, the report's title and URL; anything else as JSON, cut at ``width``."""
    if isinstance(output, dict):
        if "handle_id" in output and "total" in output:
            return f"{output['total']} matching sessions, kept behind handle {output['handle_id']}"
        if "analysis_id" in output and "documents" in output:
            lines = str(output.get("summary") or "").splitlines()
            return f"{output['documents']} conversations analysed" + (f": {lines[0]}" if lines else "")
        if "report_id" in output and "url" in output:
            return f"{output.get('title') or output['report_id']}: {output['url']}"
    text = json.dumps(output, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def _report_links(session: dict[str, Any]) -> list[str]:
    for step in reversed(session.get("executedSteps") or []):
        result = step.get("result") or {}
        if step.get("toolId") == "build_keyword_report" and isinstance(result, dict):
            return [result.get("path", ""), result.get("url", "")]
    return []


def _erp_examples_here(server: Any, url: str, bill_no: str, out: TextIO) -> str:
    """The ERP examples on ``url``'s server: the read, the two writes, the approval."""
    status = _erp_example(url, out)
    if status == "SUCCEEDED":
        status = _erp_write_example(url, bill_no, out)
    if status == "SUCCEEDED" and server.config.app.state.services.ops.approvals is not None:
        status = _approval_example(url, out)
    return status


def _erp_examples(settings: Settings, host: str, bill_no: str, out: TextIO) -> str | None:
    """The ERP examples on a scratch copy of the ERP's data (``demo_scratch``), so that what they
    write is not in the data the person explores afterwards; None where the ERP is not a SQLite
    file (the examples then run on the serving server, and write there)."""
    port = _free_port(host)
    with scratch_settings(settings, f"http://{host}:{port}") as scratch:
        if scratch is None:
            out.write("(the ERP is on a database server: the examples below write into it)\n")
            return None
        out.write(
            f"(the examples below run on a scratch copy of the ERP's data at http://{host}:{port}, removed "
            "afterwards: their bills and links are not in the data the chat page shows you)\n"
        )
        server = _start_server(scratch, host, port, out, quiet=True)
        try:
            return _erp_examples_here(server, f"http://{host}:{port}", bill_no, out)
        finally:
            _stop_server(server)


def run_demo(settings: Settings, host: str, port: int, serve: bool = True) -> int:
    out = sys.stdout
    server = _start_server(settings, host, port, out)
    url = f"http://{host}:{port}"
    out.write(f"tether is serving at {url}  (API docs: {url}/docs)\n")
    users = ", ".join(f"{t} ({v['userId']}@{v['tenant']})" for t, v in settings.dev_tokens.items())
    out.write(f"dev tokens: {users}\n\n")
    token = next(iter(settings.dev_tokens))
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        out.write(f"asking: {MAIN_QUESTION}\n")
        r = http.post("/api/agent/sessions", params={"wait": "false"}, json={"message": MAIN_QUESTION})
        r.raise_for_status()
        session_id = r.json()["sessionId"]
        status = follow_session(http, session_id, Progress(out), timeout_s=300)
        session = http.get(f"/api/agent/sessions/{session_id}").json()
        out.write(f"\nsession {session_id}: {status}\n")
        links = _report_links(session)
        if links:
            out.write(
                f"report: {links[0]}\n        {links[1]}  (send the bearer token, e.g. curl -H "
                f"'Authorization: Bearer {token}')\n"
            )
        dsl_id = session.get("lastDslId")
        if dsl_id:
            out.write(f"\nreplaying workflow {dsl_id} for business line forex, without the model:\n")
            replay = http.post(f"/api/agent/dsl/{dsl_id}/execute", json={"business_line": "forex"}, timeout=300).json()
            for step in replay.get("steps", []):
                out.write(f"  {step['stepId']} {step['toolId']:<24} {step['status']}  {replay_gist(step['output'])}\n")
            out.write(f"replay {replay.get('status')}: {replay.get('error') or 'ok'}\n")
    erp_status, bill_no = "SKIPPED", None
    if any(p.name == "erp" for p in server.config.app.state.services.packs):
        out.write("\n")
        _erp_users(out)
        bill_no = _revision_bill_no(url)
        erp_status = _erp_examples(settings, host, bill_no, out) or _erp_examples_here(server, url, bill_no, out)
    code = 0 if status == "SUCCEEDED" and erp_status in ("SUCCEEDED", "SKIPPED") else 1
    if serve:
        out.write("\n" + chat_help(url, bill_no))
        out.write(f"\nstill serving at {url} — Ctrl-C to stop.\n")
        out.flush()
        try:
            while not server.should_exit:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    server.should_exit = True
    time.sleep(1.0)
    return code
