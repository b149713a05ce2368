"""``make demo`` / ``tether demo``: start the server on the embedded default (SQLite, the offline
planner, the demo data set), run the main job — seed 000's first example — with a readable
progress display, show where the report is, replay the compiled workflow for another business
line without the model, then keep serving (``--no-serve`` exits instead).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

import httpx

from tether.progress import Progress, follow_session
from tether.settings import Settings

MAIN_QUESTION = "请分析最近30天贵金属规则调整相关的客服问题并生成报告"


def _start_server(settings: Settings, host: str, port: int, out: TextIO) -> Any:
    import uvicorn

    from tether.app.main import create_app

    out.write("preparing the embedded default (database, demo data, worker)…\n")
    out.flush()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 180
    while not server.started and time.monotonic() < deadline:
        if not thread.is_alive():
            raise SystemExit(f"tether: the server did not start (is port {port} free?)")
        time.sleep(0.1)
    return server


def _report_links(session: dict[str, Any]) -> list[str]:
    for step in reversed(session.get("executedSteps") or []):
        result = step.get("result") or {}
        if step.get("toolId") == "build_keyword_report" and isinstance(result, dict):
            return [result.get("path", ""), result.get("url", "")]
    return []


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
                shown = json.dumps(step["output"], ensure_ascii=False)[:100]
                out.write(f"  {step['stepId']} {step['toolId']:<24} {step['status']}  {shown}\n")
            out.write(f"replay {replay.get('status')}: {replay.get('error') or 'ok'}\n")
    code = 0 if status == "SUCCEEDED" else 1
    if serve:
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
