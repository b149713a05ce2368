"""Governed writes on Tryton: a confirmed op carried out in the confirming user's own Tryton
session, exactly once, from the values tether holds for it — those the person confirmed and the
approvers signed (``fingerprint_of(op)``). Tryton has no staging of its own: nothing is written
there before the confirm, and there is no staged row that could be rewritten behind tether's back.

Exactly once without an idempotency key: every op leaves its mark ``[tether-op:<op id>]`` in the
record's ``comment`` *in the same call* that writes it (one RPC call is one Tryton transaction),
and an execution first looks for its mark — found, the op had run (a process killed after Tryton
committed and before tether recorded it) and its first outcome is returned, nothing written again.
An examine (Tryton's buttons quote / confirm) marks first, bound to the record's version, then
clicks; found marked, it only clicks when the record has not yet reached the state. A delete is
bound to the version and a record already gone is the op's end state.

Bound to the record as the person saw it: an update, an examine and a delete carry the record's
``_timestamp`` read with the proposal (``op.base_version``) in Tryton's ``_timestamp`` context;
Tryton refuses the write when the record changed since (``ConcurrencyException``), in the same
transaction — the op fails, nothing is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal
from typing import Any

from tether.pack import Op, fingerprint_of
from tether.packs.erp.client import ErpRefused
from tether.packs.erp.tryton_forms import LINE_COLUMNS, ModelForm, plain

Call = Callable[..., Awaitable[Any]]  # TrytonClient._call(token, method, *params, extra=…)
CHANGED = "changed in Tryton since the proposal was made: nothing was written; propose it again"
_BY_COLUMN = {column: name for name, column in LINE_COLUMNS.items()}


def mark(op: Op) -> str:
    return f"[tether-op:{op.op_id}]"


def answer(status: str, **more: Any) -> dict[str, Any]:
    return {"status": status, **{k: v for k, v in more.items() if v is not None}}


class TrytonWrites:
    """One op's Tryton calls; ``link`` builds the record's address in Tryton's web client."""

    def __init__(self, call: Call, specs: Callable[[str, str], Awaitable[dict[str, dict[str, Any]]]],
                 link: Callable[[str, int], str | None]) -> None:  # fmt: skip
        self._call = call
        self._specs = specs
        self._link = link

    async def execute(self, token: str, op: Op, form: ModelForm) -> dict[str, Any]:
        try:
            if op.op_type == "create":
                return await self._create(token, op, form)
            if op.op_type == "update":
                return await self._update(token, op, form)
            if op.op_type == "examine":
                return await self._examine(token, op, form)
            if op.op_type == "delete":
                return await self._delete(token, op, form)
        except ErpRefused as exc:  # Tryton's own words: a rule of its, a right, a record changed since
            said = str(exc.params.get("reason") or exc.message)
            return answer("failed", errorMsg=f"{_name(op)} {CHANGED}" if exc.status == 409 else said)
        return answer("failed", errorMsg=f"{op.op_type} is not offered on Tryton")

    async def marked(self, token: str, op: Op, form: ModelForm) -> dict[str, Any] | None:
        """The record this op marked (it ran), read as the user: ``{"id", "number", "state"}``."""
        rows = await self._call(
            token, f"model.{form.model}.search_read", [["comment", "ilike", f"%{mark(op)}%"]], 0, 1, None,
            ["number", "state"],
        )  # fmt: skip
        return rows[0] if rows else None

    def _done(self, op: Op, form: ModelForm, row: dict[str, Any], message: str) -> dict[str, Any]:
        ident = int(row["id"])
        return answer(
            "executed",
            resultBillId=str(ident),
            resultBillNo=row.get("number") or str(ident),
            link=self._link(form.model, ident),
            resultMsg=message,
            fingerprint=fingerprint_of(op),  # what ran is the op's own values, nothing staged elsewhere
        )

    # ---- create: one call, the lines and the mark with it ------------------------------------------

    async def _create(self, token: str, op: Op, form: ModelForm) -> dict[str, Any]:
        found = await self.marked(token, op, form)
        if found is not None:
            return self._done(op, form, found, "已创建（此前的执行）")
        specs = await self._specs(token, form.model)
        given = self._master(op.payload, specs)
        values = {k: v for k, v in (await self._defaults(token, form, specs)).items() if k not in given}
        values.update(given)
        suggested = await self._call(token, f"model.{form.model}.on_change", {"id": -1, **values, "lines": []},
                                     ["party"])  # fmt: skip  # the addresses, the payment term: Tryton's own
        values.update({k: v for k, v in _own(suggested).items() if k not in given})
        lines = [await self._line(token, form, values, line) for line in op.payload.get("details") or []]
        values.update({"comment": mark(op), form.lines or "lines": [["create", lines]]})
        created = await self._call(token, f"model.{form.model}.create", [values])
        row = (await self._call(token, f"model.{form.model}.read", created, ["number", "state"]))[0]
        return self._done(op, form, row, "已创建")

    async def _defaults(self, token: str, form: ModelForm, specs: dict[str, Any]) -> dict[str, Any]:
        """Tryton's defaults of the fields a user may set (its company, currency…)."""
        names = [n for n, spec in specs.items() if not spec.get("readonly") and not n.startswith(("create_", "write_"))]
        found = _own(await self._call(token, f"model.{form.model}.default_get", names))
        return {k: v for k, v in found.items() if v is not None and k in names}

    async def _line(self, token: str, form: ModelForm, sale: dict[str, Any], line: dict[str, Any]) -> dict[str, Any]:
        """A new line as Tryton's own client builds it: the product's unit and taxes from
        ``on_change``, the quantity and price as confirmed."""
        assert form.line_model is not None
        specs = await self._specs(token, form.line_model)
        given = self._master(line, specs, _BY_COLUMN)
        parent = {k: sale.get(k) for k in ("party", "currency", "company", "sale_date", "purchase_date") if k in sale}
        draft: dict[str, Any] = {"id": -1, "type": "line", "unit": None, "unit_price": None, "taxes": [], **given,
                 "sale": {"id": -1, **parent}}  # fmt: skip
        suggested = _own(await self._call(token, f"model.{form.line_model}.on_change", draft, ["product"]))
        out: dict[str, Any] = {
            "type": "line",
            **{k: v for k, v in suggested.items() if k in ("unit", "taxes", "description")},
        }
        if isinstance(out.get("taxes"), list):
            ids = [t for t in out["taxes"] if isinstance(t, int)]
            out["taxes"] = [["add", ids]] if ids else []
        out.update(given)
        if out.get("unit_price") is None and suggested.get("unit_price") is not None:
            out["unit_price"] = suggested["unit_price"]
        return out

    def _master(
        self, payload: dict[str, Any], specs: dict[str, Any], rename: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The op's values as Tryton's fields (``party_id`` → ``party``, a line's ``material_id`` →
        ``product`` by ``rename``), typed by ``fields_get``."""
        out: dict[str, Any] = {}
        for column, value in payload.items():
            if column in ("details", "line_no", "_delete"):
                continue
            name = column.removesuffix("_id")
            name = (rename or {}).get(name, name)
            spec = specs.get(name)
            if spec is None:
                raise ErpRefused(400, f"{column!r} is not a field Tryton has here")
            out[name] = _typed(str(spec.get("type")), value)
        return out

    # ---- update: one write bound to the version, the mark appended ----------------------------------

    async def _update(self, token: str, op: Op, form: ModelForm) -> dict[str, Any]:
        found = await self.marked(token, op, form)
        if found is not None:
            return self._done(op, form, found, "已修改（此前的执行）")
        ident = _target(op)
        specs = await self._specs(token, form.model)
        current = await self._current(token, form, ident, [form.lines or "lines"] if form.lines else [])
        values = self._master(op.payload, specs)
        if "details" in op.payload and form.lines:  # the bill's lines after the change, every one
            lines = [await self._line(token, form, {**current, **values}, line) for line in op.payload["details"]]
            values[form.lines] = [["delete", list(current.get(form.lines) or [])], ["create", lines]]
        values["comment"] = _marked(current, op)
        await self._bound(token, op, form, "write", [ident], values)
        row = (await self._call(token, f"model.{form.model}.read", [ident], ["number", "state"]))[0]
        return self._done(op, form, row, "已修改")

    async def _current(self, token: str, form: ModelForm, ident: int, more: list[str]) -> dict[str, Any]:
        rows = await self._call(
            token, f"model.{form.model}.search_read", [["id", "=", ident]], 0, 1, None,
            ["comment", "state", "party", "currency", "company", *more],
        )  # fmt: skip
        if not rows:
            raise ErpRefused(404, f"no record {ident} in {form.model} that you can see")
        return dict(rows[0])

    async def _bound(self, token: str, op: Op, form: ModelForm, method: str, *params: Any) -> Any:
        """``method`` bound to the version the proposal was made against (``_timestamp``)."""
        stamp = {f"{form.model},{_target(op)}": op.base_version} if op.base_version else {}
        return await self._call(token, f"model.{form.model}.{method}", *params, extra={"_timestamp": stamp})

    # ---- examine: the mark bound to the version, then Tryton's button -------------------------------

    async def _examine(self, token: str, op: Op, form: ModelForm) -> dict[str, Any]:
        action = str(op.payload.get("action") or "")
        step = next((s for s in form.steps if s[1] == action), None)
        if step is None:
            raise ErpRefused(400, f"{form.model} has no step {action[:40]!r}")
        ident = _target(op)
        found = await self.marked(token, op, form)
        if found is None:
            current = await self._current(token, form, ident, [])
            if current.get("state") != step[0]:
                raise ErpRefused(409, "")
            await self._bound(token, op, form, "write", [ident], {"comment": _marked(current, op)})
        elif form.reached(found.get("state"), step[2]):
            return self._done(op, form, found, await self._state_said(token, form, found, "（此前的执行）"))
        await self._call(token, f"model.{form.model}.{action}", [ident])
        row = (await self._call(token, f"model.{form.model}.read", [ident], ["number", "state"]))[0]
        if not form.reached(row.get("state"), step[2]):
            return answer("failed", errorMsg=f"Tryton left the record {row.get('state')}, not {step[2]}")
        return self._done(op, form, row, await self._state_said(token, form, row))

    async def _state_said(self, token: str, form: ModelForm, row: dict[str, Any], more: str = "") -> str:
        """The record's state in the user's language, as Tryton's selection words it."""
        selection = (await self._specs(token, form.model)).get("state", {}).get("selection") or []
        label = next((str(text) for value, text in selection if value == row.get("state")), str(row.get("state")))
        return f"{label}{more}"

    # ---- delete: bound to the version; a record already gone is the end state -----------------------

    async def _delete(self, token: str, op: Op, form: ModelForm) -> dict[str, Any]:
        ident = _target(op)
        there = await self._call(token, f"model.{form.model}.search", [["id", "=", ident]], 0, None, None)
        if there:
            await self._bound(token, op, form, "delete", [ident])
        return answer("executed", resultBillId=str(ident), resultMsg="已删除", fingerprint=fingerprint_of(op))


def _marked(current: dict[str, Any], op: Op) -> str:
    return f"{current.get('comment') or ''}\n{mark(op)}".strip()


def _target(op: Op) -> int:
    try:
        return int(str(op.target_id))
    except ValueError:
        raise ErpRefused(404, f"no record {str(op.target_id)[:40]!r}") from None


def _name(op: Op) -> str:
    return f"{op.form_name or op.form_id} {op.target_id or ''}".strip()


def _own(values: dict[str, Any]) -> dict[str, Any]:
    """Tryton's answer without its display companions (``party.``: the rec_name of ``party``)."""
    return {k: v for k, v in values.items() if not k.endswith(".") and k != "id"}


def _typed(kind: str, value: Any) -> Any:
    """A confirmed value as Tryton's JSON wants it."""
    if value is None or value == "":
        return None
    if kind == "many2one":
        return int(value)
    if kind == "numeric":
        return {"__class__": "Decimal", "decimal": str(Decimal(str(value)))}
    if kind == "float":
        return float(value)
    if kind == "integer":
        return int(value)
    if kind == "date":
        day = date.fromisoformat(str(value)[:10])
        return {"__class__": "date", "year": day.year, "month": day.month, "day": day.day}
    return plain(value) if isinstance(value, dict) else value
