"""``POST /api/agui``: an AG-UI run over a tether session (the mapping is ``tether.interop.agui``).

The request is authenticated like every route (bearer token, the same identity providers); the
input is ``RunAgentInput``; the answer is an SSE stream of AG-UI events encoded by the
``ag-ui-protocol`` package's ``EventEncoder``. A bad input, an unknown thread or a busy session is
refused before the stream starts (422 / 404 / 409), as on the session routes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from tether.app.deps import IdentityDep, ServicesDep
from tether.core.session import AgentSession, Identity, Status
from tether.errors import Conflict, InvalidInput, NotFound, TetherError
from tether.interop.agui import Translator, answer_of, check_thread_id, last_user_text
from tether.wiring import Services

router = APIRouter(tags=["ag-ui"])
POLL_S = 0.5


@router.post("/api/agui", summary="Run an AG-UI agent turn on a tether session (SSE of AG-UI events)")
async def agui_run(request: Request, services: ServicesDep, who: IdentityDep) -> StreamingResponse:
    try:
        run = RunAgentInput.model_validate(await request.json())
    except (ValidationError, ValueError) as exc:
        raise InvalidInput(f"the body is not a RunAgentInput: {str(exc)[:300]}", field="body") from None
    except RecursionError:  # JSON nested deeper than the decoder's recursion limit
        raise InvalidInput("the body is not a RunAgentInput: it nests too deeply", field="body") from None
    thread_id = check_thread_id(run.thread_id)
    start, action = await _begin(services, who, thread_id, run)
    encoder = EventEncoder(accept=request.headers.get("accept", ""))
    stream = _stream(services, request, who, thread_id, run.run_id, start, action, encoder)
    return StreamingResponse(stream, media_type=encoder.get_content_type(), headers={"Cache-Control": "no-cache"})


async def _begin(
    services: Services, who: Identity, thread_id: str, run: RunAgentInput
) -> tuple[int, asyncio.Task[Any] | None]:
    """Start what the input asks for; -> (the last event id before it, the background work)."""
    runtime = services.runtime
    try:
        s: AgentSession | None = await services.store.load(thread_id, who.owner)
    except NotFound:
        s = None
    if run.resume:
        if s is None:
            raise NotFound("no such thread")
        return s.last_seq, _spawn(services, _resume(services, who, s, run))
    text = last_user_text(run)
    if not text:
        raise InvalidInput("the input needs a user message (or resume entries)", field="messages")
    await services.abuse.budget.admit_turn(who.owner)  # 429 when a daily budget is spent: no turn starts
    if s is None:
        try:
            await runtime.start_session(who, text, {}, wait=False, session_id=thread_id)
        except Conflict:
            raise Conflict("that threadId is taken; start a new thread with another id") from None
        return 0, None
    await runtime.post_message(thread_id, who, text, wait=False)
    return s.last_seq, None


def _spawn(services: Services, work: Awaitable[Any]) -> asyncio.Task[Any]:
    async def run() -> Any:
        return await work

    return asyncio.get_running_loop().create_task(run())


async def _resume(services: Services, who: Identity, s: AgentSession, run: RunAgentInput) -> list[dict[str, Any]]:
    """Each resume entry answers the pending interaction with its id: a question or form with the
    payload, a proposal by confirming (``resolved``; ``payload.acknowledgeTainted`` ticks off its
    tainted values) or cancelling (``cancelled``) its op. -> the confirms an approval policy held:
    their ops wait for approvers (docs/approvals.md), so the run ends with that state."""
    held: list[dict[str, Any]] = []
    pending = {e["interactionId"]: e for e in s.pending_entries()}
    for entry in run.resume or []:
        target = pending.get(entry.interrupt_id)
        if target is None:
            raise NotFound(f"interrupt {entry.interrupt_id!r} is not pending in this thread")
        if target["kind"] == "proposal":
            op_id = str(target["payload"]["opId"])
            if entry.status == "resolved":
                ack = isinstance(entry.payload, dict) and entry.payload.get("acknowledgeTainted") is True
                view = await services.ops.confirm(op_id, who, acknowledged=ack)
                if view.get("state") == "awaiting_approval":
                    held.append(view)
            else:
                await services.ops.cancel(op_id, who)
            continue
        if entry.status == "cancelled":
            raise InvalidInput("a question or form is answered, not cancelled: send a new message", field="resume")
        answer = answer_of(target["kind"], entry.payload)
        await services.runtime.complete_interaction(s.session_id, who, entry.interrupt_id, answer)
    return held


async def _stream(
    services: Services,
    request: Request,
    who: Identity,
    thread_id: str,
    run_id: str,
    last: int,
    action: asyncio.Task[Any] | None,
    encoder: EventEncoder,
) -> AsyncIterator[str]:
    t = Translator(thread_id, run_id)
    for e in t.start():
        yield encoder.encode(e)
    sub = services.bus.subscribe(thread_id)
    deadline = time.monotonic() + services.settings.turn_timeout_s + 30
    error: str | None = None
    services.metrics.sse_clients.inc()
    try:
        while not t.finished and not await request.is_disconnected():
            batch = await services.store.events_after(thread_id, last, 500)
            for event in batch:
                last = event.seq
                for out in t.event(event):
                    yield encoder.encode(out)
                if t.finished:
                    break
            if t.finished or len(batch) == 500:
                continue
            if action is not None and action.done():
                failure = action.exception()
                if failure is not None:
                    error = (
                        failure.message if isinstance(failure, TetherError) else "the resume failed; see the server log"
                    )
                    break
                held = action.result()
                if held:  # the approvers decide later: the run ends saying what it waits for
                    for out in t.awaiting(held):
                        yield encoder.encode(out)
                    break
                s = await services.store.load(thread_id, who.owner)
                if s.status is not Status.RUNNING and not batch and _settled(s):
                    break  # answered without a new turn (e.g. back to waiting for a callback)
            if time.monotonic() > deadline:
                error = "the run did not finish in time; follow the session's events"
                break
            await sub.get(POLL_S)
        s = await services.store.load(thread_id, who.owner)
        for out in t.end(s, error):
            yield encoder.encode(out)
    finally:
        services.metrics.sse_clients.dec()
        sub.close()


def _settled(s: AgentSession) -> bool:
    return s.status is Status.WAITING_ASYNC_CALLBACK
