"""``collect_form``: the form a person fills in the chat (seed 003 §5 FormCollect). Its fields,
types, required marks, options and defaults come from the ERP's own metadata; the submitted
values are checked against that same schema on the server (``check_answer``: 422 with one problem
per field keeps the session waiting), then each reference (a customer, a material) against the
ERP as the person answering — it must name exactly one record they can see (``resolve_answer``:
422 at that field otherwise) — and the valid values go to the model as the tool result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tether.pack import Identity, Interaction, InvalidInput, Tool, ToolContext, ToolError, tool
from tether.packs.erp import messages, refs
from tether.packs.erp.client import LoginExpired
from tether.packs.erp.defaults import is_relative
from tether.packs.erp.ref_search import candidate
from tether.packs.erp.schema import check_form_values, describe, detail_fields, master_fields
from tether.packs.erp.tools import Erp, login_guard, token

_KEYS = ("column", "label", "type", "ref", "required", "options", "default", "maxLength")
_BOUNDS = ("min", "max", "positive")  # a number's limits, where the ERP declares them


def _fields(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The writable fields as the card shows them; a date counted from another (30 days after the
    bill date) shows empty: the proposal fills it from the date the person gives."""
    return [
        {k: f.get(k) for k in _KEYS}
        | {k: f[k] for k in _BOUNDS if f.get(k) is not None}
        | ({"default": None} if is_relative(f) else {})
        for f in fields
        if not f.get("readOnly")
    ]


def _detail(detail: dict[str, Any]) -> dict[str, Any]:
    lines = {k: detail[k] for k in ("minLines", "maxLines") if isinstance(detail.get(k), int)}
    fields = list(detail.get("fields") or [])
    out = {"fields": _fields(fields), **lines}
    columns = {str(f.get("column")): f for f in fields}
    amount = columns.get("amount")
    if amount is not None and amount.get("readOnly") and {"qty", "unit_price"} <= set(columns):
        # the ERP computes a line's amount (qty × unit price); the card shows it as they are typed
        out["amount"] = {"column": "amount", "label": amount.get("label") or "amount"}
    return out


async def _choices(erp: Erp, token: str, config: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """The records the prefilled references name, where each names exactly one the user can see
    (the card shows them chosen: name, code, a material's price); any other stays typed text."""
    wanted: list[tuple[str, dict[str, Any], Any]] = [
        (str(f["column"]), f, known.get(f["column"])) for f in master_fields(config) if f.get("type") == "ref"
    ]
    lines = known.get("details")
    for n, line in enumerate(lines if isinstance(lines, list) else []):
        for f in detail_fields(config):
            if f.get("type") == "ref" and isinstance(line, dict):
                wanted.append((f"details.{n}.{f['column']}", f, line.get(f["column"])))
    choices: dict[str, Any] = {}
    for name, f, value in wanted:
        if value is None or str(value).strip() == "":
            continue
        try:
            found = await refs.lookup(erp.client, token, str(f["ref"]), str(value).strip())
        except LoginExpired:
            raise
        except ToolError:  # the ERP cannot answer now: the card shows what the model gave
            continue
        if len(found) == 1:
            choices[name] = candidate(found[0])
    return choices


def _schema(payload: dict[str, Any]) -> dict[str, Any]:
    detail = payload.get("detail") if isinstance(payload.get("detail"), dict) else None
    return {"formId": payload.get("formId"), "master": payload.get("fields") or [], "detail": detail}


def check_values(payload: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    values = answer.get("values")
    if not isinstance(values, dict):
        problems = [
            {
                "field": "values",
                "code": "type",
                "message": "send the form's values as an object {column or label: value}",
            }
        ]
        raise InvalidInput("values: the form needs its values", field="values", problems=problems)
    merged = {**(payload.get("prefill") or {}), **values}
    clean, problems = check_form_values(_schema(payload), merged, creating=True)
    if problems:
        raise InvalidInput(f"the values do not fit the form: {describe(problems)}", problems=problems)
    return {"values": clean}


def _at(name: str) -> str:
    """A reference's field as the form names its problems: ``details[1].material_id`` →
    ``details.1.material_id``."""
    return name.replace("[", ".").replace("]", "")


def reference_checker(
    erp: Erp,
) -> Callable[[dict[str, Any], dict[str, Any], Identity | None], Awaitable[dict[str, Any]]]:
    async def resolve_answer(payload: dict[str, Any], answer: dict[str, Any], who: Identity | None) -> dict[str, Any]:
        if who is None or not who.credential:  # no ERP login here: the proposal resolves them later
            return answer
        try:
            resolved = await refs.resolve(erp.client, who.credential, _schema(payload), answer["values"])
        except ToolError:  # the ERP cannot answer now (or the login lapsed): the proposal says so
            return answer
        problems = [{"field": _at(p["field"]), "code": "ref", "message": p["message"]} for p in resolved.problems]
        if (amb := resolved.ambiguous) is not None:
            shown = "; ".join(c["label"] for c in amb.candidates)
            message = f"{amb.label}: {amb.value!r} matches several ({shown}); enter one's code"
            problems.append({"field": _at(amb.field), "code": "ambiguous", "message": message})
        if problems:
            raise InvalidInput(f"the values do not fit the form: {describe(problems)}", problems=problems)
        return answer

    return resolve_answer


def build_collect_form(erp: Erp) -> Tool:
    @tool()
    @login_guard
    async def collect_form(ctx: ToolContext, form_id: str, prefill: dict[str, Any] | None = None) -> Any:
        """Show the user an ERP form to fill in (its fields, types, options and defaults come from
        the ERP); prefill what you already know (column or label: value). The filled values come
        back as this tool's result; then propose the write with them."""
        config = await erp.form_config(ctx, form_id)
        if not config.get("writable"):
            raise ToolError(
                f"{config.get('name')} ({config['formId']}) is read-only",
                code=messages.READ_ONLY,
                params={"form": config.get("name") or config["formId"]},
            )
        known, problems = check_form_values(config, prefill or {}, creating=False)
        if problems:
            raise messages.invalid_values(config, problems, f"prefill does not fit the form: {describe(problems)}")
        detail = config.get("detail") or {}
        payload = {
            "formId": config["formId"],
            "formName": config.get("name"),
            "fields": _fields(list(config.get("master") or [])),
            "detail": _detail(detail) if detail else None,
            "prefill": known,
            "choices": await _choices(erp, token(ctx), config, known),
        }
        return Interaction("form", payload)

    collect_form.check_answer = check_values
    collect_form.resolve_answer = reference_checker(erp)
    collect_form.in_dsl = False  # a replay proposes with the values the person gave
    return collect_form
