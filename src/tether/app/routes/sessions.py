"""Seed 000 §2.1: sessions, messages, resume, interactions, the runtime snapshot; seed 003 §3/§14:
the caller's conversations (named sessions) — the list, title search, rename and archive."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query

from tether.app.deps import IdentityDep, ServicesDep
from tether.app.limits import check_context
from tether.app.schemas import (
    MAX_TITLE,
    Answer,
    CancelBody,
    CreateSession,
    PatchSession,
    PostMessage,
    session_summary,
    session_view,
)
from tether.core.ports import SessionSummary
from tether.core.session import AgentSession, Identity
from tether.errors import InvalidInput
from tether.wiring import Services

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
    await _within_budget(services, who)
    s = await services.runtime.start_session(who, body.message, body.globalContext, wait=wait)
    return session_view(s) | {"writeState": await _write_state(services, who, s.session_id)}


async def _within_budget(services: Services, who: Identity) -> None:
    """429 naming the budget when a daily budget of the caller is spent: no turn starts."""
    await services.abuse.budget.admit_turn(who.owner)


_ARCHIVED = {"false": False, "true": True, "all": None}
OPEN_WRITE_STATES = ("draft", "processing", "pending", "awaiting_approval", "failed")  # a write that needs something


async def _view(services: Services, who: Identity, s: AgentSession) -> dict[str, Any]:
    """The snapshot with the stored title and archived flag (a rename may postdate ``s``) and the
    state of its newest write while that needs something."""
    view = session_view(s, await services.store.get_summary(s.session_id, who.owner))
    return view | {"writeState": await _write_state(services, who, s.session_id)}


async def _write_states(services: Services, who: Identity, session_ids: list[str]) -> dict[str, str]:
    """Session id -> the state of its newest write, for those whose newest write needs something."""
    latest = await services.ops.store.latest_by_session(who.owner, session_ids)
    return {sid: op.state for sid, op in latest.items() if op.state in OPEN_WRITE_STATES}


async def _write_state(services: Services, who: Identity, session_id: str) -> str | None:
    return (await _write_states(services, who, [session_id])).get(session_id)


async def _summaries(services: Services, who: Identity, items: list[SessionSummary]) -> list[dict[str, Any]]:
    """Each conversation's summary with the state of its newest write while that needs something."""
    states = await _write_states(services, who, [s.session_id for s in items])
    return [session_summary(s, states.get(s.session_id)) for s in items]


@router.get("", summary="The caller's conversations, most recently updated first")
async def list_sessions(
    services: ServicesDep,
    who: IdentityDep,
    limit: int = Query(20, ge=1, le=200),
    offset: int = Query(0, ge=0, le=2**31 - 1),
    q: str | None = Query(None, max_length=MAX_TITLE, description="titles containing this (any case, literally)"),
    archived: Literal["false", "true", "all"] = Query("false", description="archived ones only, or all"),
) -> dict[str, Any]:
    if q is not None and "\x00" in q:
        raise InvalidInput("q must not contain NUL characters", field="q")
    items = await services.store.list_sessions(who.owner, limit, offset, query=q or None, archived=_ARCHIVED[archived])
    return {"items": await _summaries(services, who, items), "limit": limit, "offset": offset}


@router.get("/{session_id}", summary="A session snapshot")
async def get_session(session_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return await _view(services, who, await services.store.load(session_id, who.owner))


@router.patch("/{session_id}", summary="Rename a conversation, archive it or bring it back")
async def patch_session(session_id: str, body: PatchSession, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    """Neither changes the session's version or its place in the list (``updatedAt``); 404 unless
    the caller owns it."""
    done = []  # PatchSession holds at least one of the two
    if body.title is not None:
        done.append(await services.store.rename(session_id, who.owner, body.title))
    if body.archived is not None:
        done.append(await services.store.set_archived(session_id, who.owner, body.archived))
    return (await _summaries(services, who, [done[-1]]))[0]


@router.post("/{session_id}/messages", summary="Append a user message and continue")
async def post_message(
    session_id: str,
    body: PostMessage,
    services: ServicesDep,
    who: IdentityDep,
    wait: bool = Query(True, description="false: return at once and follow the turn on /events"),
) -> dict[str, Any]:
    await _within_budget(services, who)
    return await _view(services, who, await services.runtime.post_message(session_id, who, body.message, wait=wait))


@router.post("/{session_id}/resume", summary="Resume a session whose async jobs are done or whose runner died")
async def resume(session_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    await _within_budget(services, who)
    return await _view(services, who, await services.runtime.resume(session_id, who))


@router.post(
    "/{session_id}/interactions/{interaction_id}",
    summary="Answer a pending question or form",
    description="A form's values are checked against its fields first: 422 {error, field, problems: [{field, code, "
    "message}]} and the interaction stays pending.",
)
async def answer(
    session_id: str, interaction_id: str, body: Answer, services: ServicesDep, who: IdentityDep
) -> dict[str, Any]:
    s = await services.store.load(session_id, who.owner)
    entry = next((e for e in s.pending_entries() if e["interactionId"] == interaction_id), {})
    if entry.get("kind") == "proposal":
        raise InvalidInput("a write proposal is confirmed or cancelled through /api/ops, not answered here")
    result = {"values": body.values} if body.values is not None else {"answer": body.answer}
    await _within_budget(services, who)
    return await _view(
        services, who, await services.runtime.complete_interaction(session_id, who, interaction_id, result)
    )


@router.post(
    "/{session_id}/cancel",
    summary="Stop the session's turn",
    description="Cancels the model call and the tool in flight; a session waiting for a callback, an answer or a "
    "confirmation is cancelled too, and its draft write proposals with it. The session ends CANCELLED (a TURN_FINISHED event) and goes on with the next "
    "message. 409 when it has already finished, or while a confirmed automatic write is being carried out (its "
    "outcome ends the turn). A session whose confirmed write awaits approval answers 409 with code "
    'SESSION_AWAITING_APPROVAL: stopping is not withdrawing; {"withdraw": true} withdraws the request (撤回申请) and '
    "cancels the session.",
)
async def cancel(
    session_id: str, services: ServicesDep, who: IdentityDep, body: CancelBody | None = None
) -> dict[str, Any]:
    withdraw = body is not None and body.withdraw
    s = await services.runtime.cancel(session_id, who, withdraw)  # its drafts go with it (the op queue's policy)
    return await _view(services, who, s)


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
    return {"session": await _view(services, who, s), "events": events}
