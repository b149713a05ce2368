"""The pack's tools (seed 000 §4.1), all real: they read ``customer_session`` through the
repository, keep large result sets server-side behind handles, queue analyses for the worker and
render reports. Records shown to the model are trimmed; full data stays in the database.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.pack import AsyncJobStarted, Handle, Tool, ToolContext, tool
from tether.packs.finance_cs import digest
from tether.packs.finance_cs.data import CustomerSessionRepo
from tether.packs.finance_cs.findings import findings
from tether.packs.finance_cs.query import parse_query
from tether.packs.finance_cs.report import default_title, render_html, render_markdown
from tether.packs.finance_cs.settings import FinanceSettings
from tether.packs.finance_cs.state import FinanceState

SHOWN_CHARS = 120
JOB_URL = "/api/finance/jobs/{job_id}"  # an analysis job's status and outcome (routes.py)


@dataclass
class Finance:
    """What the tools, the worker and the routes share."""

    settings: FinanceSettings
    repo: CustomerSessionRepo
    state: FinanceState
    public_url: str
    queued: asyncio.Event = field(default_factory=asyncio.Event)  # wakes an in-process worker at once


def _filters(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in (None, "", [], ())}


def _trim(record: dict[str, Any]) -> dict[str, Any]:
    out = dict(record)
    for key in ("userMessage", "agentReply"):
        text = str(out.get(key) or "")
        out[key] = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
    return out


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(8)}"


def build_tools(fin: Finance) -> list[Tool]:
    @tool(audited=True, read_only=True)
    async def query_customer_sessions_mysql(
        ctx: ToolContext,
        keywords: list[str] | None = None,
        business_line: str | None = None,
        channel: str | None = None,
        customer_id: str | None = None,
        customer_tier: str | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
        limit: int = 20,
        language: str = "zh",
    ) -> Any:
        """Filtered query over the customer-session table (works on SQLite, MySQL/MariaDB and
        PostgreSQL): keywords match message, reply or tags; all filters optional; newest first;
        limit capped at 500; total counts every match; summary is the answer for a person in
        ``language`` (zh or en): the filters and period applied, the count and a table of the
        latest rows."""
        query = parse_query(
            _filters(
                keywords=keywords,
                business_line=business_line,
                channel=channel,
                customer_id=customer_id,
                customer_tier=customer_tier,
                start_time=start_time,
                end_time=end_time,
                limit=limit,
            )
        )
        total, records = await asyncio.to_thread(fin.repo.query, query)
        customer_total = None
        if total == 0 and query.customer_id:  # no such customer, or none under these conditions?
            customer_total, _ = await asyncio.to_thread(fin.repo.query, {"customer_id": query.customer_id, "limit": 1})
        return {
            "total": total,
            "returned": len(records),
            "records": [_trim(r) for r in records],
            "scope": digest.describe(query, "en" if language == "en" else "zh"),
            "summary": digest.summary(query, total, records, customer_total, "en" if language == "en" else "zh"),
        }

    @tool(audited=True, read_only=True)
    async def sample_sessions_by_keywords(
        ctx: ToolContext,
        keywords: list[str] | None = None,
        business_line: str | None = None,
        channel: str | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
        size: int = 20,
        seed: int = 42,
        by: str = "channel",
    ) -> Any:
        """A stratified random sample (by channel or day) of matching customer sessions from the
        same table; the same seed gives the same sample."""
        query = parse_query(
            _filters(
                keywords=keywords,
                business_line=business_line,
                channel=channel,
                start_time=start_time,
                end_time=end_time,
            )
        )
        sample = await asyncio.to_thread(
            fin.repo.sample, query, max(1, min(size, 200)), seed, "day" if by == "day" else "channel"
        )
        body = sample.to_json()
        body["records"] = [_trim(r) for r in body["records"]]
        return body

    @tool(audited=True)
    async def query_sessions_handle(
        ctx: ToolContext,
        keywords: list[str] | None = None,
        business_line: str | None = None,
        channel: str | None = None,
        customer_tier: str | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
    ) -> Any:
        """Run the query server-side and keep the matching session ids behind a handle; returns the
        handle id and counts. Pass the handle to analyze_keywords_async instead of the rows."""
        filters = _filters(
            keywords=keywords,
            business_line=business_line,
            channel=channel,
            customer_tier=customer_tier,
            start_time=start_time,
            end_time=end_time,
        )
        query = parse_query(filters)
        ids = await asyncio.to_thread(fin.repo.ids, query, fin.settings.max_handle_rows)
        handle_id = new_id("hdl")
        stored = query.to_json()
        stored.pop("limit", None)
        await asyncio.to_thread(fin.state.save_handle, handle_id, ctx.owner, stored, ids, fin.settings.handle_ttl_s)
        return Handle(
            handle_id, {"total": len(ids), "filters": stored, "truncated": len(ids) >= fin.settings.max_handle_rows}
        )

    @tool(is_async=True, audited=True, poll_url=JOB_URL)
    async def analyze_keywords_async(
        ctx: ToolContext, handle_id: str, top_n: int = 20, split_by: list[str] | None = None
    ) -> Any:
        """Keyword analysis of the sessions behind a handle, in the background: Chinese segmentation,
        TF-IDF keywords (the query's keywords and channel / business-line names left out), the
        distinctive terms (lift against the previous period and the rest of the period), daily
        trend, splits by channel and customer tier, co-occurrence and representative quotes.
        Returns an async job; the result arrives by callback.

        Started outside a session (``POST /tools/analyze-keywords-async``), the job has no callback:
        the worker keeps the outcome, and ``GET /api/finance/jobs/{job_id}`` serves it."""
        await asyncio.to_thread(fin.state.handle, handle_id, ctx.owner)  # 404 now, not in the worker
        ticket = await ctx.async_job()
        params = {"handle_id": handle_id, "top_n": max(1, min(top_n, 50)), "split_by": split_by or []}
        await asyncio.to_thread(
            fin.state.enqueue,
            ticket.job_id,
            ctx.owner,
            params,
            ticket.callback_url,
            ticket.token,
            fin.settings.job_timeout_s,
        )
        fin.queued.set()
        if ticket.detached:
            return AsyncJobStarted(ticket, f"analysis queued; poll {JOB_URL.replace('{job_id}', ticket.job_id)}")
        return AsyncJobStarted(ticket, "analysis queued; the result arrives by callback")

    @tool(audited=True)
    async def build_keyword_report(ctx: ToolContext, analysis_id: str, title: str | None = None) -> Any:
        """Build a report (Markdown and a standalone HTML page with charts) from an analysis; returns
        its id, URL and top findings."""
        scope, result = await asyncio.to_thread(fin.state.analysis, analysis_id, ctx.owner)
        heading = title or scope.get("title") or default_title(scope)
        markdown = render_markdown(result, heading, scope)
        html = render_html(result, heading, scope)
        report_id = new_id("rpt")
        await asyncio.to_thread(fin.state.save_report, report_id, ctx.owner, heading, markdown, html)
        path = Path(fin.settings.report_dir) / f"{report_id}.html"
        await asyncio.to_thread(_write, path, html, markdown)
        base = f"{fin.public_url.rstrip('/')}/api/reports/{report_id}"
        return {
            "report_id": report_id,
            "title": heading,
            "url": f"{base}.html",
            "markdown_url": f"{base}.md",
            "path": str(path.resolve()),
            "findings": findings(result, scope=digest.scope_words(scope)),
        }

    return [
        query_customer_sessions_mysql,
        sample_sessions_by_keywords,
        query_sessions_handle,
        analyze_keywords_async,
        build_keyword_report,
    ]


def _write(path: Path, html: str, markdown: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    path.with_suffix(".md").write_text(markdown, encoding="utf-8")
