"""The pack's data layer wiring on SQLite, PostgreSQL and MariaDB: the five tools, the durable job
queue and the worker's analysis run against a fresh database of each kind (``db_url``), through
``open_finance`` + ``prepare`` exactly as the server does."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.core.session import Owner
from tether.core.tools import AsyncJobStarted, Handle, JobTicket, Tool, ToolContext
from tether.errors import NotFound
from tether.packs.finance_cs.pack import open_finance, prepare
from tether.packs.finance_cs.tools import Finance, build_tools
from tether.packs.finance_cs.worker import AnalysisWorker

from .conftest import CallbackSink, make_finance

pytestmark = pytest.mark.anyio

ALICE = Owner("alice", "finance-demo")
BOB = Owner("bob", "finance-demo")


@pytest.fixture
def fin(db_url: str, tmp_path: Path) -> Iterator[Finance]:
    finance = make_finance(db_url, tmp_path, rows=600)
    try:
        yield finance
    finally:
        finance.repo.engine.dispose()


def context(owner: Owner, sink: CallbackSink | None = None) -> ToolContext:
    async def issue() -> JobTicket:
        assert sink is not None
        job = f"job-{time.monotonic_ns()}"
        return JobTicket(job, "tok-" + job, sink.url + "/api/agent/tool-callback")

    return ToolContext(owner, "ses-test", "turn-test", "call-test", {}, issue_job=issue if sink else None)


async def call(tools: dict[str, Tool], name: str, ctx: ToolContext, **args: Any) -> Any:
    t = tools[name]
    return await t.run(t.validate(args), ctx)


async def test_tools_handle_analysis_and_report(fin: Finance, sink: CallbackSink, tmp_path: Path) -> None:
    tools = {t.name: t for t in build_tools(fin)}
    assert set(tools) == {
        "query_customer_sessions_mysql",
        "sample_sessions_by_keywords",
        "query_sessions_handle",
        "analyze_keywords_async",
        "build_keyword_report",
    }
    alice = context(ALICE, sink)

    rows = await call(tools, "query_customer_sessions_mysql", alice, business_line="precious-metal", limit=5)
    assert rows["returned"] == 5 and rows["total"] > 5

    handle = await call(tools, "query_sessions_handle", alice, business_line="precious-metal", keywords=["保证金"])
    assert isinstance(handle, Handle)
    assert 0 < handle.summary["total"] < rows["total"]
    assert handle.summary["filters"] == {"businessLine": "precious-metal", "keywords": ["保证金"]}
    _, ids = fin.state.handle(handle.handle_id, ALICE)
    assert len(ids) == handle.summary["total"]
    with pytest.raises(NotFound):
        fin.state.handle(handle.handle_id, BOB)

    started = await call(tools, "analyze_keywords_async", alice, handle_id=handle.handle_id, split_by=["channel"])
    assert isinstance(started, AsyncJobStarted)
    job_id = started.ticket.job_id
    assert fin.state.job(job_id)["status"] == "queued"

    assert await AnalysisWorker(fin).run_once() is True
    [body] = sink.bodies()
    assert (body["externalJobId"], body["status"]) == (job_id, "SUCCEEDED"), body
    payload = body["payload"]
    assert payload["documents"] == handle.summary["total"]
    assert "保证金" in payload["excluded_keywords"] and "保证金" not in payload["top_keywords"], "the query's keyword"
    assert "规则调整" in payload["top_keywords"][:3], "what the margin conversations are about: the planted surge"
    assert sum(payload["byChannel"].values()) == payload["documents"]
    job = fin.state.job(job_id)
    assert (job["status"], job["attempts"]) == ("done", 1)

    report = await call(tools, "build_keyword_report", alice, analysis_id=payload["analysis_id"], title="保证金")
    assert report["url"] == f"http://127.0.0.1:9/api/reports/{report['report_id']}.html"
    assert report["findings"] and report["findings"][0].startswith("高频关键词")
    stored = fin.state.report(report["report_id"], ALICE)
    assert stored["title"] == "保证金" and stored["html"].count("<svg") >= 3
    assert stored["markdown"].startswith("# 保证金")
    assert Path(report["path"]) == (tmp_path / "reports" / f"{report['report_id']}.html").resolve()
    assert Path(report["path"]).read_text(encoding="utf-8") == stored["html"]
    with pytest.raises(NotFound):
        fin.state.report(report["report_id"], BOB)


async def test_others_cannot_use_a_handle_or_an_analysis(fin: Finance, sink: CallbackSink) -> None:
    tools = {t.name: t for t in build_tools(fin)}
    handle = await call(tools, "query_sessions_handle", context(ALICE), business_line="fund")
    with pytest.raises(NotFound):
        await call(tools, "analyze_keywords_async", context(BOB, sink), handle_id=handle.handle_id)
    with pytest.raises(NotFound):
        await call(tools, "build_keyword_report", context(BOB), analysis_id="ana-unknown")
    assert sink.received == []


async def test_the_queue_claims_each_job_once(fin: Finance) -> None:
    fin.state.enqueue("job-a", ALICE, {"handle_id": "h"}, "http://127.0.0.1:9/cb", "t", 60)
    fin.state.enqueue("job-b", ALICE, {"handle_id": "h"}, "http://127.0.0.1:9/cb", "t", 60)
    first = fin.state.claim(30, 2)
    second = fin.state.claim(30, 2)
    assert first is not None and second is not None
    assert {first["id"], second["id"]} == {"job-a", "job-b"}
    assert fin.state.claim(30, 2) is None
    tokens = {first["id"]: first["claim_token"], second["id"]: second["claim_token"]}
    assert fin.state.renew("job-a", tokens["job-a"], 30)
    assert not fin.state.renew("job-a", tokens["job-b"], 30), "another claim's token renews nothing"
    assert fin.state.finish("job-a", tokens["job-a"], "done")
    assert fin.state.finish("job-b", tokens["job-b"], "failed", "why")
    assert not fin.state.finish("job-a", tokens["job-a"], "failed"), "a job completes once"
    assert fin.state.job("job-a")["status"] == "done"
    assert (fin.state.job("job-b")["status"], fin.state.job("job-b")["error"]) == ("failed", "why")
    assert fin.state.given_up(2) == []


def test_prepare_is_idempotent_and_seeds_only_when_told(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_FINANCE_DATABASE_URL", db_url)
    monkeypatch.setenv("TETHER_FINANCE_REPORT_DIR", str(tmp_path / "reports"))
    fin = open_finance("http://x")  # the settings come from the environment, as in the server
    try:
        assert fin.settings.database_url == db_url and fin.settings.seed == "auto"
        assert fin.settings.should_seed is False, "a configured database is never seeded on 'auto'"
        assert prepare(fin) == 0 and fin.repo.count() == 0
        assert prepare(fin) == 0  # the tables exist: nothing breaks the second time
        fin.settings.seed, fin.settings.seed_rows, fin.settings.seed_days = "yes", 300, 30
        assert prepare(fin) == 300 and fin.repo.count() == 300
        assert prepare(fin) == 0 and fin.repo.count() == 300  # not twice
    finally:
        fin.repo.engine.dispose()


def test_times_keep_sub_second_precision(fin: Finance) -> None:
    """Leases, deadlines and TTLs are epoch seconds: a 4-byte float (MySQL's FLOAT) would round
    them to minutes."""
    fin.state.enqueue("job-late", ALICE, {"handle_id": "h"}, "http://127.0.0.1:9/cb", "t", 0.05)
    fin.state.enqueue("job-ok", ALICE, {"handle_id": "h"}, "http://127.0.0.1:9/cb", "t", 600)
    time.sleep(0.1)
    late = fin.state.given_up(2)
    assert [j["id"] for j in late] == ["job-late"]
    assert fin.state.given_up(2) == [], "a given-up job goes to one sweeper"
    assert fin.state.finish("job-late", late[0]["claim_token"], "failed", "late")
    claimed = fin.state.claim(0.2, 2)
    assert claimed is not None and claimed["id"] == "job-ok"
    assert abs(claimed["deadline"] - (time.time() + 600)) < 5
    assert fin.state.claim(0.2, 2) is None  # leased
    time.sleep(0.3)
    again = fin.state.claim(0.2, 2)  # the lease ran out: it runs again
    assert again is not None and again["attempts"] == 2
    fin.state.save_handle("hdl-short", ALICE, {}, [1, 2], 0.05)
    assert fin.state.handle("hdl-short", ALICE) == ({}, [1, 2])
    time.sleep(0.1)
    with pytest.raises(NotFound, match="expired"):
        fin.state.handle("hdl-short", ALICE)
