"""Any number of analysis workers share the job queue on SQLite, PostgreSQL and MariaDB: a job is
claimed by one at a time (``FOR UPDATE SKIP LOCKED`` / a conditional UPDATE with a claim token),
a lapsed lease is claimed again, and a worker that lost its claim can neither renew, call back
nor finish: no job completes twice."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tether.core.session import Owner
from tether.packs.finance_cs.pack import open_finance, prepare
from tether.packs.finance_cs.settings import FinanceSettings
from tether.packs.finance_cs.state import FinanceState
from tether.packs.finance_cs.tools import Finance
from tether.packs.finance_cs.worker import AnalysisWorker
from tether.store.database import create_read_engine, normalize_url

from .conftest import CallbackSink, make_finance

ALICE = Owner("alice", "finance-demo")
JOBS = 40
WORKERS = 6


@pytest.fixture
def fin(db_url: str, tmp_path: Path) -> Iterator[Finance]:
    finance = open_finance(
        "http://127.0.0.1:9", FinanceSettings(database_url=db_url, seed="no", report_dir=str(tmp_path / "r"))
    )
    prepare(finance)
    try:
        yield finance
    finally:
        finance.repo.engine.dispose()
        finance.state.engine.dispose()


def _enqueue(fin: Finance, n: int, timeout_s: float = 600) -> list[str]:
    ids = [f"job-{i:03d}" for i in range(n)]
    for job_id in ids:
        fin.state.enqueue(job_id, ALICE, {"handle_id": "h"}, "http://127.0.0.1:9/cb", "t", timeout_s)
    return ids


def _in_threads(db_url: str, work: Callable[[FinanceState], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Run ``work`` in WORKERS threads at once, each with its own engine (a worker process's)."""
    states = [FinanceState(create_read_engine(normalize_url(db_url), immediate=True)) for _ in range(WORKERS)]
    results: list[list[dict[str, Any]]] = [[] for _ in states]
    errors: list[BaseException] = []
    start = threading.Barrier(WORKERS)

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = work(states[i])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for s in states:
        s.engine.dispose()
    assert not errors, errors
    return [job for taken in results for job in taken]


def _claim_all(state: FinanceState) -> list[dict[str, Any]]:
    taken = []
    while (job := state.claim(60, 3)) is not None:
        taken.append(job)
    return taken


def test_concurrent_workers_claim_each_job_once(fin: Finance, db_url: str) -> None:
    ids = _enqueue(fin, JOBS)
    taken = _in_threads(db_url, _claim_all)
    assert Counter(job["id"] for job in taken) == Counter(ids), "every job claimed, none twice"
    assert len({job["claim_token"] for job in taken}) == JOBS
    assert all(fin.state.job(i)["attempts"] == 1 for i in ids)


def test_concurrent_sweepers_give_up_each_job_once(fin: Finance, db_url: str) -> None:
    ids = _enqueue(fin, 12, timeout_s=0.01)
    time.sleep(0.05)
    taken = _in_threads(db_url, lambda state: state.given_up(2))
    assert Counter(job["id"] for job in taken) == Counter(ids)
    for job in taken:  # each sweeper ends its own
        assert fin.state.finish(job["id"], job["claim_token"], "failed", "late")


def test_a_lapsed_lease_is_claimed_again_and_the_stale_worker_is_refused(fin: Finance) -> None:
    [job_id] = _enqueue(fin, 1)
    stale = fin.state.claim(0.2, 3)
    assert stale is not None and fin.state.claim(0.2, 3) is None, "leased"
    time.sleep(0.3)  # the worker stalled (or died): its lease ran out
    fresh = fin.state.claim(30, 3)
    assert fresh is not None and fresh["id"] == job_id and fresh["attempts"] == 2
    assert fresh["claim_token"] != stale["claim_token"]
    assert not fin.state.renew(job_id, stale["claim_token"], 30)
    assert not fin.state.finish(job_id, stale["claim_token"], "done"), "a stale worker's finish is refused"
    assert not fin.state.settle(job_id, stale["claim_token"], "done", "{}", None)
    assert fin.state.job(job_id)["status"] == "running"
    assert fin.state.finish(job_id, fresh["claim_token"], "done")
    assert not fin.state.finish(job_id, fresh["claim_token"], "failed"), "and it completes once"
    assert fin.state.job(job_id)["status"] == "done"


@pytest.mark.anyio
async def test_a_worker_that_lost_its_job_sends_no_second_callback(tmp_path: Path, sqlite_url: str) -> None:
    sink = CallbackSink()
    try:
        fin = make_finance(sqlite_url, tmp_path, rows=300, job_lease_s=0.2)
        ids = fin.repo.ids({"businessLine": "precious-metal"})
        fin.state.save_handle("hdl-1", ALICE, {"businessLine": "precious-metal"}, ids, 3600)
        fin.state.enqueue("job-1", ALICE, {"handle_id": "hdl-1"}, sink.url + "/api/agent/tool-callback", "tok", 60)
        stale = fin.state.claim(0.2, 3)  # worker A takes it, then stalls past its lease
        assert stale is not None
        time.sleep(0.3)
        worker = AnalysisWorker(fin)
        assert await worker.run_once() is True  # worker B runs it again and calls back
        await worker._conclude(stale, "SUCCEEDED", {"late": True}, None)  # A wakes up with a result
        assert [b["status"] for b in sink.bodies()] == ["SUCCEEDED"]
        assert "late" not in sink.bodies()[0]["payload"]
        with fin.state.engine.connect() as c:
            row = c.execute(sa.text("SELECT status, attempts FROM cs_analysis_job WHERE id = 'job-1'")).one()
        assert tuple(row) == ("done", 2)
        await worker.client.aclose()
    finally:
        sink.close()
