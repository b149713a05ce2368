"""How the approval gate joins the op service (called by ``tether.wiring`` when
``TETHER_APPROVAL_POLICIES`` is set): a policy that cannot be read stops the start."""

from __future__ import annotations

from pathlib import Path

from tether.ops.approvals.service import ApprovalService
from tether.ops.approvals.source import PolicySource
from tether.ops.service import OpService


def install_approvals(ops: OpService, path: str | Path) -> ApprovalService:
    approvals = ApprovalService(ops, PolicySource(path))
    ops.approvals = approvals
    return approvals
