"""Edit before approve: the requester replaces the proposed values of their op while it is a draft
(``PATCH /api/ops/{opId}``) or waits for approval. The op's executor checks the new values as it
checks a proposal, diffs them again and stages them in the business system; the op row then takes
the new payload, diff and base version with an ``op.edit`` audit row (the diff before and after)
in one transaction. An op that was awaiting approval goes back to ``draft``: the approvals given
are void ("the op was edited by …"), and its requester's next confirm asks for approvals of the
edited op.

An approver may edit an op awaiting approval too, when every rule it matched says
``approvers_may_edit`` (``ApprovalService.editable``, checked again on the locked request row): the
same checks and staging, as the approver; the op then goes back to its requester as a draft, so the
person in whose name the write runs confirms the values before anything is executed, and the
editor's edit is not their approval.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any, TypeVar

from tether.core.session import Identity
from tether.errors import Conflict, InvalidInput, NotFound, ToolError
from tether.ops.revision_notice import show_edit
from tether.ops.service import OpService
from tether.ops.taint import keep_marks
from tether.store.writer import Write

EDITABLE = ("draft", "awaiting")
EDITED = "the op was edited by {editor}"
T = TypeVar("T")


async def revise(ops: OpService, op_id: str, payload: Any, who: Identity) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise InvalidInput("payload must be an object {field: value, details?: [...]}", field="payload")
    op = await ops.store.get(op_id, who.owner)
    approver = op is None and ops.approvals is not None
    if approver:  # not the requester's: one of its approvers, where the policy lets them edit
        op = await ops.approvals.editable(op_id, who)
    elif op is None or not ops._permits(op, who):
        raise NotFound("no such op")
    assert op is not None
    if op.status not in EDITABLE:
        raise Conflict(f"the op is {op.status}; only a draft or an op awaiting approval can be edited")
    executor = ops.executors.get(op.executor)
    if executor is None:
        raise Conflict("this op's executor is not installed; it cannot be edited")
    if op.status == "awaiting":  # values that do not fit are refused before anything is voided
        await _refused_as_input(executor.check_revision(op, payload, who))
        if not await _back_to_draft(ops, op_id, who, approver):
            raise Conflict("the op was decided while it was being edited; it can no longer be edited")
    new_payload, diff, base = await _refused_as_input(executor.revise(op, payload, who))
    diff = keep_marks(op.diff, diff)
    now = time.time()
    values = {
        "payload": json.dumps(new_payload, ensure_ascii=False, default=str),
        "diff": json.dumps(diff, ensure_ascii=False, default=str),
        "base_version": base,
        "updated_at": now,
    }
    edited = replace(op, status="draft", payload=new_payload, diff=diff, base_version=base)
    details = {"before": op.diff, "after": diff, "payload": new_payload, "editor": who.owner.user_id}
    move = ops.store.move_run(op_id, ("draft",), values)
    append = ops.audit.append_run(ops._audit_row(edited, "edit", details))

    def run(cur: Any) -> bool:
        if not move(cur):
            return False
        append(cur)
        return True

    assert ops.store.sessions is not None
    if not await ops.store.sessions.submit(Write(run)):
        raise Conflict("the op was confirmed while it was being edited; the edit was not recorded")
    await show_edit(ops, edited, who)
    return edited.view()


async def _refused_as_input(call: Awaitable[T]) -> T:
    """The business system's refusal of the values: 422, as a proposal's would be."""
    try:
        return await call
    except ToolError as exc:
        raise InvalidInput(exc.message, field="payload") from None


async def _back_to_draft(ops: OpService, op_id: str, who: Identity, approver: bool) -> bool:
    """``awaiting → draft``: the approvals given are void and the request ends (one transaction).
    ``approver``: the editor is an approver, whose right to edit is checked again on the locked
    request (a decision or another edit may have landed since ``editable``)."""
    approvals = ops.approvals
    now = time.time()
    reason = EDITED.format(editor=who.owner.user_id)
    move = ops.store.move_run(op_id, ("awaiting",), {"status": "draft", "updated_at": now})
    read = ops.store.get_run(op_id, None if approver else who.owner)

    def run(cur: Any) -> bool:
        locked = approvals.store.lock_request(cur, op_id) if approvals is not None else None
        if approver:
            current = read(cur)
            if locked is None or current is None or approvals.edit_refusal(current, locked, who, now) is not None:
                return False
        if not move(cur):
            return False
        current = read(cur)
        voided = 0
        if approvals is not None:
            voided = approvals.store.void_approvals(cur, op_id, reason)
            approvals.store.update_request(cur, op_id, {"status": "void", "void_reason": reason, "decided_at": now})
        if current is not None:
            details = {"reason": reason, "voided": voided, "editor": who.owner.user_id}
            ops.audit.append_run(ops._audit_row(current, "approval_void", details))(cur)
        return True

    assert ops.store.sessions is not None
    return bool(await ops.store.sessions.submit(Write(run)))
