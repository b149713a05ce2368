"""What a policy can ask about an op, read from the op as proposed: its form and type, the bill's
total (the lines' qty × unit price), each line's amount and discount against its material's list
price (where the proposal carried the list price: ``listPrice`` on a diff line, new or updated;
the price is the line's new ``unit_price``, else the ``unitPrice`` it keeps), the master fields
it changes, and the target record's status when proposed (``targetStatus`` in the diff).
Pure: it reads the op, never the business system."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tether.ops.model import Op


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class ProposalFacts:
    form_id: str
    op_type: str
    total: float | None = None
    line_amounts: tuple[float, ...] = ()
    discounts_pct: tuple[float, ...] = ()  # per line with a known list price: how far under it, in %
    changed: frozenset[str] = field(default_factory=frozenset)
    target_status: str | None = None
    table: str | None = None  # the form's table in the business system (Tryton: its model, sale.sale)


def _lines(payload: dict[str, Any]) -> list[dict[str, Any]]:
    details = payload.get("details")
    return [d for d in details or [] if isinstance(d, dict) and not d.get("_delete")]


def _after(line: dict[str, Any], name: str) -> Any:
    for f in line.get("fields") or []:
        if isinstance(f, dict) and f.get("field") == name:
            return f.get("after")
    return None


def facts_of(op: Op) -> ProposalFacts:
    amounts = []
    for line in _lines(op.payload):
        qty, price = _number(line.get("qty")), _number(line.get("unit_price"))
        if qty is not None and price is not None:
            amounts.append(round(qty * price, 2))
    discounts = []
    for line in op.diff.get("lines") or []:
        if not isinstance(line, dict):
            continue
        price = _number(_after(line, "unit_price"))
        if price is None:  # a changed line whose price stays: judged by the price it keeps
            price = _number(line.get("unitPrice"))
        listed = _number(line.get("listPrice"))
        if listed and price is not None and listed > 0:
            discounts.append(round((listed - price) / listed * 100, 4))
    changed = frozenset(str(f.get("field")) for f in op.diff.get("fields") or [] if isinstance(f, dict))
    status = op.diff.get("targetStatus")
    return ProposalFacts(
        op.form_id,
        op.op_type,
        total=round(sum(amounts), 2) if amounts else None,
        line_amounts=tuple(amounts),
        discounts_pct=tuple(discounts),
        changed=changed,
        target_status=None if status is None else str(status),
        table=op.target_table,
    )
