"""``AnalysisWorker.run_once`` against the durable queue in ``state.py``, without tether around it:
jobs are enqueued the way ``analyze_keywords_async`` does, and the callbacks go over real HTTP to a
recording server (``sink``)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tether.core.session import Owner
from tether.errors import NotFound
from tether.packs.finance_cs.query import parse_query
from tether.packs.finance_cs.tools import Finance
from tether.packs.finance_cs.worker import AnalysisWorker

from .conftest import CallbackSink, make_finance

pytestmark = pytest.mark.anyio

ALICE = Owner("alice", "finance-demo")
BOB = Owner("bob", "finance-demo")


@pytest.fixture
def fin(sqlite_url: str, tmp_path: Path) -> Finance:
    return make_finance(sqlite_url, tmp_path, job_lease_s=30.0, job_timeout_s=60.0)


def handle(fin: Finance, owner: Owner = ALICE, **filters: Any) -> str:
    query = parse_query({"businessLine": "precious-metal", **filters})
    ids = fin.repo.ids(query)
    assert ids
    handle_id = f"hdl-{time.monotonic_ns()}"
    fin.state.save_handle(handle_id, owner, {"businessLine": "precious-metal", **filters}, ids, 3600)
    return handle_id


def enqueue(
    fin: Finance, sink: CallbackSink, handle_id: str, timeout_s: float = 60.0, split_by: list[str] | None = None
) -> str:
    job_id = f"job-{time.monotonic_ns()}"
    params = {"handle_id": handle_id, "top_n": 10, "split_by": split_by or []}
    fin.state.enqueue(job_id, ALICE, params, sink.url + "/api/agent/tool-callback", "tok-" + job_id, timeout_s)
    return job_id


async def test_an_empty_queue_runs_nothing(fin: Finance, sink: CallbackSink) -> None:
    assert await AnalysisWorker(fin).run_once() is False
    assert sink.received == []


async def test_a_job_runs_and_calls_back_over_http(fin: Finance, sink: CallbackSink) -> None:
    job_id = enqueue(fin, sink, handle(fin), split_by=["channel", "tier"])
    worker = AnalysisWorker(fin)
    assert await worker.run_once() is True
    assert await worker.run_once() is False  # done: nothing left
    [call] = sink.received
    assert call["path"] == "/api/agent/tool-callback"
    assert call["headers"]["X-Tether-Callback-Token"] == "tok-" + job_id
    body = call["body"]
    assert (body["externalJobId"], body["status"], body["error"]) == (job_id, "SUCCEEDED", None)
    payload = body["payload"]
    assert payload["documents"] > 0 and len(payload["top_keywords"]) == 10
    assert set(payload["byChannel"]) <= {"app", "web", "phone", "wechat"}
    assert sum(payload["byChannel"].values()) == payload["documents"]
    assert sum(payload["byTier"].values()) == payload["documents"]
    assert "渠道分布" in payload["summary"] and "客户等级分布" in payload["summary"]
    assert payload["scope"] == "贵金属、不限时间", "the filters and period applied, in words"
    scope, result = fin.state.analysis(payload["analysis_id"], ALICE)
    assert scope["splitBy"] == ["channel", "tier"] and scope["businessLine"] == "precious-metal"
    assert result["documents"] == payload["documents"]
    with pytest.raises(NotFound):
        fin.state.analysis(payload["analysis_id"], BOB)
    job = fin.state.job(job_id)
    assert (job["status"], job["attempts"], job["error"]) == ("done", 1, None)


async def test_an_analysis_that_matches_nothing_says_which_filters(fin: Finance, sink: CallbackSink) -> None:
    filters = {"businessLine": "credit-card", "keywords": ["盗刷"], "startTime": "2026-11-05 00:00:00"}
    fin.state.save_handle("hdl-empty", ALICE, {**filters, "endTime": "2026-12-05 00:00:00"}, [], 3600)
    enqueue(fin, sink, "hdl-empty", split_by=["channel"])
    assert await AnalysisWorker(fin).run_once() is True
    payload = sink.received[0]["body"]["payload"]
    assert payload["documents"] == 0
    assert payload["scope"] == "信用卡、关键词 盗刷、2026-11-05 至 2026-12-05"
    assert payload["summary"].startswith(
        "没有符合条件（信用卡、关键词 盗刷、2026-11-05 至 2026-12-05）的会话，无从分析"
    )
    assert "渠道分布" not in payload["summary"], "no empty split line"


async def test_a_failing_analysis_calls_back_failed_with_the_reason(fin: Finance, sink: CallbackSink) -> None:
    bobs = handle(fin, BOB)  # alice's job may not read bob's handle
    job_id = enqueue(fin, sink, bobs)
    assert await AnalysisWorker(fin).run_once() is True
    [body] = sink.bodies()
    assert body["status"] == "FAILED" and body["payload"] is None
    assert body["error"].startswith("analysis failed:") and bobs in body["error"]
    assert fin.state.job(job_id)["status"] == "failed"


async def test_a_job_past_its_deadline_in_the_queue_ends_failed(fin: Finance, sink: CallbackSink) -> None:
    job_id = enqueue(fin, sink, handle(fin), timeout_s=0.01)
    time.sleep(0.05)
    assert await AnalysisWorker(fin).run_once() is False  # failed, not run
    [body] = sink.bodies()
    assert (body["externalJobId"], body["status"]) == (job_id, "FAILED")
    assert "time limit" in body["error"]
    job = fin.state.job(job_id)
    assert (job["status"], job["attempts"]) == ("failed", 0)
    assert "time limit" in job["error"]


async def test_a_running_job_past_its_deadline_ends_failed_without_waiting_for_it(
    fin: Finance, sink: CallbackSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_FINANCE_ANALYSIS_DELAY_S", "2")
    job_id = enqueue(fin, sink, handle(fin), timeout_s=0.5)
    started = time.monotonic()
    assert await AnalysisWorker(fin).run_once() is True
    assert time.monotonic() - started < 1.8, "the worker waited for the analysis past its deadline"
    [body] = sink.bodies()
    assert (body["status"], body["error"]) == ("FAILED", "the analysis passed its time limit")
    assert fin.state.job(job_id)["status"] == "failed"


async def test_a_job_whose_worker_died_runs_again(tmp_path: Path, sqlite_url: str, sink: CallbackSink) -> None:
    fin = make_finance(sqlite_url, tmp_path, job_lease_s=0.2, job_attempts=2)
    job_id = enqueue(fin, sink, handle(fin))
    assert fin.state.claim(0.2, 2) is not None  # a worker took it ... and died
    worker = AnalysisWorker(fin)
    assert await worker.run_once() is False  # the lease still holds
    time.sleep(0.3)
    assert await worker.run_once() is True
    [body] = sink.bodies()
    assert body["status"] == "SUCCEEDED"
    job = fin.state.job(job_id)
    assert (job["status"], job["attempts"]) == ("done", 2)


async def test_a_job_that_died_too_often_ends_failed(tmp_path: Path, sqlite_url: str, sink: CallbackSink) -> None:
    fin = make_finance(sqlite_url, tmp_path, job_lease_s=0.1, job_attempts=1)
    job_id = enqueue(fin, sink, handle(fin))
    assert fin.state.claim(0.1, 1) is not None
    time.sleep(0.2)
    assert await AnalysisWorker(fin).run_once() is False
    [body] = sink.bodies()
    assert body["status"] == "FAILED"
    assert body["error"] == "the analysis was interrupted 1 time(s); giving up"
    assert fin.state.job(job_id)["status"] == "failed"


async def test_a_running_job_keeps_its_lease(
    tmp_path: Path, sqlite_url: str, sink: CallbackSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow analysis renews its lease, so a second worker does not take the job meanwhile."""
    monkeypatch.setenv("TETHER_FINANCE_ANALYSIS_DELAY_S", "2.5")
    fin = make_finance(sqlite_url, tmp_path, job_lease_s=0.9)
    job_id = enqueue(fin, sink, handle(fin))
    run = asyncio.ensure_future(AnalysisWorker(fin).run_once())
    for _ in range(20):  # 2.5 leases long
        await asyncio.sleep(0.12)
        assert await asyncio.to_thread(fin.state.claim, 0.9, 5) is None, "a second worker took a live job"
    assert await run is True
    assert [b["status"] for b in sink.bodies()] == ["SUCCEEDED"]
    assert fin.state.job(job_id)["attempts"] == 1


async def test_a_refused_callback_still_finishes_the_job(tmp_path: Path, sqlite_url: str) -> None:
    """tether answers 4xx for a callback it will never take (an unknown job): no retry loop."""
    sink = CallbackSink(status=404)
    try:
        fin = make_finance(sqlite_url, tmp_path)
        job_id = enqueue(fin, sink, handle(fin))
        assert await AnalysisWorker(fin).run_once() is True
        assert len(sink.received) == 1
        assert fin.state.job(job_id)["status"] == "done"
    finally:
        sink.close()


async def test_run_loop_stops_when_asked(fin: Finance, sink: CallbackSink) -> None:
    enqueue(fin, sink, handle(fin))
    stop = asyncio.Event()
    task = asyncio.ensure_future(AnalysisWorker(fin, poll_s=0.05).run(stop))
    deadline = time.monotonic() + 20
    while not sink.received and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert [b["status"] for b in sink.bodies()] == ["SUCCEEDED"]


async def test_an_undeliverable_outcome_is_kept_and_sent_when_tether_is_back(
    tmp_path: Path, sqlite_url: str, sink: CallbackSink
) -> None:
    """tether is down when the analysis ends: the outcome is held, not lost, and re-sent later."""
    fin = make_finance(sqlite_url, tmp_path)
    job_id = f"job-{time.monotonic_ns()}"
    params = {"handle_id": handle(fin), "top_n": 5, "split_by": []}
    fin.state.enqueue(job_id, ALICE, params, "http://127.0.0.1:9/api/agent/tool-callback", "tok", 60)
    worker = AnalysisWorker(fin)
    worker_callback = worker._callback

    async def one_try(*args: Any, **kwargs: Any) -> bool:  # keep the test fast: no back-off
        return await worker_callback(*args, **{**kwargs, "attempts": 1})

    worker._callback = one_try  # type: ignore[method-assign]
    assert await worker.run_once() is True
    held = fin.state.job(job_id)
    assert held["status"] == "undelivered" and '"SUCCEEDED"' in held["outcome"]
    with fin.state.engine.begin() as c:  # tether is reachable again
        from tether.packs.finance_cs.state import jobs

        c.execute(jobs.update().where(jobs.c.id == job_id).values(callback_url=sink.url + "/cb"))
    assert await worker.run_once() is False
    [call] = sink.received
    assert call["body"]["externalJobId"] == job_id and call["body"]["status"] == "SUCCEEDED"
    assert call["body"]["payload"]["documents"] > 0
    assert fin.state.job(job_id)["status"] == "done"
