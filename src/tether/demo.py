"""``make demo`` / ``tether demo``: start the server on the embedded default, run the main job
with a readable progress display, replay its compiled workflow, then keep serving.

The example pack's async tool hands its jobs to a file outbox; the demo plays the carrier that
answers them over HTTP, as an external system would.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tether.progress import Progress, follow_session
from tether.settings import Settings

MAIN_QUESTION = "What does order A-1001 cost in USD, and what would shipping cost?"
OUTBOX = Path("var/example-outbox")


def _carrier(stop: threading.Event) -> None:
    """Answer every job in the outbox with a quote, through the authenticated callback."""
    while not stop.is_set():
        for path in sorted(OUTBOX.glob("*.json")) if OUTBOX.exists() else []:
            job = json.loads(path.read_text())
            quote = {"carrier": "SF Express", "price": 36.0, "currency": "CNY", "orderId": job["orderId"]}
            try:
                httpx.post(
                    job["callbackUrl"],
                    json={"externalJobId": job["externalJobId"], "status": "SUCCEEDED", "payload": quote},
                    headers={"X-Tether-Callback-Token": job["callbackToken"]},
                    timeout=10,
                )
            except httpx.HTTPError:
                continue
            path.unlink(missing_ok=True)
        stop.wait(0.3)


def _start_server(settings: Settings, host: str, port: int) -> Any:
    import uvicorn

    from tether.app.main import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(settings), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        if not thread.is_alive():
            raise SystemExit(f"tether: the server did not start (is port {port} free?)")
        time.sleep(0.1)
    return server


def run_demo(settings: Settings, host: str, port: int, serve: bool = True) -> int:
    out = sys.stdout
    server = _start_server(settings, host, port)
    url = f"http://{host}:{port}"
    out.write(f"tether is serving at {url}  (API docs: {url}/docs)\n")
    out.write(
        "dev tokens: "
        + ", ".join(f"{t} ({v['userId']}@{v['tenant']})" for t, v in settings.dev_tokens.items())
        + "\n\n"
    )
    stop = threading.Event()
    threading.Thread(target=_carrier, args=(stop,), daemon=True).start()
    token = next(iter(settings.dev_tokens))
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        out.write(f"asking: {MAIN_QUESTION}\n")
        r = http.post("/api/agent/sessions", params={"wait": "false"}, json={"message": MAIN_QUESTION})
        r.raise_for_status()
        session_id = r.json()["sessionId"]
        status = follow_session(http, session_id, Progress(out), timeout_s=120)
        session = http.get(f"/api/agent/sessions/{session_id}").json()
        out.write(f"\nsession {session_id}: {status}\n  {url}/api/agent/sessions/{session_id}\n")
        dsl_id = session.get("lastDslId")
        if dsl_id:
            out.write(f"\nreplaying workflow {dsl_id} for order A-1002 in EUR, without the model:\n")
            replay = http.post(
                f"/api/agent/dsl/{dsl_id}/execute", json={"order_id": "A-1002", "to": "EUR"}, timeout=120
            ).json()
            for step in replay.get("steps", []):
                out.write(
                    f"  {step['stepId']} {step['toolId']:<22} {step['status']}  "
                    f"{json.dumps(step['output'], ensure_ascii=False)[:90]}\n"
                )
            out.write(f"replay {replay.get('status')}: {replay.get('error') or 'ok'}\n")
    code = 0 if status == "SUCCEEDED" else 1
    if serve:
        out.write(f"\nstill serving at {url} — Ctrl-C to stop.\n")
        try:
            while server.started and not server.should_exit:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    stop.set()
    server.should_exit = True
    time.sleep(0.5)
    return code
