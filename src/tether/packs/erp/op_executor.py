"""The ERP's op executor: tether's confirmed ops carried out through the ERP's staging endpoints
(``/ai/execStaging/{sId}`` and friends), as the confirming user, idempotent on the op id (the
ERP's ``sId``). Nothing here decides whether an op may run: the confirm gate already did."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tether.pack import Identity, Op, OpExecutor, OpOutcome, ToolError
from tether.packs.erp import messages
from tether.packs.erp.client import ErpClient

NAME = "erp"


def outcome_of(answer: dict[str, Any]) -> OpOutcome:
    status = str(answer.get("status") or "failed")
    failed = status in ("failed", "cancelled", "expired")
    return OpOutcome(
        status,
        bill_id=answer.get("resultBillId"),
        bill_no=answer.get("resultBillNo"),
        link=answer.get("link"),
        message=answer.get("resultMsg") or ("待处理" if status == "confirmed" else None),
        error=(answer.get("errorMsg") or answer.get("msg") or status) if failed else None,
    )


Revise = Callable[[Op, dict[str, Any], Identity], Awaitable[tuple[dict[str, Any], dict[str, Any], str | None]]]
CheckRevision = Callable[[Op, dict[str, Any], Identity], Awaitable[None]]


class ErpOpExecutor(OpExecutor):
    name = NAME

    def __init__(self, client: ErpClient, revise: Revise | None = None, check: CheckRevision | None = None) -> None:
        self.client = client
        self._revise = revise
        self._check = check

    async def revise(
        self, op: Op, payload: dict[str, Any], who: Identity
    ) -> tuple[dict[str, Any], dict[str, Any], str | None]:
        """Edit before approve: (payload, diff, base version) of ``op`` with ``payload``, staged in the ERP."""
        if self._revise is None:
            raise ToolError("this ERP executor cannot edit a proposal", code=messages.CANNOT_EDIT)
        return await self._revise(op, payload, who)

    async def check_revision(self, op: Op, payload: dict[str, Any], who: Identity) -> None:
        """``revise``'s checks of the values, staging nothing."""
        if self._check is not None:
            await self._check(op, payload, who)

    @staticmethod
    def permits(op: Op, who: Identity) -> bool:
        """The form is still granted (seed §7: the ERP stores grants, tether enforces them)."""
        return op.form_id in who.grants

    @staticmethod
    def _token(credential: str | None) -> str:
        if not credential:
            raise ToolError("the ERP login is missing; log in again and retry", code=messages.LOGIN_MISSING)
        return credential

    async def execute(self, op: Op, credential: str | None) -> OpOutcome:
        return outcome_of(await self.client.exec_staging(self._token(credential), op.op_id, "execute"))

    async def validate(self, op: Op, credential: str | None) -> OpOutcome:
        return outcome_of(await self.client.exec_staging(self._token(credential), op.op_id, "validate"))

    async def status(self, op: Op, credential: str | None) -> OpOutcome:
        return outcome_of(await self.client.staged(self._token(credential), op.op_id))

    async def cancel(self, op: Op, credential: str | None) -> OpOutcome:
        return outcome_of(await self.client.cancel_staging(self._token(credential), op.op_id))
