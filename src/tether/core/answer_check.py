"""Checks an answer to a pending question or form against what the interaction declared, before
the session resumes with it: a bad answer is refused with one problem per field (422), and the
card that asked stays open.

A form's payload declares ``fields`` (and ``detail.fields`` for detail lines) as in the ERP's form
metadata (docs/erp.md): ``column``, ``label``, ``type`` (text | textarea | number | integer | date
| select | bool | ref), ``required``, ``options`` ([{value, label}]), ``default``, ``readOnly``,
``maxLength``. The answer is ``{"values": {column: value, ..., "details": [{column: value}]}}``.
A question declares ``options`` and ``allowFreeText``; its answer is ``{"answer": "..."}``.

This is a first gate for the person filling the card; the business system validates again.
``accept_answer`` is the one place an answer is checked — over HTTP, as a chat message or through
MCP elicitation: the asking tool's own ``check_answer`` when it has one (an ERP form against the
ERP's schema), otherwise the declared shape here.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidInput

if TYPE_CHECKING:
    from tether.core.session import Identity
    from tether.core.tools import Tool

Problem = dict[str, str]
TYPES = ("text", "textarea", "number", "integer", "date", "select", "bool", "ref")


MAX_ANSWER = 32_000  # as a chat message


def accept_answer(asking: Tool | None, pending: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The answer the session resumes with, or ``InvalidInput`` (422: ``problems``, one per field).
    A question's answer is one bounded text whoever asked it; the rest is the asking tool's check
    when it has one."""
    if asking is not None and asking.check_answer is not None:
        _refuse(_check_text(result) if pending.get("kind") == "question" else [])
        return asking.check_answer(pending.get("payload") or {}, result)
    _refuse(check_answer(pending, result))
    if pending.get("kind") == "question":
        return {"answer": str(result["answer"]).strip()}
    return {"values": result["values"]} if pending.get("kind") == "form" else result


async def accept_answer_of(
    asking: Tool | None, pending: dict[str, Any], result: dict[str, Any], who: Identity | None
) -> dict[str, Any]:
    """``accept_answer``, then the asking tool's ``resolve_answer`` as ``who`` when it has one."""
    accepted = accept_answer(asking, pending, result)
    if asking is not None and asking.resolve_answer is not None:
        return await asking.resolve_answer(pending.get("payload") or {}, accepted, who)
    return accepted


def check_answer(pending: dict[str, Any], result: dict[str, Any]) -> list[Problem]:
    """The problems of ``result`` (``{"answer"}`` or ``{"values"}``) for the pending interaction;
    empty when it may be accepted. Each problem: ``field``, ``code``, ``message``."""
    kind = pending.get("kind")
    payload = pending.get("payload") or {}
    if kind == "form":
        values = result.get("values")
        if not isinstance(values, dict):
            return [_p("values", "required", "a form is answered with values: {column: value}")]
        return check_form(payload, values)
    if kind == "question":
        return _check_question(payload, result)
    return []


def _p(field: str, code: str, message: str) -> Problem:
    return {"field": field, "code": code, "message": message}


def _refuse(problems: list[Problem]) -> None:
    if problems:
        first = problems[0]
        raise InvalidInput(f"{first['field']}: {first['message']}", field=first["field"], problems=problems)


def _check_text(result: dict[str, Any]) -> list[Problem]:
    """A question's answer: ``{"answer": "..."}``, one non-empty text of at most MAX_ANSWER."""
    if result.get("values") is not None:
        return [_p("values", "type", "a question is answered with an answer, not values")]
    answer = result.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        return [_p("answer", "required", "the answer must be a non-empty text")]
    if len(answer) > MAX_ANSWER:
        return [_p("answer", "max_length", f"the answer is {len(answer)} characters; the limit is {MAX_ANSWER}")]
    if "\x00" in answer:  # no database text column takes it
        return [_p("answer", "type", "the answer must not contain NUL (U+0000) characters")]
    return []


def _check_question(payload: dict[str, Any], result: dict[str, Any]) -> list[Problem]:
    if problems := _check_text(result):
        return problems
    answer = str(result["answer"])
    options = [str(o) for o in payload.get("options") or []]
    if options and payload.get("allowFreeText") is False and answer not in options:
        return [_p("answer", "option", f"choose one of the options: {', '.join(options)}")]
    return []


def check_form(payload: dict[str, Any], values: dict[str, Any]) -> list[Problem]:
    fields = [f for f in payload.get("fields") or [] if isinstance(f, dict) and f.get("column")]
    detail = payload.get("detail") if isinstance(payload.get("detail"), dict) else None
    raw_prefill = payload.get("prefill")
    prefill: dict[str, Any] = raw_prefill if isinstance(raw_prefill, dict) else {}
    problems: list[Problem] = []
    known = {str(f["column"]) for f in fields}
    for key in values:
        if key not in known and not (key == "details" and detail is not None):
            problems.append(_p(str(key), "unknown", f"{key!r} is not a field of this form"))
    problems += _check_fields(fields, values, prefill, "")
    if detail is not None and values.get("details") is not None:
        lines = values["details"]
        detail_fields = [f for f in detail.get("fields") or [] if isinstance(f, dict) and f.get("column")]
        if not isinstance(lines, list) or not all(isinstance(line, dict) for line in lines):
            problems.append(_p("details", "type", "details must be a list of lines: [{column: value}]"))
        else:
            names = {str(f["column"]) for f in detail_fields}
            for n, line in enumerate(lines):
                problems += [
                    _p(f"details.{n}.{k}", "unknown", f"{k!r} is not a field of the lines")
                    for k in line
                    if k not in names
                ]
                problems += _check_fields(detail_fields, line, {}, f"details.{n}.")
    return problems


def _check_fields(
    fields: list[dict[str, Any]], values: dict[str, Any], prefill: dict[str, Any], prefix: str
) -> list[Problem]:
    problems: list[Problem] = []
    for f in fields:
        column = str(f["column"])
        name = prefix + column
        label = str(f.get("label") or column)
        value = values.get(column)
        if f.get("readOnly"):
            fixed = prefill.get(column, f.get("default"))
            if column in values and value != fixed and value not in (None, ""):
                problems.append(_p(name, "read_only", f"{label} is read-only"))
            continue
        if value is None or (isinstance(value, str) and not value.strip()):
            if f.get("required"):
                problems.append(_p(name, "required", f"{label} is required"))
            continue
        message = _type_problem(f, value)
        if message is not None:
            problems.append(_p(name, message[0], f"{label}: {message[1]}"))
    return problems


def _type_problem(f: dict[str, Any], value: Any) -> tuple[str, str] | None:
    kind = f.get("type") or "text"
    if kind in ("text", "textarea", "ref"):
        if kind == "ref" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return "type", "must be text"
        limit = f.get("maxLength")
        if isinstance(limit, int) and len(value) > limit:
            return "max_length", f"at most {limit} characters (got {len(value)})"
        return None
    if kind in ("number", "integer"):
        number = _number(value)
        if number is None:
            return "type", "must be a number"
        if kind == "integer" and not float(number).is_integer():
            return "type", "must be a whole number"
        return None
    if kind == "date":
        return None if _is_date(value) else ("date", "must be a date YYYY-MM-DD")
    if kind == "select":
        allowed = [str(o.get("value")) for o in f.get("options") or [] if isinstance(o, dict)]
        if allowed and str(value) not in allowed:
            return "option", f"must be one of {', '.join(allowed)}"
        return None
    if kind == "bool":
        return None if isinstance(value, bool) else ("type", "must be true or false")
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _is_date(value: Any) -> bool:
    if not isinstance(value, str) or len(value) != 10:
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True
