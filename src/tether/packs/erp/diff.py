"""What a proposal would change, computed from the current record: master fields ``before →
after`` and detail lines matched by line number or material, plus the merged lines the ERP's
update needs (an update's ``details`` replace every line). Pure functions over ERP answers."""

from __future__ import annotations

from typing import Any

from tether.packs.erp.schema import detail_fields, master_fields

Change = dict[str, Any]


def _labels(fields: list[dict[str, Any]]) -> dict[str, str]:
    return {str(f["column"]): str(f.get("label") or f["column"]) for f in fields}


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def _shown(names: dict[str, str], key: str, value: Any) -> Any:
    return names.get(key, value)


def field_changes(
    config: dict[str, Any], before: dict[str, Any], after: dict[str, Any], names: dict[str, str]
) -> list[Change]:
    labels = _labels(master_fields(config))
    changes = []
    for column, value in after.items():
        if column == "details":
            continue
        old = before.get(column)
        if _same(old, value):
            continue
        old_shown = old
        stem = column[:-3] if column.endswith("_id") else column
        if before.get(f"{stem}_name") is not None:
            old_shown = f"{before.get(f'{stem}_code') or old} {before[f'{stem}_name']}".strip()
        changes.append(
            {
                "field": column,
                "label": labels.get(column, column),
                "before": old_shown,
                "after": _shown(names, column, value),
            }
        )
    return changes


def _writable(config: dict[str, Any]) -> list[str]:
    return [str(f["column"]) for f in detail_fields(config) if not f.get("readOnly")]


def _match(current: list[dict[str, Any]], wanted: dict[str, Any], used: set[int]) -> int | None:
    if wanted.get("line_no") is not None:
        for i, line in enumerate(current):
            if i not in used and _same(line.get("line_no"), wanted["line_no"]):
                return i
        return None
    material = wanted.get("material_id")
    for i, line in enumerate(current):
        if i not in used and material is not None and str(line.get("material_id")) == str(material):
            return i
    return None


def _priced(change: Change, line: dict[str, Any]) -> Change:
    """A changed line with what its price is judged by: the material it is of (``materialId``) and
    its unit price after the change (``unitPrice``) — for the list price and the discount rule."""
    if line.get("material_id") is not None:
        change["materialId"] = str(line["material_id"])
    if line.get("unit_price") is not None:
        change["unitPrice"] = line["unit_price"]
    return change


def merge_lines(
    config: dict[str, Any],
    current: list[dict[str, Any]],
    wanted: list[dict[str, Any]],
    names: dict[str, str],
    *,
    whole: bool = False,
) -> tuple[list[dict[str, Any]], list[Change], list[Any]]:
    """-> (every line after the change, the line changes, the line numbers asked for that the
    record does not have). ``wanted``: the lines a proposal changes, adds or deletes
    (``_delete``); ``whole``: every line of the bill (an edit's payload, which sends back what the
    first of these answers), so a line of the record it leaves out is deleted. Each added or
    updated line's change says where the line is among the first (``detailIndex``): the chat
    page's edit form edits the changed lines there."""
    labels = _labels(detail_fields(config))
    columns = _writable(config)
    result = [{c: line.get(c) for c in columns} for line in current]
    deleted: set[int] = set()
    used: set[int] = set()
    changes: list[Change] = []
    placed: list[tuple[Change, int]] = []  # an added or updated line's change, its place in ``result``
    missing: list[Any] = []
    for n, want in enumerate(wanted):
        i = _match(current, want, used)
        body = {k: v for k, v in want.items() if k in columns}
        if i is None:
            if want.get("line_no") is not None:
                missing.append(want["line_no"])
                continue
            result.append({c: body.get(c) for c in columns})
            fields = [
                {"field": c, "label": labels.get(c, c), "before": None, "after": _shown(names, f"details[{n}].{c}", v)}
                for c, v in body.items()
            ]
            added = {"lineNo": len(result), "change": "add", "fields": fields}  # its place among the lines
            changes.append(_priced(added, result[-1]))
            placed.append((added, len(result) - 1))
            continue
        used.add(i)
        line_no = current[i].get("line_no")
        if want.get("_delete"):
            deleted.add(i)
            changes.append(
                {"lineNo": line_no, "change": "delete", "fields": [], "material": current[i].get("material_code")}
            )
            continue
        fields = []
        for c, v in body.items():
            if not _same(current[i].get(c), v):
                fields.append(
                    {
                        "field": c,
                        "label": labels.get(c, c),
                        "before": current[i].get(c),
                        "after": _shown(names, f"details[{n}].{c}", v),
                    }
                )
                result[i][c] = v
        if fields:
            updated = {
                "lineNo": line_no,
                "change": "update",
                "fields": fields,
                "material": current[i].get("material_code"),
            }
            changes.append(_priced(updated, result[i]))
            placed.append((updated, i))
    for i, line in enumerate(current):
        if whole and i not in used:
            deleted.add(i)
            changes.append(
                {"lineNo": line.get("line_no"), "change": "delete", "fields": [], "material": line.get("material_code")}
            )
    lines = [line for i, line in enumerate(result) if i not in deleted]
    for change, i in placed:
        change["detailIndex"] = i - sum(1 for d in deleted if d < i)
    return [{k: v for k, v in line.items() if v is not None} for line in lines], changes, missing


def created_lines(config: dict[str, Any], lines: list[dict[str, Any]], names: dict[str, str]) -> list[Change]:
    """New lines as shown: each given value, and the amount the ERP will compute (qty × price)."""
    labels = _labels(detail_fields(config))
    shown = []
    for n, line in enumerate(lines):
        fields = [
            {"field": c, "label": labels.get(c, c), "before": None, "after": _shown(names, f"details[{n}].{c}", v)}
            for c, v in line.items()
            if c not in ("line_no", "_delete")
        ]
        qty, price = line.get("qty"), line.get("unit_price")
        if "amount" in labels and isinstance(qty, int | float) and isinstance(price, int | float):
            fields.append(
                {"field": "amount", "label": labels["amount"], "before": None, "after": round(qty * price, 2)}
            )
        shown.append({"lineNo": n + 1, "change": "add", "fields": fields})
    return shown
