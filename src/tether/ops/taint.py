"""Tainted values: a proposed value the model copied from free text it read in this session — an
ERP remark, a customer note, a text field of any tool result — is marked in the op's diff with
where it came from (``"tainted": "from the remark of QT202612-0007"``), so the person confirming
sees that the value was not theirs, and an approval policy may require them to tick it off
(``acknowledge_tainted``, docs/approvals.md).

Free text is a string under a free-text key (``remark``, ``note``, ``memo``, ``comment``,
``description`` and their Chinese labels) of a tool message in the transcript, as a mapping or as
a table's column. A proposed value is tainted when it (at least ``MIN_CHARS`` characters) is part
of such a text, or such a text is part of it — unless the person's own messages or answers carry
it: what they typed (a message, a question's or form's answer, a tool message of kind ``answer``)
is theirs. Pure: it reads the transcript it is given."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from tether.errors import Conflict

FREE_TEXT_KEYS = frozenset(
    {"remark", "remarks", "note", "notes", "memo", "comment", "comments", "description", "备注", "说明", "行备注"}
)
LABEL_KEYS = ("bill_no", "code", "name", "id")
MIN_CHARS = 4
ANSWER = "answer"  # the kind of a tool message holding a person's answer (core.answering.ANSWER_KINDS)


def _label(row: dict[str, Any], tool: str) -> str:
    for key in LABEL_KEYS:
        if row.get(key) not in (None, ""):
            return str(row[key])
    return f"a {tool} result"


def _texts(value: Any, tool: str) -> Iterator[tuple[str, str]]:
    """(free text, where it is) in a tool's data: mappings, lists, and tables (columns + rows)."""
    if isinstance(value, dict):
        columns, rows = value.get("columns"), value.get("rows")
        if isinstance(columns, list) and isinstance(rows, list):
            for r in rows:
                if isinstance(r, list):
                    yield from _texts(dict(zip((str(c) for c in columns), r, strict=False)), tool)
        for key, item in value.items():
            if isinstance(item, str) and str(key).lower() in FREE_TEXT_KEYS and len(item.strip()) >= MIN_CHARS:
                yield item.strip(), f"the {key} of {_label(value, tool)}"
            elif isinstance(item, dict | list) and key != "rows":
                yield from _texts(item, tool)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item, tool)


def free_texts(transcript: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every free text the tool messages of ``transcript`` carry, with where it is."""
    found: list[tuple[str, str]] = []
    for body in _tool_bodies(transcript):
        if body.get("kind") != ANSWER:
            found.extend(_texts(body.get("data"), str(body.get("tool") or "tool")))
    return found


def _tool_bodies(transcript: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for message in transcript:
        if message.get("role") != "tool":
            continue
        try:
            body = json.loads(str(message.get("content") or ""))
        except ValueError:
            continue
        if isinstance(body, dict):
            yield body


def _typed(transcript: Sequence[dict[str, Any]]) -> str:
    """Everything the person typed: their messages and their answers to questions and forms."""
    said = [str(m.get("content") or "") for m in transcript if m.get("role") == "user"]
    answers = [text for b in _tool_bodies(transcript) if b.get("kind") == ANSWER for text in _strings(b.get("data"))]
    return "\n".join(said + answers)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def source_of(value: Any, texts: list[tuple[str, str]], typed: str) -> str | None:
    """Where ``value`` was copied from, or None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) < MIN_CHARS or text in typed:
        return None
    for free, where in texts:
        if text in free or free in text:
            return f"from {where}"
    return None


def mark_tainted(diff: dict[str, Any], transcript: Sequence[dict[str, Any]]) -> int:
    """Mark, in place, each field of ``diff`` (master fields and lines' fields) whose new value
    was copied from free text of ``transcript``; -> how many."""
    texts = free_texts(transcript)
    if not texts:
        return 0
    typed = _typed(transcript)
    fields = [f for f in diff.get("fields") or [] if isinstance(f, dict)]
    for line in diff.get("lines") or []:
        if isinstance(line, dict):
            fields.extend(f for f in line.get("fields") or [] if isinstance(f, dict))
    marked = 0
    for f in fields:
        source = source_of(f.get("after"), texts, typed)
        if source is not None:
            f["tainted"] = source
            marked += 1
    return marked


def tainted_fields(diff: dict[str, Any]) -> list[str]:
    """``label: where from`` for each marked field of ``diff``."""
    out = [f"{f.get('label') or f.get('field')} ({f['tainted']})" for f in diff.get("fields") or [] if f.get("tainted")]
    for line in diff.get("lines") or []:
        for f in line.get("fields") or []:
            if f.get("tainted"):
                out.append(f"line {line.get('lineNo')} {f.get('label') or f.get('field')} ({f['tainted']})")
    return out


def acknowledgement(diff: dict[str, Any], acknowledged: bool) -> dict[str, Any]:
    """What a confirm's audit row records of the tainted values (``op.confirm``, or
    ``op.approval_request`` when the confirm is held): nothing when the diff marks none; else the
    marked fields and whether the person ticked them off."""
    marked = tainted_fields(diff)
    return {"acknowledgedTainted": acknowledged, "taintedFields": marked} if marked else {}


def refuse_unacknowledged(diff: dict[str, Any]) -> None:
    """``Conflict`` naming the tainted values of ``diff``, when it has any: the confirm must say
    the person checked them (``acknowledgeTainted``)."""
    marked = tainted_fields(diff)
    if marked:
        raise Conflict(
            "this proposal holds values copied from text read in this session, not typed by you: "
            + "; ".join(marked)
            + ". Check them, then confirm with acknowledgeTainted: true"
        )


def keep_marks(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """``after`` (an edited op's new diff) with the marks of ``before`` kept on the values the edit
    left as they were: a value the person changed is theirs, one they sent back unchanged is still
    the text the model copied (the edit form sends every value back)."""

    def marks(fields: Any) -> dict[Any, tuple[Any, str]]:
        return {f.get("field"): (f.get("after"), f["tainted"]) for f in fields or [] if f.get("tainted")}

    def carry(old: dict[Any, tuple[Any, str]], fields: Any) -> None:
        for f in fields or []:
            kept = old.get(f.get("field"))
            if kept is not None and kept[0] == f.get("after"):
                f["tainted"] = kept[1]

    carry(marks(before.get("fields")), after.get("fields"))
    old_lines = {line.get("lineNo"): marks(line.get("fields")) for line in before.get("lines") or []}
    for line in after.get("lines") or []:
        carry(old_lines.get(line.get("lineNo"), {}), line.get("fields"))
    return after
