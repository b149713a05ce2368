"""The analysis queue is durable, with real processes: ``tether serve`` is SIGKILLed while its
in-process worker is in the middle of an analysis (``TETHER_FINANCE_ANALYSIS_DELAY_S`` makes it
slow) and started again on the same databases; and a job past its time limit ends FAILED with the
reason while the session goes on. A session never waits forever."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import MAIN_QUESTION, FinanceServer, final_answer, tool_results, wait_status, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def servers() -> Iterator[list[FinanceServer]]:
    started: list[FinanceServer] = []
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def slow_server(tmp_path: Path, servers: list[FinanceServer], **env: str) -> FinanceServer:
    server = FinanceServer(
        tmp_path,
        TETHER_FINANCE_SEED_ROWS="1000",
        TETHER_FINANCE_ANALYSIS_DELAY_S="3",
        TETHER_FINANCE_JOB_LEASE_S="1",
        **env,
    )
    servers.append(server)
    return server.start()


def running_job(server: FinanceServer) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        return next((j for j in server.jobs() if j["status"] == "running"), None)

    return wait_until(find, timeout=20, what="the worker to claim the analysis")


@pytest.mark.parametrize(
    ("attempts", "outcome"), [("2", "runs again"), ("1", "ends FAILED")], ids=["runs-again", "gives-up"]
)
def test_a_job_killed_mid_analysis_after_restart(
    tmp_path: Path, servers: list[FinanceServer], attempts: str, outcome: str
) -> None:
    server = slow_server(tmp_path, servers, TETHER_FINANCE_JOB_ATTEMPTS=attempts)
    with server.client() as alice:
        r = alice.post("/api/agent/sessions", json={"message": MAIN_QUESTION})
        assert r.status_code == 200, r.text
        session_id = r.json()["sessionId"]
        assert r.json()["status"] == "WAITING_ASYNC_CALLBACK"
        job = running_job(server)
        assert job["attempts"] == 1
    server.kill()  # the worker dies inside its 3-second analysis
    [killed] = server.jobs()
    assert (killed["id"], killed["status"]) == (job["id"], "running")
    assert "tool-callback" not in server.log_text()

    server.start()
    with server.client() as alice:
        session = wait_status(alice, session_id, timeout=40)
    [after] = server.jobs()
    answer = final_answer(session)
    if outcome == "runs again":
        assert session["status"] == "SUCCEEDED", session.get("lastError")
        assert (after["status"], after["attempts"]) == ("done", 2)
        assert [s["toolId"] for s in session["executedSteps"]][-1] == "build_keyword_report"
        assert "/api/reports/rpt-" in answer and "规则调整" in answer
    else:
        assert (after["status"], after["attempts"]) == ("failed", 1)
        assert after["error"] == "the analysis was interrupted 1 time(s); giving up"
        failed = tool_results(session)[-1]
        assert (failed["tool"], failed["kind"]) == ("analyze_keywords_async", "error")
        assert "interrupted" in failed["data"]["error"]
        assert answer == "未能完成：后台任务没有完成，请稍后再试。"  # asked in Chinese
        assert failed["data"]["code"] == "job.failed"
        assert failed["data"]["params"] == {"tool": "analyze_keywords_async", "reason": failed["data"]["error"]}
        assert "build_keyword_report" not in [s["toolId"] for s in session["executedSteps"]]
    server.assert_no_server_errors()


def test_a_job_past_its_time_limit_ends_failed_and_the_session_goes_on(
    tmp_path: Path, servers: list[FinanceServer]
) -> None:
    server = slow_server(tmp_path, servers, TETHER_FINANCE_JOB_TIMEOUT_S="1")
    with server.client() as alice:
        r = alice.post("/api/agent/sessions", json={"message": MAIN_QUESTION})
        assert r.status_code == 200, r.text
        session = wait_status(alice, r.json()["sessionId"], timeout=20)
        assert session["status"] == "SUCCEEDED", session.get("lastError")
        analysis = tool_results(session)[-1]
        assert (analysis["tool"], analysis["kind"]) == ("analyze_keywords_async", "error")
        assert "time limit" in analysis["data"]["error"]
        steps = session["executedSteps"]
        assert [s["toolId"] for s in steps] == ["query_sessions_handle", "analyze_keywords_async"]
        assert steps[-1]["status"] == "FAILED"
        answer = final_answer(session)
        assert answer == "未能完成：后台任务没有完成，请稍后再试。"  # not the job's English
        [job] = server.jobs()
        assert job["status"] == "failed" and "time limit" in job["error"]

        # the session is not stuck: it takes the next message
        r = alice.post(f"/api/agent/sessions/{session['sessionId']}/messages", json={"message": "查一下外汇的会话"})
        assert r.status_code == 200, r.text
        assert wait_status(alice, session["sessionId"], timeout=20)["status"] == "SUCCEEDED"
    server.assert_no_server_errors()
