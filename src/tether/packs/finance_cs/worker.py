"""The analysis worker: takes queued jobs, runs the keyword analysis, and POSTs the result to
tether's ``/api/agent/tool-callback`` over HTTP with the job's callback token — so it runs the
same inside the server process (the embedded default) or apart (``tether worker``).

Durable: a job is claimed under a lease (``job_lease_s``), renewed while it runs; if the process
dies, the lease expires and the job runs again, up to ``job_attempts`` times, then ends FAILED. A
job past its deadline ends FAILED with the reason, also while it is running (its thread is then
abandoned and its result dropped). The callback is sent before the job is marked done, so a crash
in between only repeats a callback, which tether answers as a duplicate. Any number of workers
share the queue: each claim carries a token, and a worker whose lease lapsed and whose job was
taken over cannot renew, call back or finish it (``state.FinanceState.claim``), so no job
completes twice. A job started outside a
session (``POST /tools/analyze-keywords-async``) has no callback URL: its outcome is kept on the
job's row and served by ``GET /api/finance/jobs/{id}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any

import httpx

from tether.pack import Owner
from tether.packs.finance_cs.digest import scope_words
from tether.packs.finance_cs.findings import findings, previous_finding
from tether.packs.finance_cs.indexed_analysis import analyze_indexed
from tether.packs.finance_cs.keyword_index import index_new
from tether.packs.finance_cs.tools import Finance, new_id

log = logging.getLogger("tether.finance.worker")


def compute(fin: Finance, job: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    owner = Owner(job["owner_user"], job["owner_tenant"])
    filters, ids = fin.state.handle(params["handle_id"], owner)
    # The handle's rows are its filters' matches up to its newest id (ids ascend; a truncated
    # handle keeps the oldest): the index answers for exactly those.
    result = analyze_indexed(
        fin.repo.engine, filters, max_id=max(ids, default=0), top_n=params.get("top_n", 20), writer=fin.state.engine
    )
    delay = float(os.environ.get("TETHER_FINANCE_ANALYSIS_DELAY_S", "0"))  # tests: a slow analysis
    if delay:
        time.sleep(delay)
    analysis_id = new_id("ana")
    split_by = params.get("split_by") or []
    scope = {**filters, "splitBy": split_by}
    fin.state.save_analysis(analysis_id, owner, scope, result)
    words = scope_words(filters)
    lines = findings(result, scope=words)
    payload: dict[str, Any] = {
        "analysis_id": analysis_id,
        "documents": result["documents"],
        "period": result["period"],
        "top_keywords": [k["keyword"] for k in result["keywords"][:10]],
        "distinctive_keywords": [d["keyword"] for d in result["distinctive"]],
        "excluded_keywords": [e["keyword"] for e in result["excluded"]],
        "split_by": split_by,
        "scope": words,  # the filters and period applied, in words
    }
    for dim, key in (("channel", "byChannel"), ("tier", "byTier")):
        if dim in split_by or f"customer_{dim}" in split_by:
            groups = sorted(result[key], key=lambda g: -g["documents"])
            payload[key] = {g["group"]: g["documents"] for g in groups}
            if not groups:
                continue
            lines.append(
                ("渠道" if dim == "channel" else "客户等级")
                + "分布："
                + "、".join(f"{g['group']} {g['documents']}条" for g in groups)
            )
    previous = result["contrast"]["previous"]
    finding = previous_finding(result)
    if previous is not None and finding is not None:
        payload["previous_period"] = {**previous, "finding": finding}
    payload["summary"] = "\n".join(lines)
    return payload


class ClaimLost(Exception):
    """This worker's lease lapsed and another worker holds the job now."""


class AnalysisWorker:
    def __init__(self, fin: Finance, *, poll_s: float = 0.3, client: httpx.AsyncClient | None = None) -> None:
        self.fin = fin
        self.poll_s = poll_s
        self.client = client or httpx.AsyncClient(timeout=30)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                busy = await self.run_once()
            except Exception:
                log.exception("analysis worker round failed")
                busy = False
            if not busy:
                await self._index_new()
                await self._idle(stop)
        await self.client.aclose()

    async def _index_new(self) -> None:
        """Between jobs: segment a batch of conversations written since the last index round."""
        try:
            await asyncio.to_thread(index_new, self.fin.state.engine)
        except Exception:
            log.exception("keyword index round failed")

    async def _idle(self, stop: asyncio.Event) -> None:
        """Wait for a poll interval, a job queued in this process, or the stop signal."""
        queued = self.fin.queued
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(queued.wait())]
        await asyncio.wait(waiters, timeout=self.poll_s, return_when=asyncio.FIRST_COMPLETED)
        for w in waiters:
            w.cancel()
        queued.clear()

    async def run_once(self) -> bool:
        """Fail the jobs that ran out of time or attempts, then run one job; True if one ran."""
        s = self.fin.settings
        await self._redeliver()
        for dead in await asyncio.to_thread(self.fin.state.given_up, s.job_attempts, s.job_lease_s):
            reason = (
                "the analysis passed its time limit"
                if dead["deadline"] < time.time()
                else f"the analysis was interrupted {dead['attempts']} time(s); giving up"
            )
            await self._conclude(dead, "FAILED", None, reason)
        job: dict[str, Any] | None = await asyncio.to_thread(self.fin.state.claim, s.job_lease_s, s.job_attempts)
        if job is None:
            return False
        params = json.loads(job["params"])
        try:
            payload = await asyncio.wait_for(self._compute(job, params), max(job["deadline"] - time.time(), 0.001))
        except TimeoutError:
            await self._conclude(job, "FAILED", None, "the analysis passed its time limit")
            return True
        except ClaimLost:
            log.warning("analysis job %s was taken over after its lease lapsed; its result is dropped", job["id"])
            return True
        except Exception as exc:
            await self._conclude(job, "FAILED", None, f"analysis failed: {getattr(exc, 'message', None) or exc}")
            return True
        await self._conclude(job, "SUCCEEDED", payload, None)
        return True

    async def _conclude(self, job: dict[str, Any], status: str, payload: Any, error: str | None) -> None:
        """Call back, then record the outcome; an outcome that could not be delivered is kept and
        re-sent on later rounds instead of being lost. A detached job (no callback URL) keeps its
        outcome on its row, where its owner polls it."""
        final = "done" if status == "SUCCEEDED" else "failed"
        outcome = json.dumps({"status": status, "payload": payload, "error": error}, ensure_ascii=False, default=str)
        state, token = self.fin.state, job["claim_token"]
        if not job["callback_url"]:
            if not await asyncio.to_thread(state.settle, job["id"], token, final, outcome, error):
                log.warning("analysis job %s is no longer ours; its outcome is dropped", job["id"])
        elif not await asyncio.to_thread(state.renew, job["id"], token, self.fin.settings.job_lease_s):
            log.warning("analysis job %s is no longer ours; its outcome is not sent", job["id"])
        elif await self._callback(job, status, payload, error):
            await asyncio.to_thread(state.finish, job["id"], token, final, error)
        else:
            await asyncio.to_thread(state.hold, job["id"], token, outcome)

    async def _redeliver(self) -> None:
        state = self.fin.state
        for job in await asyncio.to_thread(state.undelivered, self.fin.settings.job_lease_s):
            outcome = json.loads(job["outcome"])
            if await self._callback(job, outcome["status"], outcome["payload"], outcome["error"], attempts=1):
                final = "done" if outcome["status"] == "SUCCEEDED" else "failed"
                await asyncio.to_thread(state.finish, job["id"], job["claim_token"], final, outcome["error"])
            else:  # free it for the next round (of any worker)
                await asyncio.to_thread(state.release, job["id"], job["claim_token"])

    async def _compute(self, job: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        """Run the analysis in a thread, renewing the job's lease while it runs."""
        lease = self.fin.settings.job_lease_s
        work = asyncio.ensure_future(asyncio.to_thread(compute, self.fin, job, params))
        try:
            while True:
                done, _ = await asyncio.wait({work}, timeout=lease / 3)
                if done:
                    return work.result()
                if not await asyncio.to_thread(self.fin.state.renew, job["id"], job["claim_token"], lease):
                    raise ClaimLost(job["id"])
        finally:
            work.cancel()  # on a timeout: the thread runs on, its result is dropped

    async def _callback(
        self, job: dict[str, Any], status: str, payload: Any, error: str | None, attempts: int = 8
    ) -> bool:
        """POST the outcome; True once tether answered (a 4xx refusal included), False if it could
        not be reached."""
        body = {"externalJobId": job["id"], "status": status, "payload": payload, "error": error}
        headers = {"X-Tether-Callback-Token": job["callback_token"]}
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(min(0.25 * 2**attempt, 5))
            try:
                r = await self.client.post(job["callback_url"], json=body, headers=headers)
            except httpx.TransportError:
                continue
            if r.status_code < 500:
                if r.status_code >= 400:
                    log.warning("callback for %s refused: %s", job["id"], r.status_code)
                return True
        log.error("callback for %s could not be delivered yet; it will be re-sent", job["id"])
        return False
