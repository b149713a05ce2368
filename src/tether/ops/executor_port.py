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
"""

from __future__ import annotations

from typing import Any, Protocol

from tether.core.session import Identity
from tether.errors import Conflict
from tether.ops.model import Op, OpOutcome


class OpExecutor(Protocol):
    name: str

    async def execute(self, op: Op, credential: str | None) -> OpOutcome:
        """Carry the op out in one transaction of the business system (auto ops)."""
        ...

    async def validate(self, op: Op, credential: str | None) -> OpOutcome:
        """Check a manual op is still valid and make it ready for the user's own form (``confirmed``)."""
        ...

    async def status(self, op: Op, credential: str | None) -> OpOutcome:
        """The op's status in the business system (reconciliation)."""
        ...

    async def cancel(self, op: Op, credential: str | None) -> OpOutcome: ...

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
