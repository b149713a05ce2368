"""``propose_write``: the ERP pack's one write tool (seed 003 §10). It never writes: it checks the
form gate and the payload against the form's schema, resolves references, computes the diff
against the current record (and its version as the fingerprint), stages a draft in the ERP
(``/ai/staging`` with ``sId`` = tether's op id) and records the op as ``draft``. The turn then
waits for the person's confirm, which only ``/api/ops/{opId}/confirm`` carries out.

Whether an op executes at once after the confirm (auto: a quotation's create, a generate) is
decided here from the form and the op type, never by the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from tether.pack import Interaction, InvalidInput, Op, Tool, ToolContext, ToolError, draft_op, propose_op, tool
from tether.packs.erp import authz, messages, refs
from tether.packs.erp.defaults import with_defaults
from tether.packs.erp.diff import created_lines, field_changes, merge_lines
from tether.packs.erp.identity import brand_of
from tether.packs.erp.op_executor import NAME as EXECUTOR
from tether.packs.erp.schema import check_form_values, describe, detail_fields
from tether.packs.erp.tools import BILL_NO, Erp, login_guard, no_bill, record_of, token, version_of

OPS = ("create", "update", "delete", "examine", "generate")
AUTO_CREATE_FORMS = frozenset({"2001"})  # quotations: the ERP carries them out at once (seed §10)
VERBS = {"create": "新增", "update": "修改", "delete": "删除", "examine": "审核", "generate": "生成"}


def is_auto(config: dict[str, Any], op: str) -> bool:
    """Whether the confirm executes the op at once (else the person saves it in the ERP's own
    form): an ERP with no such form executes every op on the confirm (``executesOnConfirm``)."""
    if config.get("executesOnConfirm"):
        return True
    return op == "generate" or (op == "create" and str(config["formId"]) in AUTO_CREATE_FORMS)


def list_price(config: dict[str, Any], item: dict[str, Any]) -> Any:
    """An item's list price as its record gives it (``detail.listPriceColumn``, default ``price``)."""
    return item.get(str((config.get("detail") or {}).get("listPriceColumn") or "price"))


def chosen(payload: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The answer to a disambiguation question: the chosen candidate, and the same proposal again
    with it in place (``callAgain``), so a model — or the offline planner — proposes once more."""
    text = str(answer.get("answer") or "").strip().split(" ")[0]  # a chip's text starts with the code
    if not text:
        raise InvalidInput("answer: choose one of the candidates", field="answer", code=messages.CHOOSE_ONE)
    field_name = str(payload.get("field") or "")
    out: dict[str, Any] = {
        "answer": text,
        "field": field_name,
        "text": f"已选择 {text}。请用它再提议一次（{field_name} = {text}）。",
    }
    again = payload.get("proposeAgain")
    if isinstance(again, dict) and field_name:
        args = json.loads(json.dumps(again, default=str))  # a deep copy: the question's payload stays as shown
        _set_path(args.setdefault("payload", {}), field_name, text)
        out["callAgain"] = {"args": args}
    return out


_PATH_PART = re.compile(r"([^.\[\]]+)(?:\[(\d+)\])?")


def _set_path(values: dict[str, Any], path: str, value: Any) -> None:
    """``customer_id`` or ``details[1].material_id`` set in a payload."""
    parts = path.split(".")
    target: Any = values
    for part in parts[:-1]:
        m = _PATH_PART.fullmatch(part)
        if m is None or not isinstance(target, dict):
            return
        target = target.get(m[1])
        if m[2] is not None:
            target = target[int(m[2])] if isinstance(target, list) and int(m[2]) < len(target) else None
    if isinstance(target, dict):
        target[parts[-1]] = value


def question(amb: refs.Ambiguous, again: dict[str, Any] | None = None) -> Interaction:
    text = f"“{amb.value}” 匹配到多个{amb.label}，请选择一个（然后再提议一次）："
    options = [c["label"] for c in amb.candidates]  # "M0001 深沟球轴承 6204-2RS": the code first
    payload: dict[str, Any] = {"question": text, "options": options, "allowFreeText": True, "field": amb.field}
    if again is not None:
        payload["proposeAgain"] = again
    return Interaction("question", payload)


async def _target(erp: Erp, ctx: ToolContext, config: dict[str, Any], record_id: str | None, op: str) -> dict[str, Any]:
    if not record_id:
        raise ToolError(
            f"record_id (the record's id or bill number) is required to {op}",
            code=messages.NEEDS_RECORD,
            params={"op": op},
        )
    form = str(config["formId"])
    wanted = authz.record_id(record_id)
    if BILL_NO.match(wanted):
        by = str(config.get("billNoFilter") or "bill_no")
        found = await erp.client.read(token(ctx), form, {by: wanted}, 1, 5)
        exact = [r for r in found["rows"] if str(r.get(by) or "").upper() == wanted.upper()]
        if not exact:
            raise no_bill(config, wanted)
        wanted = str(exact[0]["id"])
    return await record_of(erp, ctx, config, wanted)


@dataclass
class Plan:
    """What the proposal stages and shows."""

    payload: dict[str, Any]
    fields: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)
    target_id: str | None = None
    base_version: Any = None
    label: str | None = None


def _plan_update(
    config: dict[str, Any], record: dict[str, Any], values: dict[str, Any], names: dict[str, str], whole: bool = False
) -> Plan:
    """``whole``: ``values["details"]`` is every line of the bill (an edit's), not only the changed ones."""
    master, current = record.get("master") or {}, record.get("details") or []
    plan = Plan({}, target_id=str(master.get("id")), base_version=master.get("version"), label=_label(master))
    plan.fields = field_changes(config, master, values, names)
    plan.payload = {f["field"]: values[f["field"]] for f in plan.fields}
    if "details" in values:
        merged, plan.lines, missing = merge_lines(config, current, values["details"], names, whole=whole)
        if missing:
            lines = ", ".join(str(n) for n in missing)
            raise ToolError(
                f"{plan.label} has no line {lines}: name a line by its line_no or its material",
                code=messages.NO_LINE,
                params={"record": plan.label, "lines": lines},
            )
        plan.payload["details"] = merged
    if not plan.fields and not plan.lines:
        raise ToolError(
            f"nothing would change: {plan.label} already has these values",
            code=messages.NO_CHANGE,
            params={"record": plan.label},
        )
    return plan


def _label(master: dict[str, Any]) -> str:
    return str(
        master.get("bill_no") or master.get("number") or master.get("code") or master.get("name") or master.get("id")
    )


def _plan_target(config: dict[str, Any], op: str, record: dict[str, Any], payload: dict[str, Any]) -> Plan:
    """delete / examine: no field values, the record's version as the fingerprint."""
    master = record.get("master") or {}
    plan = Plan({}, target_id=str(master.get("id")), base_version=master.get("version"), label=_label(master))
    if op == "delete":
        plan.fields = [{"field": "record", "label": str(config.get("name")), "before": plan.label, "after": None}]
        return plan
    column = str(config.get("statusColumn") or "status")
    status = master.get(column)
    steps = config.get("examineSteps")
    if isinstance(steps, dict):  # the ERP's own workflow: what examining a record in this status does
        step = steps.get(str(status))
        if not isinstance(step, dict):
            raise ToolError(
                f"{plan.label} is {status}: it cannot be examined from there",
                code=messages.NO_EXAMINE,
                params={"form": f"{config.get('name')} {plan.label}"},
            )
        label = next((str(f["label"]) for f in config.get("master") or [] if f.get("column") == column), "状态")
        plan.fields = [{"field": column, "label": label, "before": status, "after": step["to"]}]
        plan.payload = {"action": str(step["action"])}
        return plan
    undo = payload.get("action") == "unexamine"
    plan.fields = [{"field": "status", "label": "状态", "before": status, "after": "draft" if undo else "examined"}]
    plan.payload = {"action": "unexamine"} if undo else {}
    return plan


async def _plan_generate(
    erp: Erp, ctx: ToolContext, config: dict[str, Any], resolved: refs.Resolved, source_ref: dict[str, Any] | None
) -> tuple[Plan, dict[str, Any]]:
    """generate: the upstream bill (its form gated like any other, a bill number resolved to its
    id) and the lines it brings; ``payload`` holds master values overriding the generated ones."""
    if not isinstance(source_ref, dict) or not source_ref.get("formId") or not source_ref.get("billId"):
        raise ToolError(
            "source_ref {formId, billId} (the upstream bill) is required to generate", code=messages.NEEDS_SOURCE
        )
    source_config = await erp.form_config(ctx, source_ref["formId"])
    source = await _target(erp, ctx, source_config, str(source_ref["billId"]), "generate from")
    master = source.get("master") or {}
    ref: dict[str, Any] = {"formId": str(source_config["formId"]), "billId": str(master.get("id"))}
    if source_ref.get("lineIds"):
        ref["lineIds"] = [str(x) for x in source_ref["lineIds"]]
    label = f"{source_config.get('name')} {_label(master)}"
    fields = [{"field": "source", "label": "来源单据", "before": None, "after": label}]
    fields += field_changes(config, {}, resolved.values, resolved.names)
    lines = [
        {
            "lineNo": line.get("line_no"),
            "change": "add",
            "fields": [
                {"field": "material_id", "label": "物料", "before": None, "after": line.get("material_code")},
                {"field": "qty", "label": "数量", "before": None, "after": line.get("qty")},
                *(
                    {"field": k, "label": label, "before": None, "after": line[k]}
                    for k, label in (("unit_price", "单价"), ("amount", "金额"))
                    if line.get(k) is not None
                ),
            ],
        }
        for line in source.get("details") or []
        if not ref.get("lineIds") or str(line.get("id")) in ref["lineIds"]
    ]
    # bound to the upstream bill as the person sees it: changed before the confirm, the op fails
    return Plan(resolved.values, fields, lines, base_version=master.get("version"), label=f"← {label}"), ref


async def _values(
    erp: Erp, ctx: ToolContext, config: dict[str, Any], op: str, payload: dict[str, Any], call: dict[str, Any]
) -> Any:
    """The checked, resolved values (or a question when a reference is ambiguous; its answer
    proposes ``call`` again, with the checked values and the chosen candidate)."""
    if op in ("delete", "examine"):
        return refs.Resolved({})
    values, problems = check_form_values(config, payload, creating=op == "create")
    if problems:
        raise messages.invalid_values(
            config,
            problems,
            f"the payload does not fit form {config['formId']} ({config.get('name')}): {describe(problems)}",
        )
    resolved = await refs.resolve(erp.client, token(ctx), config, values)
    if resolved.ambiguous is not None:
        again = {k: v for k, v in call.items() if v is not None}
        return question(resolved.ambiguous, {**again, "payload": resolved.values})
    if resolved.problems:
        first = resolved.problems[0]
        raise ToolError(
            f"cannot resolve: {describe(resolved.problems)}",
            code=messages.NOT_FOUND,
            params={"label": first.get("label", first["field"]), "value": first.get("value", "")},
        )
    return resolved


def _price_lines(config: dict[str, Any], resolved: refs.Resolved) -> None:
    """A new line without a unit price gets its material's list price now — the price the ERP
    would use — so the person confirms the price that will be written, not a blank."""
    if "unit_price" not in {str(f["column"]) for f in detail_fields(config)}:
        return
    for n, line in enumerate(resolved.values.get("details") or []):
        material = resolved.records.get(f"details[{n}].material_id") or {}
        price = list_price(config, material)
        if isinstance(line, dict) and line.get("unit_price") is None and price is not None:
            line["unit_price"] = float(price)


def plan_create(config: dict[str, Any], resolved: refs.Resolved) -> Plan:
    """create: the values with the form's defaults for what they leave out (shown as added, as
    every value is), and the new lines priced."""
    resolved.values = with_defaults(config, resolved.values, date.today())
    _price_lines(config, resolved)
    fields = field_changes(config, {}, resolved.values, resolved.names)
    lines = created_lines(config, resolved.values.get("details") or [], resolved.names)
    _list_prices(config, lines, resolved)
    return Plan(resolved.values, fields, lines)


def _list_prices(config: dict[str, Any], lines: list[dict[str, Any]], resolved: refs.Resolved) -> None:
    """Each new line's material list price (``listPrice``), for the approver and the approval
    policy's discount rule (docs/approvals.md)."""
    for n, line in enumerate(lines):
        price = list_price(config, resolved.records.get(f"details[{n}].material_id") or {})
        if price is not None:
            line["listPrice"] = float(price)


async def list_prices_of_changed(
    erp: Erp, ctx: ToolContext, config: dict[str, Any], lines: list[dict[str, Any]]
) -> None:
    """An update's changed lines (``materialId`` from the diff) get their material's list price
    too, read from the ERP as the user: lowering a line's price by an update is judged by the
    discount rule as a new line is."""
    ref = next((str(f["ref"]) for f in detail_fields(config) if f["column"] == "material_id" and f.get("ref")), None)
    if ref is None:
        return
    prices: dict[str, Any] = {}
    for line in lines:
        material = line.get("materialId")
        if material is None or "listPrice" in line or line.get("change") == "delete":
            continue
        if material not in prices:
            item = (await erp.client.record(token(ctx), ref, str(material))).get("master") or {}
            prices[material] = list_price(config, item)
        if prices[material] is not None:
            line["listPrice"] = float(prices[material])


def _check_op(config: dict[str, Any], op: str) -> None:
    if op not in OPS:
        raise ToolError(f"op must be one of {', '.join(OPS)}", code=messages.BAD_OP, params={"op": str(op)[:40]})
    if op in ("create", "update", "delete", "generate") and not config.get("writable"):
        raise ToolError(
            f"{config.get('name')} ({config['formId']}) is read-only",
            code=messages.READ_ONLY,
            params={"form": config.get("name") or config["formId"]},
        )
    if op == "examine" and not config.get("examinable"):
        raise ToolError(
            f"{config.get('name')} ({config['formId']}) has no examine",
            code=messages.NO_EXAMINE,
            params={"form": config.get("name") or config["formId"]},
        )


async def _stage(erp: Erp, ctx: ToolContext, draft: Op) -> None:
    body = {
        "sId": draft.op_id,
        "opType": draft.op_type,
        "targetFormId": draft.form_id,
        "targetBillId": draft.target_id,
        "payload": draft.payload,
        "sourceRef": draft.source_ref,
        "baseVersion": None if draft.base_version is None else version_of(draft.base_version),
        "autoExecute": draft.auto_execute,
        "sessionId": ctx.session_id,
        "expireInS": max(60, int(draft.expire_at - draft.created_at)),
    }
    await erp.client.stage(token(ctx), {k: v for k, v in body.items() if v is not None})


def build_propose_write(erp: Erp) -> Tool:
    @tool(audited=True, proposes=True)
    @login_guard
    async def propose_write(
        ctx: ToolContext,
        form_id: str,
        op: str,
        record_id: str | None = None,
        payload: dict[str, Any] | None = None,
        source_ref: dict[str, Any] | None = None,
    ) -> Any:
        """Propose a change to ERP data (op: create | update | delete | examine | generate). Nothing is
        written: the user sees the diff and confirms or cancels it. payload: {column or field label:
        value, details?: [{line_no?, material_id?, qty?, unit_price?, _delete?}]}; record_id: the
        record's id or bill number (update / delete / examine); source_ref for generate: {formId, billId}."""
        if not ctx.session_id:
            raise ToolError(
                "a write can only be proposed inside a session, where a person confirms it", code=messages.NEEDS_SESSION
            )
        config = await erp.form_config(ctx, form_id)
        _check_op(config, op)
        form = str(config["formId"])
        call = {"form_id": form_id, "op": op, "record_id": record_id, "source_ref": source_ref}
        resolved = await _values(erp, ctx, config, op, payload or {}, call)
        if isinstance(resolved, Interaction):
            return resolved
        target_status = None
        if op in ("update", "delete", "examine"):
            record = await _target(erp, ctx, config, record_id, op)
            target_status = (record.get("master") or {}).get("status")
            if op == "update":
                plan = _plan_update(config, record, resolved.values, resolved.names)
                await list_prices_of_changed(erp, ctx, config, plan.lines)
            else:
                plan = _plan_target(config, op, record, payload or {})
        elif op == "create":
            plan = plan_create(config, resolved)
        else:
            plan, source_ref = await _plan_generate(erp, ctx, config, resolved, source_ref)
        auto = is_auto(config, op)
        summary = f"{VERBS[op]}{config.get('name')}" + (f" {plan.label}" if plan.label else "")
        draft = draft_op(
            ctx,
            executor=EXECUTOR,
            op_type=op,
            form_id=form,
            payload=plan.payload,
            form_name=config.get("name"),
            brand=str(brand_of(ctx.owner.tenant) or ""),
            subsidiary=ctx.owner.tenant.rsplit("-", 1)[-1],
            module=config.get("module"),
            target_table=config.get("table"),
            target_id=plan.target_id,
            source_ref=source_ref,
            diff={
                "fields": plan.fields,
                "lines": plan.lines,
                **({"targetStatus": target_status} if target_status else {}),
            },
            summary=summary,
            base_version=None if plan.base_version is None else str(plan.base_version),
            auto_execute=auto,
        )
        await _stage(erp, ctx, draft)
        await propose_op(ctx, draft)
        proposal = {
            "opId": draft.op_id,
            "formId": form,
            "formName": config.get("name"),
            "op": op,
            "auto": auto,
            "summary": summary,
            "diff": plan.fields,
            "lines": plan.lines,
            "expiresAt": draft.expire_at,
        }
        if op in ("create", "update"):  # what the card's edit form sends back (PATCH /api/ops/{opId})
            proposal["values"] = plan.payload
        return Interaction("proposal", proposal, interaction_id=str(draft.interaction_id))

    propose_write.check_answer = chosen
    return propose_write
