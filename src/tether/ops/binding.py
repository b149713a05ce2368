"""What runs is what was shown: the op's executor is asked, right before it executes or validates
an op, for the fingerprint of what the business system holds staged for it
(``OpExecutor.staged``); the business system compares again when it runs it
(``StagedDiffers``). On any difference the op is voided instead of executed, in one transaction:
``executing | confirmed → draft`` with the reason as its error, the approvals given to it void
(its request ``void``), and an ``op.binding_void`` audit row naming both fingerprints. The op is
back with its requester as a draft; their next confirm asks for approvals again, and only an edit
through tether (which restages the values) or a new proposal can make it run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether.core.events import EventType
from tether.core.session import Identity, Owner
from tether.errors import Conflict, NotFound
from tether.ops.executor_port import OpExecutor, StagedDiffers, fingerprint_of
from tether.ops.model import Op
from tether.store.writer import Write

if TYPE_CHECKING:
    from tether.ops.service import OpService

log = logging.getLogger("tether.ops")
VOIDED = "{why}: the op is back to draft and its approvals are void; edit the proposal or propose again"


async def check_staged(executor: OpExecutor, op: Op, credential: str | None) -> None:
    """``StagedDiffers`` when the business system holds other values for ``op`` than tether does."""
    there = await executor.staged(op, credential)
    if there is not None and there != fingerprint_of(op):
        raise StagedDiffers(f"tether's re-read found fingerprint {there[:12]}…, approved {fingerprint_of(op)[:12]}…")


async def void(ops: OpService, op: Op, who: Identity, exc: StagedDiffers, from_statuses: tuple[str, ...]) -> Op:
    """Void ``op`` (see the module's docstring); the op as it is after."""
    now = time.time()
    error = VOIDED.format(why=exc.message)[:4000]
    values = {"status": "draft", "lease_until": None, "error": error, "updated_at": now}
    voided = replace(op, status="draft", lease_until=None, error=error)
    move = ops.store.move_run(op.op_id, from_statuses, values)
    approvals = ops.approvals

    def run(cur: Any) -> bool:
        if not move(cur):
            return False
        count = 0
        if approvals is not None and approvals.store.lock_request(cur, op.op_id) is not None:
            count = approvals.store.void_approvals(cur, op.op_id, error)
            approvals.store.update_request(cur, op.op_id, {"status": "void", "void_reason": error, "decided_at": now})
        details = {"reason": exc.message, "voided": count, "stagedFingerprint": fingerprint_of(op)}
        ops.audit.append_run(ops._audit_row(voided, "binding_void", details))(cur)
        return True

    assert ops.store.sessions is not None
    if not await ops.store.sessions.submit(Write(run)):
        return (await ops.store.get(op.op_id)) or op
    log.warning("op %s: the staged op differs from what was approved; voided, nothing executed", op.op_id)
    await _show(ops, voided)
    return voided


async def _show(ops: OpService, op: Op) -> None:
    """The requester's card reads the op as a draft again, with why (a failure here is logged)."""
    if not op.session_id:
        return
    event = {"interactionId": op.interaction_id, **op.view(), "voided": True}
    try:
        await ops.runtime.amend_interaction(
            op.session_id,
            op.interaction_id,
            {"voided": op.error},
            [(EventType.OP_RESULT, event)],
            Owner(op.owner_user, op.owner_tenant),
        )
    except (NotFound, Conflict) as exc:
        log.warning("op %s: its void was not shown in session %s: %s", op.op_id, op.session_id, exc)
