"""Edit before approve, the ERP's part: a new payload for a staged create or update, checked and
resolved as ``propose_write`` checks a proposal, diffed again against the record as it is now
(an update is bound to its current version), and written to the ERP's staged op
(``/ai/reviseStaging``). An update's ``details`` are the whole bill, as its staged payload holds
them: a line of the record they leave out is deleted. It never writes business data."""

from __future__ import annotations

from typing import Any

from tether.pack import Identity, Interaction, InvalidInput, Op, ToolContext
from tether.packs.erp import messages
from tether.packs.erp.proposals import Plan, _plan_update, _target, _values, list_prices_of_changed, plan_create
from tether.packs.erp.schema import check_form_values
from tether.packs.erp.tools import Erp, token, version_of


async def revise(
    erp: Erp, op: Op, payload: dict[str, Any], who: Identity
) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """(the payload as staged, the diff, the base version) of ``op`` with ``payload``."""
    ctx, plan, target_status = await _plan(erp, op, payload, who)
    body: dict[str, Any] = {"payload": plan.payload}
    if plan.base_version is not None:
        body["baseVersion"] = version_of(plan.base_version)
    await erp.client.revise_staging(token(ctx), op.op_id, body)
    diff = {"fields": plan.fields, "lines": plan.lines, **({"targetStatus": target_status} if target_status else {})}
    return plan.payload, diff, None if plan.base_version is None else str(plan.base_version)


async def check_revision(erp: Erp, op: Op, payload: dict[str, Any], who: Identity) -> None:
    """``revise``'s checks and resolution, staging nothing (the ERP's reads only)."""
    await _plan(erp, op, payload, who)


async def _plan(erp: Erp, op: Op, payload: dict[str, Any], who: Identity) -> tuple[ToolContext, Plan, str | None]:
    if op.op_type not in ("create", "update"):
        raise InvalidInput(
            f"a {op.op_type} has no values to edit",
            field="payload",
            code=messages.NOTHING_TO_EDIT,
            params={"op": op.op_type},
        )
    ctx = ToolContext(who.owner, op.session_id or "", "", op.op_id, {}, who.grants, who.credential)
    config = await erp.form_config(ctx, op.form_id)
    _, problems = check_form_values(config, payload, creating=op.op_type == "create")
    if problems:  # each field's problem, coded, for the card's edit form to show beside its input
        first = problems[0]
        raise InvalidInput(f"{first['field']}: {first['message']}", field=first["field"], problems=problems)
    resolved = await _values(erp, ctx, config, op.op_type, payload, {})
    if isinstance(resolved, Interaction):
        raise InvalidInput(
            "a reference in the payload matches several records: name it by its code",
            field="payload",
            code=messages.AMBIGUOUS_REF,
        )
    if op.op_type == "update":
        record = await _target(erp, ctx, config, op.target_id, "update")
        plan = _plan_update(config, record, resolved.values, resolved.names, whole=True)  # the whole bill
        await list_prices_of_changed(erp, ctx, config, plan.lines)
        return ctx, plan, (record.get("master") or {}).get("status")
    return ctx, plan_create(config, resolved), None
