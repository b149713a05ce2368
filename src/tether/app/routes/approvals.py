"""The approvers' endpoints (docs/approvals.md): the requests they may decide, approve, reject.
Deterministic, no model involved. Without ``TETHER_APPROVAL_POLICIES`` there are none (404)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from tether.app.deps import IdentityDep, ServicesDep
from tether.errors import NotFound
from tether.ops.approvals.service import ApprovalService
from tether.wiring import Services

router = APIRouter(prefix="/api/approvals", tags=["approvals"])


class Rejection(BaseModel):
    comment: str = Field("", max_length=2000, description="why: shown to the requester")


def _approvals(services: Services) -> ApprovalService:
    approvals = services.ops.approvals
    if not isinstance(approvals, ApprovalService):
        raise NotFound("no approval policy is configured (TETHER_APPROVAL_POLICIES)")
    return approvals


@router.get("", summary="Approval requests the caller may decide, newest first")
async def list_approvals(
    services: ServicesDep,
    who: IdentityDep,
    status: str = Query("pending"),
    limit: int = Query(50, ge=1, le=200),
) -> dict[str, Any]:
    return {"items": await _approvals(services).listed(who, status, limit)}


@router.get("/{op_id}", summary="An op's approval: what it needs, who approved, what was voided")
async def get_approval(op_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return await _approvals(services).get(op_id, who)


@router.post(
    "/{op_id}/approve",
    summary="Approve an op awaiting approval",
    description="Counts once per person; the approval that completes the quorum executes the op as its "
    "confirm would. The requester: 403. Without the grant the rule names: 403. Expired or rejected: 409.",
)
async def approve(op_id: str, services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
    return await _approvals(services).approve(op_id, who)


@router.post("/{op_id}/reject", summary="Reject an op awaiting approval (the comment is shown to the requester)")
async def reject(op_id: str, services: ServicesDep, who: IdentityDep, body: Rejection | None = None) -> dict[str, Any]:
    return await _approvals(services).reject(op_id, who, body.comment if body else "")
