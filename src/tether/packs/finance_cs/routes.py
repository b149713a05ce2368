"""The pack's HTTP routes: seed 000 §2.3's direct query API, the analysis jobs started by
``POST /tools/analyze-keywords-async`` (seed 000 §2.4, polled here) and the reports — all owned
like sessions: another user's id is 404."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Body
from fastapi.responses import HTMLResponse, PlainTextResponse

from tether.pack import IdentityDep, NotFound
from tether.packs.finance_cs.query import parse_query
from tether.packs.finance_cs.tools import Finance


def build_router(fin: Finance) -> APIRouter:
    router = APIRouter(tags=["finance"])

    @router.post("/api/customer-sessions/query", summary="Query customer-support sessions (seed 000 §2.3)")
    async def query_sessions(who: IdentityDep, body: dict[str, Any] = Body(default_factory=dict)) -> dict[str, Any]:
        query = parse_query(body)
        total, records = await asyncio.to_thread(fin.repo.query, query)
        return {"total": total, "records": records}

    @router.get(
        "/api/finance/jobs/{job_id}",
        summary="An analysis job's status and outcome",
        description="For jobs started by POST /tools/analyze-keywords-async (no session, no callback): "
        "poll until status is SUCCEEDED or FAILED. result.analysis_id feeds /tools/build-keyword-report. "
        "A job started inside a session shows its status; its result went to the session.",
    )
    async def analysis_job(job_id: str, who: IdentityDep) -> dict[str, Any]:
        row = await asyncio.to_thread(fin.state.owned_job, job_id, who.owner)
        return job_view(row)

    @router.get("/api/reports/{report_file}", summary="A report: {id}.html, {id}.md, or {id} for its metadata")
    async def report(report_file: str, who: IdentityDep) -> Any:
        report_id, _, ext = report_file.partition(".")
        if ext not in ("", "html", "md"):
            raise NotFound(f"no report format {ext!r}; use {report_id}.html or {report_id}.md")
        row = await asyncio.to_thread(fin.state.report, report_id, who.owner)
        if ext == "html":
            return HTMLResponse(row["html"])
        if ext == "md":
            return PlainTextResponse(row["markdown"], media_type="text/markdown; charset=utf-8")
        base = f"/api/reports/{report_id}"
        return {
            "reportId": report_id,
            "title": row["title"],
            "createdAt": row["created_at"],
            "html": f"{base}.html",
            "markdown": f"{base}.md",
        }

    return router


_STATUS = {"queued": "QUEUED", "running": "RUNNING", "done": "SUCCEEDED", "failed": "FAILED"}


def job_view(row: dict[str, Any]) -> dict[str, Any]:
    outcome = json.loads(row["outcome"]) if row.get("outcome") else None
    status = _STATUS.get(row["status"]) or (outcome or {}).get("status") or "RUNNING"  # undelivered: done
    return {
        "jobId": row["id"],
        "status": status,
        "attempts": row["attempts"],
        "createdAt": row["created_at"],
        "detached": not row["callback_url"],
        "result": (outcome or {}).get("payload") if status == "SUCCEEDED" else None,
        "error": row["error"] or (outcome or {}).get("error"),
    }
