"""The command line against a real server: ``tether ask`` streams a readable progress display,
``tether replay`` runs a DSL with ``--set`` overrides, ``tether db upgrade`` migrates."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.app.conftest import TetherServer, post_callback

pytestmark = pytest.mark.slow


def tether(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def answer_quotes(server: TetherServer, stop: threading.Event) -> None:
    """Play the carrier: answer every outbox ticket once."""
    done: set[str] = set()
    with server.client() as http:
        while not stop.is_set():
            for job_id, ticket in server.outbox().items():
                if job_id not in done:
                    post_callback(
                        http, job_id, ticket["callbackToken"], payload={"carrier": "SF", "price": 9, "currency": "CNY"}
                    )
                    done.add(job_id)
            stop.wait(0.1)


def test_ask_streams_progress_and_replay_takes_overrides(api_server: TetherServer) -> None:
    stop = threading.Event()
    carrier = threading.Thread(target=answer_quotes, args=(api_server, stop), daemon=True)
    carrier.start()
    try:
        asked = tether("ask", "What does order A-1002 cost in EUR, and shipping?", "--url", api_server.url)
        assert asked.returncode == 0, asked.stderr
        out = asked.stdout
        for expected in (
            "skills: order-desk",
            "▶ lookup_order",
            "✔ convert_currency",
            "waiting for async job",
            "callback for start_shipping_quote: SUCCEEDED",
            "answer:",
            "9 CNY by SF",
            "workflow compiled: dsl-",
            "turn finished: SUCCEEDED",
        ):
            assert expected in out, f"{expected!r} missing from:\n{out}"
        dsl_id = out.split("workflow compiled: ")[1].split()[0]
        replay = tether("replay", dsl_id, "--set", "order_id=A-1001", "--set", "to=USD", "--url", api_server.url)
        assert replay.returncode == 0, replay.stdout + replay.stderr
        assert "replay SUCCEEDED" in replay.stdout and "lookup_order" in replay.stdout
        with api_server.client() as http:
            log = http.get(f"/api/agent/dsl/{dsl_id}/executions").json()["items"]
        assert log[0]["params"]["order_id"] == "A-1001" and log[0]["params"]["to"] == "USD"
        bad = tether("replay", dsl_id, "--set", "nope=1", "--url", api_server.url)
        assert bad.returncode == 1 and "unknown DSL parameter" in bad.stderr
        other = tether("replay", dsl_id, "--url", api_server.url, "--token", "dev-bob")
        assert other.returncode == 1 and "404" in other.stderr
    finally:
        stop.set()


def test_ask_without_a_server_says_how_to_start_one() -> None:
    result = tether("ask", "hello", "--url", "http://127.0.0.1:9")
    assert result.returncode == 2 and "tether serve" in result.stderr


def test_db_upgrade_creates_the_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    result = tether("db", "upgrade", env={"TETHER_DATABASE_URL": url})
    assert result.returncode == 0, result.stderr
    tables = {r[0] for r in sqlite3.connect(tmp_path / "fresh.db").execute("select name from sqlite_master")}
    assert {"agent_session", "agent_message", "agent_event", "async_job", "dsl_instance"} <= tables


def test_eval_from_another_folder_finds_the_suites_or_says_what_to_do(tmp_path: Path) -> None:
    """`tether eval` outside the repository root: the checkout's suites, or one sentence, never a traceback."""
    none = tether("eval", "run", "--tasks", "no-such-task", cwd=tmp_path)
    assert none.returncode == 2 and "Traceback" not in none.stderr, none.stderr
    assert "no task of suite 'all' under" in none.stderr and "matches 'no-such-task'" in none.stderr
    nowhere = tether("eval", "run", "--tasks-root", "nowhere", cwd=tmp_path)
    assert nowhere.returncode == 2 and "Traceback" not in nowhere.stderr, nowhere.stderr
    assert nowhere.stderr.strip() == (
        "tether eval: no task suites at nowhere/: run it in the tether checkout (where evals/ is), "
        "or pass --tasks-root with the folder of the suites"
    )


def test_serve_on_the_embedded_erp_runs_the_demo_policy_unless_told_otherwise(tmp_path: Path) -> None:
    """`make serve` as the chat page section has it: the 50,000 元 approval is there to try; the
    operator may name another policy or none; the start says which."""
    from tests.servers import ServerProcess
    from tether.ops.approvals.source import DEMO_POLICY

    server = ServerProcess(tmp_path, {}).start(timeout=180)  # the packs as shipped
    try:
        with server.client() as alice:
            assert alice.get("/api/approvals").status_code == 200
    finally:
        server.stop()
    assert f"tether: approval policy: the shipped demo policy {DEMO_POLICY}" in server.log_text()
    off = ServerProcess(tmp_path, {"TETHER_APPROVAL_POLICIES": "none"}).start(timeout=120)
    try:
        with off.client() as alice:
            assert alice.get("/api/approvals").status_code == 404
    finally:
        off.stop()
    assert "tether: approval policy: none (TETHER_APPROVAL_POLICIES names a policy file)" in off.log_text()
