"""SSE: ``GET /api/agent/sessions/{id}/events`` replays from ``Last-Event-ID`` (or ``?after=``) and
then tails live, with heartbeats. Frames: ``id: <seq>``, ``event: <TYPE>``, ``data: <envelope>``.

Events are read from the store by sequence number and the bus only wakes the stream, so a
reconnect neither loses nor repeats an event, whatever process produced it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Header, Query, Request
from sse_starlette.sse import EventSourceResponse

from tether.app.deps import IdentityDep, ServicesDep
from tether.errors import InvalidInput
from tether.wiring import Services

router = APIRouter(prefix="/api/agent/sessions", tags=["events"])
MAX_SEQ = 2**63 - 1  # the databases' BIGINT


@router.get("/{session_id}/events", summary="Server-sent events of a session")
async def events(
    session_id: str,
    request: Request,
    services: ServicesDep,
    who: IdentityDep,
    after: int | None = Query(None, ge=0, le=MAX_SEQ, description="replay events with a larger id"),
    last_event_id: str | None = Header(None, alias="Last-Event-ID"),
) -> EventSourceResponse:
    await services.store.load(session_id, who.owner)  # 404 unless the caller owns it
    start = after or 0
    if last_event_id:
        raw = last_event_id.strip()
        if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_SEQ:
            raise InvalidInput("Last-Event-ID must be an event id (an integer)", field="Last-Event-ID")
        start = max(start, int(raw))
    return EventSourceResponse(
        _stream(services, request, session_id, start), ping=int(max(1, services.settings.sse_heartbeat_s))
    )


async def _stream(services: Services, request: Request, session_id: str, last: int) -> AsyncIterator[dict[str, Any]]:
    sub = services.bus.subscribe(session_id)
    services.metrics.sse_clients.inc()
    try:
        while not await request.is_disconnected():
            batch = await services.store.events_after(session_id, last, 500)
            for e in batch:
                yield {"id": str(e.seq), "event": e.type, "data": json.dumps(e.to_json(), ensure_ascii=False)}
                last = e.seq
            if len(batch) == 500:
                continue
            live = await sub.get(services.settings.sse_poll_s)  # a wake-up, or a poll of the store
            while live is not None and live.seq <= last:  # already sent
                live = await sub.get(0)
    finally:
        services.metrics.sse_clients.dec()
        sub.close()
