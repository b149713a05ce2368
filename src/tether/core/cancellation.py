"""Cancelling a session's turn, once its driver has stopped (or when nothing was running): every
call the turn left open, every interaction it waits for and every async job gets an error result,
and the session ends ``CANCELLED`` with a ``TURN_FINISHED`` event, in one commit.

Never re-run or wait for a call that was in flight: its effect is reported as unknown. A later
answer or callback for what was closed here is ignored (a job is finished as FAILED, so its
callback is a duplicate).
"""

from __future__ import annotations

from tether.core.closing import close_call, close_open_calls
from tether.core.events import EventType
from tether.core.session import AgentSession, Status
from tether.core.turn import Turn

CANCELLED_REASON = "cancelled by the user"
CANCELLED_IN_FLIGHT = "cancelled by the user while this call was in flight; its effect is unknown"
CANCELLED_NOT_RUN = "not run: the user cancelled the turn"
CANCELLED_WAITING = "cancelled by the user while waiting for this; a later answer or callback is ignored"


async def close_cancelled(turn: Turn) -> AgentSession:
    """Close what ``turn``'s session left open, end it CANCELLED, commit and publish."""
    s, store = turn.session, turn.deps.store
    cancelled = {"cancelled": True}
    close_open_calls(turn, CANCELLED_IN_FLIGHT, CANCELLED_NOT_RUN, cancelled)
    for pending in s.pending_entries():  # the head and any queued behind it
        close_call(turn, pending["toolCallId"], pending["toolId"], CANCELLED_WAITING, mark=cancelled)
    s.pending_interaction = None
    jobs = list(s.waiting_job_ids)
    for job_id in jobs:
        job = await store.get_job(job_id)
        if job is not None:
            await store.finish_job(job_id, "FAILED", None, CANCELLED_REASON)  # a later callback: duplicate
            close_call(turn, job.tool_call_id, job.tool_id, CANCELLED_WAITING, mark=cancelled)
    s.waiting_job_ids = []
    s.transition(Status.CANCELLED)
    s.last_error = s.last_error_code = None
    turn.emit(EventType.TURN_FINISHED, {"status": s.status.value, "reason": CANCELLED_REASON})
    await turn.commit(applied_job_ids=jobs)
    return s
