"""Seed 000 §2.1: sessions, messages, resume, interactions, the runtime snapshot, and the list."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from tether.app.deps import IdentityDep, ServicesDep
from tether.app.limits import check_context
from tether.app.schemas import Answer, CreateSession, PostMessage, session_summary, session_view
from tether.errors import InvalidInput

router = APIRouter(prefix="/api/agent/sessions", tags=["sessions"])


@router.post("", summary="Create a session and run its first turn")
async def create_session(
    body: CreateSession,
    services: ServicesDep,
    who: IdentityDep,
    wait: bool = Query(True, description="false: return at once and follow the turn on /events"),
) -> dict[str, Any]:
    hidden = [k for k in body.globalContext if k.startswith("_")]
    if hidden:
        raise InvalidInput(f"globalContext keys may not start with '_': {', '.join(hidden)}", field="globalContext")
    limits = services.settings
    check_context(
        body.globalContext,
        max_bytes=limits.max_context_bytes,
        max_depth=limits.max_context_depth,
        max_keys=limits.max_context_keys,
    )
    s = await services.runtime.start_session(who, body.message, body.globalContext, wait=wait)
    return session_view(s)


@router.get("", summary="The caller's sessions, newest first")
async def list_sessions(
    services: ServicesDep,
    who: IdentityDep,
    limit: int = Query(20, ge=1, le=200),
    offset: int = Query(0, ge=0, le=2**31 - 1),
) -> dict[str, Any]:
    items = await services.store.list_sessions(who.owner, limit, offset)
    return {"items": [session_summary(s) for s in items], "limit": limit, "offset": offset}


@router.get("/{session_id}", summary="A session snapshot")
async def get_session(session_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return session_view(await services.store.load(session_id, who.owner))


@router.post("/{session_id}/messages", summary="Append a user message and continue")
async def post_message(
    session_id: str,
    body: PostMessage,
    services: ServicesDep,
    who: IdentityDep,
    wait: bool = Query(True, description="false: return at once and follow the turn on /events"),
) -> dict[str, Any]:
    return session_view(await services.runtime.post_message(session_id, who, body.message, wait=wait))


@router.post("/{session_id}/resume", summary="Resume a session whose async jobs are done or whose runner died")
async def resume(session_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return session_view(await services.runtime.resume(session_id, who))


@router.post("/{session_id}/interactions/{interaction_id}", summary="Answer a pending question or form")
async def answer(
    session_id: str, interaction_id: str, body: Answer, services: ServicesDep, who: IdentityDep
) -> dict[str, Any]:
    s = await services.store.load(session_id, who.owner)
    entry = next((e for e in s.pending_entries() if e["interactionId"] == interaction_id), {})
    if entry.get("kind") == "proposal":
        raise InvalidInput("a write proposal is confirmed or cancelled through /api/ops, not answered here")
    result = {"values": body.values} if body.values is not None else {"answer": body.answer}
    return session_view(await services.runtime.complete_interaction(session_id, who, interaction_id, result))


@router.get("/{session_id}/runtime", summary="The persisted session and its event history")
async def runtime_snapshot(session_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    s = await services.store.load(session_id, who.owner)
    events: list[dict[str, Any]] = []
    after = 0
    while True:
        batch = await services.store.events_after(session_id, after, 500)
        events += [e.to_json() for e in batch]
        if len(batch) < 500:
            break
        after = batch[-1].seq
    return {"session": session_view(s), "events": events}
