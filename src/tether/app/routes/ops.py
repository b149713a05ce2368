"""The op queue's deterministic endpoints (docs/writes.md): confirm, cancel, read, list. No model is
involved; only the proposing identity sees an op (anyone else gets 404, as for an unknown id)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from tether.app.deps import IdentityDep, ServicesDep
from tether.errors import InvalidInput
from tether.ops.model import STATUSES
from tether.ops.revision import revise

router = APIRouter(prefix="/api/ops", tags=["ops"])


class Confirm(BaseModel):
    acknowledge_tainted: bool = Field(
        False,
        alias="acknowledgeTainted",
        description="the person checked the values marked tainted in the diff (copied from text read in the session)",
    )


@router.post(
    "/{op_id}/confirm",
    summary="Confirm a write proposal",
    description="draft or failed: executes (auto ops answer state=processing at once; the outcome follows "
    "as OP_RESULT) or validates (manual ops: state=pending with a prefill link). Already confirmed, "
    "executing or executed: the state, nothing executed again. Cancelled or expired: 409. A diff with values "
    "marked tainted, under a policy that asks for it: 409 unless the body says acknowledgeTainted: true.",
)
async def confirm(op_id: str, services: ServicesDep, who: IdentityDep, body: Confirm | None = None) -> dict[str, Any]:
    return await services.ops.confirm(op_id, who, acknowledged=body is not None and body.acknowledge_tainted)


class Edit(BaseModel):
    payload: dict[str, Any] = Field(description="the proposed values, as propose_write takes them")


@router.patch(
    "/{op_id}",
    summary="Edit a proposal before it is confirmed or approved",
    description="The requester's new values, checked against the form as a proposal is, diffed and staged again "
    "(docs/approvals.md). An op awaiting approval goes back to draft: its approvals are void. An approver may edit "
    "an op awaiting approval where every rule it matched says approvers_may_edit (else 403); the op then goes back "
    "to its requester to confirm. 422 for values that do not fit; 409 once it is confirmed.",
)
async def edit(op_id: str, body: Edit, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return await revise(services.ops, op_id, body.payload, who)


@router.post("/{op_id}/cancel", summary="Cancel a draft proposal")
async def cancel(op_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return await services.ops.cancel(op_id, who)


@router.get("/{op_id}", summary="An op's state (reconciled with the business system)")
async def get_op(op_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return await services.ops.get(op_id, who)


@router.get("", summary="The caller's ops, newest first")
async def list_ops(
    services: ServicesDep,
    who: IdentityDep,
    status: str | None = Query(None),
    session_id: str | None = Query(None, alias="sessionId", max_length=64),
    limit: int = Query(50, ge=1, le=200),
) -> dict[str, Any]:
    status, session_id = status or None, session_id or None  # an empty parameter filters nothing, as a form sends it
    if status is not None and status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)} (or left out for all)", field="status")
    return {"items": await services.ops.list_ops(who, status, session_id, limit)}
