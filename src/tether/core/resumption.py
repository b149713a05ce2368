"""Resuming a session whose wait or whose runner ended: async jobs' stored results go into their
tool messages and the turn goes on (after a callback or a sweep, on the one replica whose claim of
the session succeeds, see ``TurnRunner.claim_and_apply``); a ``RUNNING`` session whose lease
lapsed (its runner died) is recovered.

A call cut off mid-flight is never run again: it gets an error result saying whether it may have
started, and the model decides what to do next. docs/runtime.md states what recovery does.
"""

from __future__ import annotations

from typing import Any

from tether.core import error_messages
from tether.core.closing import close_open_calls, settle_call
from tether.core.decision import waiting_status
from tether.core.events import EventType
from tether.core.pipeline import summarise
from tether.core.ports import AsyncJob, SessionStore
from tether.core.session import AgentSession, Status
from tether.core.turn import Turn

NOT_STARTED = "not run: the server stopped before this call started; it was not retried"
INTERRUPTED = (
    "interrupted: the server stopped while this call was in flight; it was not retried and its effect is unknown"
)


async def has_results(store: SessionStore, s: AgentSession) -> bool:
    """Whether a job the waiting session waits for has a stored, unapplied result."""
    if s.status is not Status.WAITING_ASYNC_CALLBACK:
        return False
    return any(j.job_id in s.waiting_job_ids for j in await store.unapplied_jobs(s.session_id))


async def apply_jobs(turn: Turn) -> bool:
    """Put finished jobs' results into their tool messages of ``turn``'s session and commit;
    True when none is left pending."""
    s = turn.session
    jobs = [j for j in await turn.deps.store.unapplied_jobs(s.session_id) if j.job_id in s.waiting_job_ids]
    if not jobs:
        return not s.waiting_job_ids
    for job in jobs:
        _apply_job(turn, job)
    await turn.commit(applied_job_ids=[j.job_id for j in jobs])
    return not s.waiting_job_ids


def failed_job(job: AsyncJob) -> dict[str, Any]:
    """A FAILED job as its call's error: the job's own reason for the model, coded for a person."""
    return {
        "error": job.error or "the job failed",
        "result": job.result,
        "code": error_messages.JOB_FAILED,
        "params": {"tool": job.tool_id, "reason": job.error or "the job failed"},
    }


def _apply_job(turn: Turn, job: AsyncJob) -> None:
    s = turn.session
    ok = job.status == "SUCCEEDED"
    data = job.result if ok else failed_job(job)
    settle_call(s, job.tool_call_id, job.tool_id, "value" if ok else "error", data, turn.now())
    s.waiting_job_ids.remove(job.job_id)
    base = {"toolCallId": job.tool_call_id, "toolId": job.tool_id, "externalJobId": job.job_id}
    turn.emit(EventType.TOOL_CALLBACK_RECEIVED, {**base, "status": job.status})
    if ok:
        turn.emit(EventType.TOOL_EXECUTION_FINISHED, {**base, "kind": "value", "summary": summarise(data)})
    else:
        turn.emit(
            EventType.TOOL_EXECUTION_FAILED,
            {**base, "error": data["error"], "code": data["code"], "params": data["params"]},
        )


async def recover(turn: Turn) -> bool:
    """Give every call of ``turn``'s session cut off mid-flight an error result and commit; wait
    again when the session waits for a person or a job. -> True when the turn should run on."""
    s = turn.session
    close_open_calls(turn, INTERRUPTED, NOT_STARTED)
    turn.emit(EventType.ERROR, {"message": "the server restarted during this turn; resuming", "recovered": True})
    await turn.commit()
    if s.pending_interaction:
        s.transition(waiting_status(s.pending_interaction))
        await turn.commit()
        return False
    if s.waiting_job_ids and not await apply_jobs(turn):
        s.transition(Status.WAITING_ASYNC_CALLBACK)
        turn.emit(EventType.WAITING_ASYNC_CALLBACK, {"externalJobIds": list(s.waiting_job_ids)})
        await turn.commit()
        return False
    return True
