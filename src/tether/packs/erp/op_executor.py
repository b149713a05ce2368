"""The ERP's op executor: tether's confirmed ops carried out through the ERP's staging endpoints
(``/ai/execStaging/{sId}`` and friends), as the confirming user, idempotent on the op id (the
ERP's ``sId``). Nothing here decides whether an op may run: the confirm gate already did.

The binding (``tether.ops.executor_port``): every execute and validate carries the op's
fingerprint, which the ERP compares with its stored staged row (409, code -3 → ``StagedDiffers``);
``staged`` re-reads the row's fingerprint for tether's own check before it executes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tether.pack import Identity, Op, OpExecutor, OpOutcome, StagedDiffers, ToolError
from tether.packs.erp import messages
from tether.packs.erp.client import ErpRefused
from tether.packs.erp.port import ErpPort

NAME = "erp"
STAGED_DIFFERS = -3  # the ERP's code for a staged op whose values are not the ones confirmed


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
        fingerprint=answer.get("fingerprint") if status == "executed" else None,
    )


Revise = Callable[[Op, dict[str, Any], Identity], Awaitable[tuple[dict[str, Any], dict[str, Any], str | None]]]
CheckRevision = Callable[[Op, dict[str, Any], Identity], Awaitable[None]]


class ErpOpExecutor(OpExecutor):
    name = NAME

    def __init__(self, client: ErpPort, revise: Revise | None = None, check: CheckRevision | None = None) -> None:
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
        return await self._bound(op, credential, "execute")

    async def validate(self, op: Op, credential: str | None) -> OpOutcome:
        outcome = await self._bound(op, credential, "validate")
        outcome.fingerprint = None  # validated, not executed
        return outcome

    async def _bound(self, op: Op, credential: str | None, mode: str) -> OpOutcome:
        try:
            answer = await self.client.exec_staging(self._token(credential), op, mode)
        except ErpRefused as exc:
            if exc.erp_code == STAGED_DIFFERS:
                raise StagedDiffers("the ERP compared the fingerprints") from None
            raise
        return outcome_of(answer)

    async def staged(self, op: Op, credential: str | None) -> str | None:
        """The fingerprint of the ERP's staged row, as its answer states it."""
        found = (await self.client.staged(self._token(credential), op)).get("fingerprint")
        return str(found) if found else None

    async def status(self, op: Op, credential: str | None) -> OpOutcome:
        outcome = outcome_of(await self.client.staged(self._token(credential), op))
        outcome.fingerprint = None  # a manual op: what the user saved in the native form, not ours to bind
        return outcome

    async def cancel(self, op: Op, credential: str | None) -> OpOutcome:
        return outcome_of(await self.client.cancel_staging(self._token(credential), op))
