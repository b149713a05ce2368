"""Values checked against an ERP form's schema (``/forms/{id}/config``) on tether's side, before
anything is staged: keys are column names or field labels (or a label without its bracketed unit,
交期 for 交期(天), where that names one field); unknown and read-only columns, wrong types, unknown
options, over-long text and (for a create) missing required fields are refused, one problem per
field. The model's values are never trusted as they come (seed 003 §9).

References (``ref`` fields) are only shaped here; ``refs.py`` resolves them through the ERP.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any, TypeVar

Problems = list[dict[str, str]]
_TRUE = ("1", "true", "yes", "是", "y")
_FALSE = ("0", "false", "no", "否", "n")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_UNIT = re.compile(r"\s*[（(][^（()）]{1,12}[)）]\s*$")  # 交期(天), 税率（%）: a unit the clerk leaves out
T = TypeVar("T")


class Bad(ValueError):
    """A value that does not fit its field; ``code`` is the problem's kind (the codes of
    ``tether.core.answer_check``, which the chat page shows in its own language)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def master_fields(config: dict[str, Any]) -> list[dict[str, Any]]:
    return list(config.get("master") or [])


def detail_fields(config: dict[str, Any]) -> list[dict[str, Any]]:
    return list((config.get("detail") or {}).get("fields") or [])


def without_unit(label: str) -> str:
    """A label as a clerk says it, without its bracketed unit: 交期(天) → 交期, 税率（%） → 税率."""
    core = _UNIT.sub("", label).strip()
    return core or label


def named_by_label(word: str, items: Sequence[T], label: Callable[[T], str]) -> list[T]:
    """The items ``word`` names: those whose label it is, else those whose label without its unit
    it is. Several: the caller asks which (交期 for both 交期(天) and 交期(周) names neither)."""
    exact = [i for i in items if label(i) == word]
    return exact or [i for i in items if without_unit(label(i)) == word]


def _by_key(fields: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """(key → field, key → the labels it could mean): a label, its unit-less form where that names
    one field, a column (a column name wins over a label that happens to equal it)."""
    by_core: dict[str, list[dict[str, Any]]] = {}
    for f in fields:
        by_core.setdefault(without_unit(str(f["label"])), []).append(f)
    keys = {core: found[0] for core, found in by_core.items() if len(found) == 1}
    ambiguous = {core: [str(f["label"]) for f in found] for core, found in by_core.items() if len(found) > 1}
    for f in fields:
        keys[str(f["label"])] = f
    for f in fields:
        keys[str(f["column"])] = f
    return keys, {k: v for k, v in ambiguous.items() if k not in keys}


def _option(field: dict[str, Any], value: Any) -> Any:
    options = field.get("options") or []
    for o in options:
        if str(o["value"]) == str(value):
            return o["value"]
    for o in options:
        if str(o["label"]) == str(value):
            return o["value"]
    shown = ", ".join(f"{o['value']} ({o['label']})" for o in options[:12])
    raise Bad("option", f"must be one of: {shown}")


def _number(kind: str, value: Any) -> int | float:
    if isinstance(value, bool):
        raise Bad("type", "must be a number")
    if isinstance(value, str) and _NUMBER.match(value.strip().replace(",", "")):
        value = float(value.strip().replace(",", ""))
    if not isinstance(value, (int, float)):
        raise Bad("type", "must be a number")
    if not math.isfinite(value):
        raise Bad("type", "must be a finite number")
    if kind == "integer":
        if float(value) != int(value):
            raise Bad("type", "must be a whole number")
        return int(value)
    return int(value) if float(value).is_integer() else float(value)


def _bounded(field: dict[str, Any], number: int | float) -> int | float:
    """``number`` within the field's declared bounds (``min``, ``positive``: > 0, ``max``: below)."""
    low, high = field.get("min"), field.get("max")
    if field.get("positive") and number <= 0:
        raise Bad("min", "must be greater than 0")
    if isinstance(low, (int, float)) and number < low:
        raise Bad("min", f"must be at least {low:g}")
    if isinstance(high, (int, float)) and abs(number) >= high:
        raise Bad("max", f"must be below {high:g}")
    return number


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise Bad("type", "must be true or false")


def _text(field: dict[str, Any], value: Any) -> str:
    if isinstance(value, (dict, list)):
        raise Bad("type", "must be a single value")
    text = str(value)
    limit = field.get("maxLength")
    if limit and len(text) > int(limit):
        raise Bad("max_length", f"is longer than {limit} characters")
    return text


def coerce(field: dict[str, Any], value: Any) -> Any:
    """The value in the field's type, or ValueError saying what is expected."""
    kind = field.get("type") or "text"
    if value is None or value == "":
        return None
    if kind in ("number", "integer"):
        return _bounded(field, _number(kind, value))
    if kind == "date":
        try:
            return date.fromisoformat(str(value).strip()[:10]).isoformat()
        except ValueError:
            raise Bad("date", "must be a date YYYY-MM-DD") from None
    if kind == "bool":
        return _flag(value)
    if kind == "select" and field.get("options"):
        return _option(field, value)
    return _text(field, value)


def check_values(
    fields: list[dict[str, Any]], values: dict[str, Any], *, creating: bool, prefix: str = ""
) -> tuple[dict[str, Any], Problems]:
    """-> (column → typed value, problems). ``creating``: required fields must be there (a field
    with a default may be left out)."""
    keys, ambiguous = _by_key(fields)
    clean: dict[str, Any] = {}
    problems: Problems = []
    for key, raw in values.items():
        field = keys.get(str(key))
        name = f"{prefix}{key}"
        if field is None and str(key) in ambiguous:
            said = ", ".join(ambiguous[str(key)])
            message = f"names several fields ({said}); use one's full label or its column"
            problems.append({"field": name, "code": "ambiguous_field", "message": message})
            continue
        if field is None:
            known = ", ".join(f"{f['column']} ({f['label']})" for f in fields if not f.get("readOnly"))
            problems.append(
                {"field": name, "code": "unknown", "message": f"is not a field of this form; its fields: {known}"}
            )
            continue
        if field.get("readOnly"):
            problems.append(
                {"field": name, "code": "read_only", "message": f"{field['label']} is read-only (the ERP sets it)"}
            )
            continue
        try:
            clean[str(field["column"])] = coerce(field, raw)
        except ValueError as exc:
            code = exc.code if isinstance(exc, Bad) else "type"
            problems.append({"field": f"{prefix}{field['column']}", "code": code, "message": f"{field['label']} {exc}"})
    if creating:
        flagged = {p["field"] for p in problems}  # one problem per field: a wrong value is not also "missing"
        for f in fields:
            column = str(f["column"])
            if f"{prefix}{column}" in flagged:
                continue
            if f.get("required") and not f.get("readOnly") and f.get("default") is None and clean.get(column) is None:
                problems.append(
                    {"field": f"{prefix}{column}", "code": "required", "message": f"{f['label']} is required"}
                )
    return clean, problems


def check_form_values(
    config: dict[str, Any], values: dict[str, Any], *, creating: bool
) -> tuple[dict[str, Any], Problems]:
    """A whole form's values: master fields plus ``details`` (a list of line objects)."""
    lines = values.get("details")
    master = {k: v for k, v in values.items() if k not in ("details", "明细")}
    lines = lines if lines is not None else values.get("明细")
    clean, problems = check_values(master_fields(config), master, creating=creating)
    if config.get("detail"):  # an unknown key may be the lines under another name: say where they go
        for p in problems:
            if p["code"] == "unknown" and "." not in p["field"]:
                p["message"] += '; detail lines go in "details": [{column: value}, ...]'
    detail = config.get("detail") or {}
    if creating and detail and not lines and detail.get("minLines"):
        problems.append({"field": "details", "code": "required", "message": "add at least one line (明细)"})
    if isinstance(lines, list) and isinstance(detail.get("maxLines"), int) and len(lines) > detail["maxLines"]:
        problems.append({"field": "details", "code": "max_lines", "message": f"at most {detail['maxLines']} lines"})
    elif lines is not None:
        if not isinstance(lines, list) or not all(isinstance(x, dict) for x in lines):
            problems.append({"field": "details", "code": "type", "message": "must be a list of line objects"})
        elif not config.get("detail"):
            problems.append({"field": "details", "code": "unknown", "message": "this form has no detail lines"})
        else:
            clean_lines = []
            for n, line in enumerate(lines):
                extra = {k: line[k] for k in ("line_no", "_delete") if k in line}
                body = {k: v for k, v in line.items() if k not in extra}
                clean_line, line_problems = check_values(
                    detail_fields(config), body, creating=creating and not extra, prefix=f"details.{n}."
                )
                clean_lines.append({**clean_line, **extra})
                problems += line_problems
            clean["details"] = clean_lines
    return clean, problems


def describe(problems: Problems) -> str:
    return "; ".join(f"{p['field']}: {p['message']}" for p in problems)
