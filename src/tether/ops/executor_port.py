"""The port through which an op reaches the business system. Packs contribute executors
(``Pack.op_executors``); the op names its executor.

Every call is made with the caller's own credential (the user is always present: there is no
service account), and must be idempotent on ``op.op_id``: a repeated ``execute`` of an op the
business system already executed returns that first outcome and writes nothing again.
An executor raises ``ToolError`` when the business system cannot be reached or refuses the call;
it returns an ``OpOutcome`` with status ``failed`` when the op itself failed there.

Two calls have a default an executor inherits by subclassing the port: ``permits(op, who)``
(whether the caller may still act on the op — the ERP's: its form is still among the caller's
grants; confirm, edit and approval ask it first, and an op it refuses is answered 404 with
nothing changed), ``revise(op, payload, who)`` (edit before approve; by default an executor
cannot, and the edit is refused with 409) and ``check_revision`` (``revise``'s checks without the
staging; by default none).

**What runs is what was shown** (the binding; docs/approvals.md, "The binding"): the person
confirms, and the approvers sign, an op whose values tether holds; ``fingerprint_of(op)`` is the
SHA-256 of those bytes — type, form, target, base version, payload, source — as canonical JSON
(``staged_fingerprint``: keys sorted, no spaces, UTF-8). Every adapter must keep two promises:

- ``execute`` and ``validate`` carry ``fingerprint_of(op)`` to the business system, which runs the
  op only when what it holds staged for ``op.op_id`` has that fingerprint, and otherwise refuses
  with nothing written; the executor then raises ``StagedDiffers``. An outcome of an executed op
  says the fingerprint of what ran (``OpOutcome.fingerprint``), recorded on the ``op.execute``
  audit row.
- ``staged(op, credential)`` re-reads what the business system holds for the op and returns its
  fingerprint by the same algorithm (None: the adapter cannot tell — then the business system's
  own comparison is the only check). Tether asks it before every execution and, on a difference,
  voids the op (``tether.ops.binding``): approvals void, the op back to its requester as a draft,
  an ``op.binding_void`` audit row; nothing is executed.

Only tether changes a staged op's values (``revise``, with the agent backend's credential): a
business system must refuse a revision by a user's credential alone.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from tether.core.session import Identity
from tether.errors import Conflict, ToolError
from tether.ops.model import Op, OpOutcome


def staged_fingerprint(
    op_type: str,
    form_id: str,
    target_id: str | None,
    base_version: str | int | None,
    payload: dict[str, Any] | None,
    source_ref: dict[str, Any] | None,
) -> str:
    """The fingerprint of an op's bytes as staged: what tether and the business system both compute."""
    body = [
        op_type,
        str(form_id),
        target_id or None,
        None if base_version is None else str(base_version),
        payload or {},
        source_ref or None,
    ]
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint_of(op: Op) -> str:
    """The fingerprint of the values tether holds for ``op`` (those confirmed and approved)."""
    return staged_fingerprint(op.op_type, op.form_id, op.target_id, op.base_version, op.payload, op.source_ref)


class StagedDiffers(ToolError):
    """The business system holds other values for the op than those confirmed and approved:
    nothing was executed."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the staged op in the business system differs from what was confirmed and approved ({detail}); "
            "nothing was executed",
            retryable=False,
        )


class OpExecutor(Protocol):
    name: str

    async def execute(self, op: Op, credential: str | None) -> OpOutcome:
        """Carry the op out in one transaction of the business system (auto ops), bound to
        ``fingerprint_of(op)``: ``StagedDiffers`` when the business system holds other values."""
        ...

    async def validate(self, op: Op, credential: str | None) -> OpOutcome:
        """Check a manual op is still valid and make it ready for the user's own form (``confirmed``)."""
        ...

    async def status(self, op: Op, credential: str | None) -> OpOutcome:
        """The op's status in the business system (reconciliation)."""
        ...

    async def cancel(self, op: Op, credential: str | None) -> OpOutcome: ...

    async def staged(self, op: Op, credential: str | None) -> str | None:
        """The fingerprint of what the business system holds staged for ``op`` (``staged_fingerprint``),
        or None when this executor cannot tell."""
        return None

    def permits(self, op: Op, who: Identity) -> bool:
        """Whether ``who`` may still act on ``op``; by default its owner always may."""
        return True

    async def revise(
        self, op: Op, payload: dict[str, Any], who: Identity
    ) -> tuple[dict[str, Any], dict[str, Any], str | None]:
        """Edit before approve: the (payload, diff, base version) of ``op`` with the edited
        ``payload``, staged in the business system. Raise ``ToolError`` when the values are refused."""
        raise Conflict("this op's executor cannot edit a proposal")

    async def check_revision(self, op: Op, payload: dict[str, Any], who: Identity) -> None:
        """Whether ``revise`` would take ``payload``, staging nothing: raise ``ToolError`` when the
        values are refused. Asked before an op awaiting approval goes back to draft, so values that
        do not fit leave its approvals standing; by default nothing is checked ahead."""
        return None
