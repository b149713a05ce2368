"""Records and values a question names, found among the values seen in the caller's forms:
exactly, as part of a name, nearly (``rapidfuzz``), or inside a longer word; and how one record
said twice counts once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from rapidfuzz import fuzz

from tether.packs.erp import grammar, lexicon
from tether.packs.erp.metadata import KEY_COLUMNS, FormMeta, Seen
from tether.packs.erp.wording import CJK, chunks, free, per_catalog

FUZZY_MIN = 85.0  # rapidfuzz partial ratio a near-miss name must reach
WHOLE_MIN = 3  # values this long are found whole before filler words split them (单片机 is not 单 + 片机)


@dataclass(frozen=True)
class Mention:
    """A record (or a value of a text filter) the question names: ``seen`` is its row."""

    text: str
    span: tuple[int, int]
    column: str  # where the value was seen
    seen: Seen


def _values(rows: list[Seen]) -> dict[str, list[tuple[str, Seen]]]:
    """value (lowercase) -> [(column, row)] over every identifying value seen; built once per
    catalog's rows (the index, not the question, is what costs on a large catalog)."""
    return per_catalog("values", rows, _index_values)


def _index_values(rows: list[Seen]) -> dict[str, list[tuple[str, Seen]]]:
    out: dict[str, list[tuple[str, Seen]]] = {}
    for row in rows:
        for column, value in row.values.items():
            if value and len(value) >= 2:
                out.setdefault(value.lower(), []).append((column, row))
    return out


def _resolve(piece: str, at: int, values: dict[str, list[tuple[str, Seen]]]) -> list[Mention] | None:
    """The records ``piece`` names: exactly (a whole value, or a part of one), then nearly."""
    key = piece.lower()
    if key in values:
        return [Mention(piece, (at, at + len(piece)), c, r) for c, r in values[key]]
    if len(key) >= 2:
        inside = [(c, r) for v, hits in values.items() if key in v for c, r in hits]
        if inside:
            return [Mention(piece, (at, at + len(piece)), c, r) for c, r in inside]
    if len(key) >= 4:  # near misses of names only (not of cities or categories)
        near = [
            (c, r)
            for v, hits in values.items()
            if fuzz.partial_ratio(key, v) >= FUZZY_MIN
            for c, r in hits
            if c in KEY_COLUMNS or c.endswith("_name")
        ]
        if near:
            return [Mention(piece, (at, at + len(piece)), c, r) for c, r in near]
    return None


def _vocabulary(values: Iterable[str], forms: Iterable[FormMeta]) -> Iterator[str]:
    """The words the segmenter keeps whole: the data's values, the forms' names and labels."""
    yield from values
    for form in forms:
        yield form.name
        yield from form.aliases
        for labelled in (form.fields, form.filters):
            for item in labelled:
                yield item.label
                yield from item.aliases
                yield from (label for _, label in (*item.options, *item.option_aliases))


def find_mentions(
    text: str, taken: list[tuple[int, int]], rows: list[Seen], forms: Iterable[FormMeta] = ()
) -> tuple[list[list[Mention]], list[str]]:
    """Records named in what is left of ``text``: groups of candidates per mention, and the words
    that name nothing the reader knows — a leftover's function words (``grammar``) are not such words."""
    values = _values(rows)

    def segment(piece: str) -> list[tuple[str, int]]:
        return grammar.content_words(piece, _vocabulary(values, forms), id(rows))

    groups: list[list[Mention]] = []
    unknown: list[str] = []
    for chunk, at in chunks(text, taken):
        lower = chunk.lower()
        # whole values first, longest first (接近开关 before its filler-looking 开, 单片机 before 单)
        inner: list[tuple[int, int]] = []
        for value in sorted((v for v in values if len(v) >= WHOLE_MIN and v in lower), key=len, reverse=True):
            start = lower.find(value)
            span = (start, start + len(value))
            if free(span, inner):
                inner.append(span)
                groups.append(
                    [Mention(chunk[span[0] : span[1]], (at + span[0], at + span[1]), c, r) for c, r in values[value]]
                )
        for rest, offset in chunks(chunk, inner):
            for piece in lexicon.FILLER_RE.split(rest):
                piece = piece.strip()
                if not piece or piece in ("1", "一") or piece in lexicon.IGNORED:
                    continue  # 一笔, 一张: "one" of a measure word
                _piece(piece, at + offset + rest.find(piece), values, groups, unknown, segment)
    return groups, unknown


def _piece(
    piece: str,
    at: int,
    values: dict[str, list[tuple[str, Seen]]],
    groups: list[list[Mention]],
    unknown: list[str],
    segment: Callable[[str], list[tuple[str, int]]] | None,
) -> None:
    """One leftover word: a record or value (exact, part of one, nearly), or values inside it
    (苏州恒达 → 苏州 + 恒达), or — read by its parts of speech — function words around the
    content words that are read again (发一下那边 → nothing; 那边的员工 → 员工), or unknown."""
    found = _resolve(piece, at, values)
    if found is not None:
        groups.append(found)
        return
    lower = piece.lower()
    inside = sorted((v for v in values if len(v) >= 2 and v in lower), key=len, reverse=True)
    if not inside:
        runs = segment(piece) if segment is not None and CJK.search(piece) else [(piece, 0)]
        if runs == [(piece, 0)]:
            unknown.append(piece)
            return
        for word, offset in runs:
            _piece(word, at + offset, values, groups, unknown, None)
        return
    start = lower.find(inside[0])
    groups.append([Mention(inside[0], (at + start, at + start + len(inside[0])), c, r) for c, r in values[inside[0]]])
    for rest, offset in ((piece[:start], 0), (piece[start + len(inside[0]) :], start + len(inside[0]))):
        if len(rest.strip()) >= 2:
            _piece(rest.strip(), at + offset, values, groups, unknown, segment)


def names_record(column: str) -> bool:
    """A column whose value names one record (a code, a name, a spec), not a trait of many."""
    return column in KEY_COLUMNS or column.endswith(("_name", "_code"))


def identity(m: Mention) -> tuple[str, str]:
    """The record a mention stands for, however it was named: its name (and spec)."""
    v = m.seen.values
    name = next((v[c] for c in ("name", "material_name", "customer_name", "supplier_name") if v.get(c)), "")
    return (name or v.get("code") or v.get(m.column, m.text), v.get("spec", ""))


def same_records(groups: list[list[Mention]]) -> list[list[Mention]]:
    """Mentions of records said twice (无锡锡东 + 精工; 深沟球轴承 + 6205-2RS) count once, as the
    narrower: a group whose records include another group's is dropped."""
    ids = [{identity(m) for m in g} if all(names_record(m.column) for m in g) else None for g in groups]
    kept = []
    for i, group in enumerate(groups):
        mine = ids[i]
        broader = mine is not None and any(
            j != i and other is not None and other <= mine and (other != mine or j < i) for j, other in enumerate(ids)
        )
        if not broader:
            kept.append(group)
    return kept


def option_of(m: Mention) -> str:
    """A candidate as the user picks it: code, name and spec where the row has them."""
    v = m.seen.values
    parts = [v[c] for c in ("code", "material_code", "name", "material_name", "spec") if v.get(c)]
    return " ".join(dict.fromkeys(parts)) or v.get(m.column, m.text)


def narrow(group: list[Mention], prefer: str) -> list[Mention]:
    first = prefer.split()[0] if prefer.split() else prefer
    kept = [m for m in group if first in m.seen.values.values()]
    return kept or group
