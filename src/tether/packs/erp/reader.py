"""The offline reader: a clerk's read question, understood from the ERP's own metadata — which of
the caller's granted forms, which shape (list, count, one field, sum/avg/max/min, group-by,
top-N), which filters (option labels and their synonyms, records named exactly or nearly, values
seen in the data, dates, comparisons with units). No per-form code: every form, label, option and
record comes from the ``Catalog``.

It never guesses: two forms that fit equally, or a name that fits several records, become a
question; a word it cannot place becomes "I did not understand …"; a form the caller lacks is
never chosen. The result is a ``Reading`` (what to fetch), an ``Ask`` or a ``Refusal``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from rapidfuzz import fuzz

from tether.packs.erp import lexicon
from tether.packs.erp.metadata import KEY_COLUMNS, Catalog, FieldMeta, FilterMeta, FormMeta, Seen
from tether.packs.erp.phrases import Comparison, Period, arabic, comparisons, period_of, top_n

_CJK = re.compile(r"[\u4e00-\u9fff]")
_PUNCT = re.compile(r"[？?。！!，,、：:；;“”\"'（）()《》<>【】\[\]]+")
BILL = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2})(\d{6}-\d{4})(?![0-9])")
NAME, ALIAS, LABEL, GAPPED = 10.0, 8.0, 3.0, 5.0
FUZZY_MIN = 85.0  # rapidfuzz partial ratio a near-miss name must reach
MAX_CANDIDATES = 8


@dataclass(frozen=True)
class Term:
    """A word of the question the metadata explains."""

    text: str
    span: tuple[int, int]
    form_id: str
    kind: str  # name | alias | label | option | gapped
    target: Any = None  # the FieldMeta / FilterMeta for labels, (column, value) for options


@dataclass(frozen=True)
class Mention:
    """A record (or a value of a text filter) the question names: ``seen`` is its row."""

    text: str
    span: tuple[int, int]
    column: str  # where the value was seen
    seen: Seen


@dataclass
class Reading:
    form: FormMeta
    shape: str  # list | count | field | aggregate | group | top
    filters: dict[str, Any] = field(default_factory=dict)  # the form's own filter parameters
    where: list[tuple[str, str, Any]] = field(default_factory=list)  # (column, op, value) beyond them
    said: list[str] = field(default_factory=list)  # each filter as the answer states it
    measure: FieldMeta | None = None
    agg: str | None = None  # sum | avg | max | min
    group: str | None = None  # a column
    top: int | None = None
    asked: list[FieldMeta] = field(default_factory=list)  # the fields a "field" question asks for
    ascending: bool = False  # a top-N of the smallest
    period: Period | None = None
    english: bool = False

    @property
    def needs_sql(self) -> bool:
        return self.shape in ("aggregate", "group", "top") or bool(self.where)


@dataclass
class Ask:
    question: str
    options: list[str]


@dataclass
class Refusal:
    text: str


Outcome = Reading | Ask | Refusal


def _normal(question: str) -> str:
    text = question.strip().translate(str.maketrans("０１２３４５６７８９", "0123456789"))
    return arabic(_PUNCT.sub(" ", text))


def _cores(label: str) -> list[str]:
    out = [label]
    for suffix in lexicon.LABEL_SUFFIXES:
        if label.endswith(suffix) and len(label) - len(suffix) >= 2:
            out.append(label[: -len(suffix)])
    out += [tail for tail in lexicon.LABEL_TAILS if label.endswith(tail) and len(label) > len(tail)]
    return out


def _index(forms: list[FormMeta]) -> list[tuple[str, str, float, str, Any]]:
    """(term, form id, weight, kind, target), longest terms first."""
    rows: list[tuple[str, str, float, str, Any]] = []
    for form in forms:
        rows.append((form.name, form.form_id, NAME, "name", None))
        rows += [(a, form.form_id, ALIAS, "alias", None) for a in form.aliases if len(a) >= 2]
        labelled: list[Any] = [*form.fields, *form.filters]
        for item in labelled:
            for core in _cores(item.label):
                rows.append((core, form.form_id, LABEL, "label", item))
                rows += [(s, form.form_id, LABEL, "label", item) for s, t in lexicon.TERM_SYNONYMS.items() if t == core]
            for value, label in item.options:
                if len(label) < 2:  # units (个, 张) are measure words in a question, not options
                    continue
                column = item.column
                rows.append((label, form.form_id, LABEL, "option", (column, value)))
                rows += [
                    (s, form.form_id, LABEL, "option", (column, value)) for s in lexicon.STATE_SYNONYMS.get(label, ())
                ]
    rows.sort(key=lambda r: -len(r[0]))
    return rows


def _free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


def _terms(text: str, forms: list[FormMeta], taken: list[tuple[int, int]]) -> list[Term]:
    """Every metadata word in ``text``, longest first; a shorter word inside a longer one is not
    read again (应收 inside 应收账款). A two-character name or alias may be split by up to three
    characters (收了多少款 → 收款) when nothing else names a form."""
    lower = text.lower()
    found: list[Term] = []
    claimed: list[tuple[int, int]] = list(taken)
    for term, form_id, _weight, kind, target in _index(forms):
        key = term.lower()
        # a Latin word as a whole word, plural or not (customers); Chinese anywhere
        pattern = rf"(?<![a-z]){re.escape(key)}(?:e?s)?(?![a-z])" if key.isascii() else re.escape(key)
        for m in re.finditer(pattern, lower):
            span = m.span()
            if _free(span, claimed) or any(t.span == span for t in found):
                found.append(Term(term, span, form_id, kind, target))
        claimed += [t.span for t in found]
    if not any(t.kind in ("name", "alias") for t in found):
        for form in forms:
            for word in (form.name, *form.aliases):
                if len(word) != 2 or not _CJK.match(word):
                    continue
                for m in re.finditer(re.escape(word[0]) + r"([^\s]{1,3}?)" + re.escape(word[1]), text):
                    if _free(m.span(), claimed):
                        found.append(Term(word, (m.start(), m.start() + 1), form.form_id, "gapped"))
                        found.append(Term(word, (m.end() - 1, m.end()), form.form_id, "gapped"))
    return found


def _chunks(text: str, taken: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """The parts of ``text`` nothing explained yet, with their offsets."""
    out: list[tuple[str, int]] = []
    start = 0
    for a, b in sorted(taken):
        if a > start:
            out.append((text[start:a], start))
        start = max(start, b)
    if start < len(text):
        out.append((text[start:], start))
    return [(c, at) for c, at in out if c.strip()]


def _values(rows: list[Seen]) -> dict[str, list[tuple[str, Seen]]]:
    """value (lowercase) -> [(column, row)] over every identifying value seen."""
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


def _mentions(text: str, taken: list[tuple[int, int]], rows: list[Seen]) -> tuple[list[list[Mention]], list[str]]:
    """Records named in what is left of ``text``: groups of candidates per mention, and the words
    that name nothing the reader knows."""
    values = _values(rows)
    groups: list[list[Mention]] = []
    unknown: list[str] = []
    for chunk, at in _chunks(text, taken):
        lower = chunk.lower()
        # long whole values first, longest first (接近开关 before its filler-looking 开)
        inner: list[tuple[int, int]] = []
        for value in sorted((v for v in values if len(v) >= 4 and v in lower), key=len, reverse=True):
            start = lower.find(value)
            span = (start, start + len(value))
            if _free(span, inner):
                inner.append(span)
                groups.append(
                    [Mention(chunk[span[0] : span[1]], (at + span[0], at + span[1]), c, r) for c, r in values[value]]
                )
        for rest, offset in _chunks(chunk, inner):
            for piece in lexicon.FILLER_RE.split(rest):
                piece = piece.strip()
                if not piece or piece == "1" or piece in lexicon.IGNORED:
                    continue  # 一笔, 一张: "one" of a measure word
                _piece(piece, at + offset + rest.find(piece), values, groups, unknown)
    return groups, unknown


def _piece(
    piece: str, at: int, values: dict[str, list[tuple[str, Seen]]], groups: list[list[Mention]], unknown: list[str]
) -> None:
    """One leftover word: a record or value (exact, part of one, nearly), or values inside it
    (苏州恒达 → 苏州 + 恒达), or unknown."""
    found = _resolve(piece, at, values)
    if found is not None:
        groups.append(found)
        return
    lower = piece.lower()
    inside = sorted((v for v in values if len(v) >= 2 and v in lower), key=len, reverse=True)
    if not inside:
        unknown.append(piece)
        return
    start = lower.find(inside[0])
    groups.append([Mention(inside[0], (at + start, at + start + len(inside[0])), c, r) for c, r in values[inside[0]]])
    for rest, offset in ((piece[:start], 0), (piece[start + len(inside[0]) :], start + len(inside[0]))):
        if len(rest.strip()) >= 2:
            _piece(rest.strip(), at + offset, values, groups, unknown)


def _distinct(group: list[Mention]) -> list[str]:
    """The different records a mention may mean, by their name (or the value itself)."""
    names = []
    for m in group:
        v = m.seen.values
        names.append(v.get("name") or v.get(m.column) or m.text)
    return list(dict.fromkeys(names))


def _choose_form(
    terms: list[Term], mentions: list[list[Mention]], forms: list[FormMeta], bill_form: str | None
) -> list[str]:
    """The best-fitting forms (several when they fit equally)."""
    score: dict[str, float] = {f.form_id: 0.0 for f in forms}
    named: dict[str, list[Term]] = {}
    counted: set[tuple[str, tuple[int, int]]] = set()
    for t in terms:
        if (t.form_id, t.span) in counted:  # one word counts once per form (物料 of 物料编码 and 物料名称)
            continue
        counted.add((t.form_id, t.span))
        weight = {"name": NAME, "alias": ALIAS, "gapped": GAPPED / 2}.get(t.kind, LABEL)
        if t.kind in ("name", "alias"):
            weight += 0.5 * len(t.text)  # 安全库存 says more than 物料
        if t.kind in ("name", "alias", "gapped"):
            named.setdefault(t.form_id, []).append(t)
        score[t.form_id] += weight
    for group in mentions:  # a record named counts most for its own form (客户档案 for a customer)
        own = {m.seen.form_id for m in group if m.column in ("name", "code", "short_name", "spec")}
        for form_id in {m.seen.form_id for m in group}:
            score[form_id] += 2.0 if form_id in own else 1.0
    if bill_form:
        score[bill_form] = score.get(bill_form, 0.0) + NAME
    _demote_fields(score, named, {f.form_id: f for f in forms})
    best = max(score.values(), default=0.0)
    if best <= 0:
        return []
    return [f for f, s in score.items() if s >= best - 0.5 and s > 0]


def _demote_fields(score: dict[str, float], named: dict[str, list[Term]], by_id: dict[str, FormMeta]) -> None:
    """A form named only as a field of another named form is that form's column (供应商 in 应付账款);
    when each names a field of the other, the one whose name is the other's field exactly yields
    (安全库存 names 安全库存预警 and is 物料档案's field)."""

    def labels(b: str) -> list[str]:
        return [x.label for x in by_id[b].fields] + [x.label for x in by_id[b].filters]

    def inside(a: str, b: str) -> bool:
        return all(any(t.text in lb for lb in labels(b)) for t in named[a])

    def exactly(a: str, b: str) -> bool:
        return all(t.text in labels(b) for t in named[a])

    for a in named:
        for b in named:
            if a != b and inside(a, b) and (not inside(b, a) or (exactly(a, b) and not exactly(b, a))):
                score[a] -= NAME


def read(question: str, catalog: Catalog, today: date, prefer: str | None = None) -> Outcome:
    """``prefer``: the user's answer to an earlier question (a form's name or a record's)."""
    text = _normal(question)
    english = not _CJK.search(question)
    forms = catalog.forms
    if not forms:
        return Refusal(_no_forms(english))
    taken: list[tuple[int, int]] = []
    period = period_of(text, today)
    if period:
        taken.append(period.span)
    comps = [c for c in comparisons(text) if _free(c.span, taken)]
    taken += [c.span for c in comps]
    top = top_n(text)
    if top and _free(top[1], taken):
        taken.append(top[1])
    bill_no, bill_form = None, None
    if m := BILL.search(text):
        bill_no = (m[1] + m[2]).upper()
        bill_form = next((f.form_id for f in forms if (f.bill_prefix or "").upper() == m[1].upper()), None)
        if bill_form is None:
            return Refusal(_unknown_words([bill_no], forms, english))
        taken.append(m.span())
    terms = _terms(text, forms, taken)
    taken += [t.span for t in terms]
    mentions, unknown = _mentions(text, taken, catalog.rows)
    mentions = _same_records(mentions)
    if prefer:
        mentions = [_narrow(g, prefer) for g in mentions]
    if unknown:
        return Refusal(_unknown_words(unknown, forms, english))
    chosen = _choose_form(terms, mentions, forms, bill_form)
    if prefer and (named := next((f.form_id for f in forms if f.name == prefer), None)):
        chosen = [named]
    if not chosen:
        return Refusal(_unknown_words([], forms, english))
    if len(chosen) > 1:
        names = [f.name for f in forms if f.form_id in chosen]
        ask = "Which form do you mean?" if english else "您问的是哪张表单？"
        return Ask(ask + " " + " / ".join(names), names)
    form = next(f for f in forms if f.form_id == chosen[0])
    unused = _unused(terms, form)
    if unused:
        return Refusal(_not_on_form(unused, form, forms, english))
    reading = Reading(form, "list", period=period, english=english)
    problem = _apply(reading, catalog, text, terms, mentions, comps, bill_no, english)
    if problem is not None:
        return problem
    residual = _blank(text, [t.span for t in terms] + [m.span for g in mentions for m in g])
    _shape(reading, text, residual, terms, top[0] if top else None)
    if reading.measure is None and reading.shape in ("aggregate", "group", "top") and lexicon.MONEY.search(text):
        return _which_amount(reading, forms, text, english)
    return reading


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the words the metadata explained blanked (价税合计 is a field, not 合计)."""
    chars = list(text)
    for a, b in spans:
        chars[a:b] = "□" * (b - a)
    return "".join(chars)


def _which_amount(reading: Reading, forms: list[FormMeta], text: str, english: bool) -> Outcome:
    """An amount asked of a form that holds none (金额最大的5个客户 on 客户档案): the forms that
    hold one for that grouping, as a question; none: say so."""
    word = _group_word(text)
    fits = [f.name for f in forms if _money(f) and (not word or _group_column(f, word))]
    if not fits:
        if english:
            return Refusal(f"{reading.form.name} holds no amount, and none of your forms sums one that way.")
        return Refusal(f"{reading.form.name}没有金额字段，您的表单中也没有可按此汇总金额的。")
    lead = "Which form's amount?" if english else "按哪张表单的金额？"
    return Ask(lead + " " + " / ".join(fits), fits)


def _unused(terms: list[Term], form: FormMeta) -> list[str]:
    """Words the metadata knows from other forms only: the chosen form cannot honour them."""
    mine = {t.span for t in terms if t.form_id == form.form_id}
    return list(
        dict.fromkeys(t.text for t in terms if t.span not in mine and t.kind not in ("name", "alias", "gapped"))
    )


def _not_on_form(words: list[str], form: FormMeta, forms: list[FormMeta], english: bool) -> str:
    shown = ", ".join(words) if english else "、".join(f"“{w}”" for w in words)
    others = [f.name for f in forms if f.form_id != form.form_id]
    if english:
        return f"{form.name} has no {shown}; I can't answer that offline. Ask about one of your forms: {form.name}, {', '.join(others)}."
    return f"{form.name}里没有{shown}，离线规划器无法这样回答。可以询问的表单：{form.name}、{'、'.join(others)}。"


def _narrow(group: list[Mention], prefer: str) -> list[Mention]:
    first = prefer.split()[0] if prefer.split() else prefer
    kept = [m for m in group if first in m.seen.values.values()]
    return kept or group


def _filter_for(form: FormMeta, column: str, source: FormMeta | None) -> FilterMeta | None:
    """The form's filter that takes a value seen in ``column`` (of ``source``'s view, matched by
    label when the forms differ: 客户档案's 客户名称 is 报价单's customer_name)."""
    own = [f for f in form.filters if f.column == column and f.op in ("eq", "like") and f.type == "text"]
    if own and (source is None or source.form_id == form.form_id):
        return own[0]
    if source is None:
        return None
    label = source.label_of(column)
    return next((f for f in form.filters if f.label == label and f.type == "text" and f.op in ("eq", "like")), None)


def _apply(
    reading: Reading,
    catalog: Catalog,
    text: str,
    terms: list[Term],
    mentions: list[list[Mention]],
    comps: list[Comparison],
    bill_no: str | None,
    english: bool,
) -> Refusal | Ask | None:
    form = reading.form
    _apply_options(reading, terms)
    if bill_no:
        flt = next((f for f in form.filters if f.column == "bill_no"), None)
        if flt is None:
            return Refusal(_unknown_words([bill_no], [form], english))
        reading.filters[flt.name] = bill_no
        reading.said.append(f"{flt.label} = {bill_no}")
    for group in mentions:
        problem = _apply_mention(reading, catalog, group, english)
        if problem is not None:
            return problem
    for c in comps:
        problem = _apply_comparison(reading, c, terms, english)
        if problem is not None:
            return problem
    if not comps:
        _apply_day_counts(reading, terms)
    if reading.period:
        _apply_period(reading, english)
    return None


def _apply_options(reading: Reading, terms: list[Term]) -> None:
    """Option labels and their synonyms (还没审核 → 状态 = 草稿), once per column."""
    form = reading.form
    for t in terms:
        if t.kind != "option" or t.form_id != form.form_id:
            continue
        column, value = t.target
        if any(f.column == column for f in form.filters if f.name in reading.filters) or any(
            w[0] == column for w in reading.where
        ):
            continue
        flt = next((f for f in form.filters if f.column == column and f.options), None)
        label = dict(_options_of(form, column)).get(value, value)
        if flt is not None:
            reading.filters[flt.name] = value
        else:
            reading.where.append((column, "=", value))
        reading.said.append(f"{form.label_of(column)} = {label}")


def _apply_day_counts(reading: Reading, terms: list[Term]) -> None:
    """A day-count filter named without a number (哪些应付已经超期了): overdue at all, ≥ 1."""
    form = reading.form
    for t in terms:
        if t.kind == "label" and t.form_id == form.form_id:
            column = t.target.column
            flt = next((f for f in form.filters if f.column == column and f.op == "gte" and f.type == "integer"), None)
            if flt is not None and flt.name not in reading.filters and "天" in flt.label:
                reading.filters[flt.name] = 1
                reading.said.append(f"{flt.label} ≥ 1")


def _options_of(form: FormMeta, column: str) -> tuple[tuple[str, str], ...]:
    for flt in form.filters:
        if flt.column == column and flt.options:
            return flt.options
    fd = form.field(column)
    return fd.options if fd else ()


def _target(form: FormMeta, catalog: Catalog, m: Mention) -> tuple[str, str, str] | None:
    """How ``form`` can take the record (or value) ``m`` names: (filter name or "" for an SQL
    condition, column, value) — by its own filter, by a filter with the same label, or by a text
    field of the form that no filter serves (苏州 → 供应商档案.城市)."""
    row = m.seen.values
    if m.seen.form_id == form.form_id:
        own = _filter_for(form, m.column, None)
        if own is not None:
            return own.name, own.column, row[m.column]
        if not _names_record(m.column) and form.field(m.column) is not None:
            return "", m.column, row[m.column]  # 苏州 in 城市: a condition, not a record
        exact = next((f for f in form.filters if f.op == "eq" and f.type == "text" and f.column in row), None)
        if exact is not None:
            return exact.name, exact.column, row[exact.column]
        return None
    source = catalog.form(m.seen.form_id)
    for column in ("code", m.column, "name"):
        if row.get(column):
            flt = _filter_for(form, column, source)
            if flt is not None:
                return flt.name, flt.column, row[column]
    label = source.label_of(m.column) if source else m.column
    same = next((f for f in form.fields if f.type == "text" and f.label == label), None)
    return ("", same.column, row[m.column]) if same and same.column in form.columns else None


def _names_record(column: str) -> bool:
    """A column whose value names one record (a code, a name, a spec), not a trait of many."""
    return column in KEY_COLUMNS or column.endswith(("_name", "_code"))


def _identity(m: Mention) -> tuple[str, str]:
    """The record a mention stands for, however it was named: its name (and spec)."""
    v = m.seen.values
    name = next((v[c] for c in ("name", "material_name", "customer_name", "supplier_name") if v.get(c)), "")
    return (name or v.get("code") or v.get(m.column, m.text), v.get("spec", ""))


def _same_records(groups: list[list[Mention]]) -> list[list[Mention]]:
    """Mentions of records said twice (无锡锡东 + 精工; 深沟球轴承 + 6205-2RS) count once, as the
    narrower: a group whose records include another group's is dropped."""
    ids = [{_identity(m) for m in g} if all(_names_record(m.column) for m in g) else None for g in groups]
    kept = []
    for i, group in enumerate(groups):
        mine = ids[i]
        broader = mine is not None and any(
            j != i and other is not None and other <= mine and (other != mine or j < i) for j, other in enumerate(ids)
        )
        if not broader:
            kept.append(group)
    return kept


def _option(m: Mention) -> str:
    """A candidate as the user picks it: code, name and spec where the row has them."""
    v = m.seen.values
    parts = [v[c] for c in ("code", "material_code", "name", "material_name", "spec") if v.get(c)]
    return " ".join(dict.fromkeys(parts)) or v.get(m.column, m.text)


def _apply_mention(reading: Reading, catalog: Catalog, group: list[Mention], english: bool) -> Refusal | Ask | None:
    form = reading.form
    own = [m for m in group if m.seen.form_id == form.form_id and _target(form, catalog, m)]
    usable = own or group  # the form's own rows say best what it can filter by
    records: dict[str, list[tuple[tuple[str, str, str], Mention]]] = {}
    for m in usable:
        if (t := _target(form, catalog, m)) is not None:
            records.setdefault(_option(m) if _names_record(m.column) else t[2], []).append((t, m))
    what = group[0].text
    if not records:
        if english:
            return Refusal(f"{form.name} cannot be filtered by “{what}”.")
        return Refusal(f"{form.name}无法按“{what}”筛选。")
    if len(records) > 1:
        shown = list(records)[:MAX_CANDIDATES]
        lead = f"“{what}” matches several records; which one?" if english else f"“{what}”对应多条记录，您指的是哪一个？"
        return Ask(lead + " " + " / ".join(shown), shown)
    ways = next(iter(records.values()))  # one record, maybe by several filters: by its name first
    ways.sort(key=lambda w: (w[0][0] == "", w[1].column not in ("name", w[0][1])))
    name, column, value = ways[0][0]
    flt = next((f for f in form.filters if f.name == name), None)
    if flt is None:
        reading.where.append((column, "=", value))
        reading.said.append(f"{form.label_of(column)} = {value}")
        return None
    reading.filters[flt.name] = value
    reading.said.append(f"{flt.label} = {value}" if flt.op == "eq" else f"{flt.label} 含 {value}")
    return None


def _apply_comparison(reading: Reading, c: Comparison, terms: list[Term], english: bool) -> Refusal | None:
    form = reading.form
    op_word = "≥" if c.op == ">=" else "≤"
    if c.unit == "天":
        flt = next(
            (
                f
                for f in form.filters
                if f.type == "integer" and f.op == ("gte" if c.op == ">=" else "lte") and "天" in f.label
            ),
            None,
        )
        if flt is not None:
            reading.filters[flt.name] = int(c.value)
            reading.said.append(f"{flt.label} {op_word} {int(c.value)}")
            return None
        column = next((f.column for f in form.fields if "天" in f.label and f.numeric), None)
    else:
        named = [
            t.target
            for t in terms
            if t.kind == "label" and t.form_id == form.form_id and isinstance(t.target, FieldMeta) and t.target.numeric
        ]
        money = _money(form)
        column = named[0].column if named else (money.column if money else None)
    if column is None or column not in form.columns:
        what = c.phrase
        return Refusal(
            f"“{what}”: {form.name} has no such number." if english else f"“{what}”：{form.name}没有可比较的数值字段。"
        )
    reading.where.append((column, c.op, c.value))
    shown = str(int(c.value)) if c.value.is_integer() else str(c.value)
    reading.said.append(f"{form.label_of(column)} {op_word} {shown}")
    return None


def _money(form: FormMeta) -> FieldMeta | None:
    numeric = [f for f in form.fields if f.numeric]
    for word in ("合计", "金额", "余额"):
        hit = next((f for f in numeric if word in f.label and "不含税" not in f.label), None)
        if hit:
            return hit
    return None


def _apply_period(reading: Reading, english: bool) -> None:
    form, period = reading.form, reading.period
    assert period is not None
    start = next((f for f in form.filters if f.type == "date" and f.op == "gte"), None)
    end = next(
        (f for f in form.filters if f.type == "date" and f.op == "lte" and start and f.column == start.column), None
    )
    if start is not None:
        reading.filters[start.name] = period.start.isoformat()
        if end is not None:
            reading.filters[end.name] = period.end.isoformat()
        else:
            reading.where.append((start.column, "<=", period.end.isoformat()))
        reading.said.append(f"{form.label_of(start.column)} {period.label()}")
        return
    column = next((f.column for f in form.fields if f.type == "date"), None)
    if column:
        reading.where += [(column, ">=", period.start.isoformat()), (column, "<=", period.end.isoformat())]
        reading.said.append(f"{form.label_of(column)} {period.label()}")
    else:
        reading.period = None  # the form has no date: said in the answer
        reading.said.append(
            f"(no date on this form: {period.phrase} ignored)"
            if english
            else f"（本表无日期，未按“{period.phrase}”筛选）"
        )


def _group_word(text: str) -> str | None:
    """The word a question groups or ranks by: 按客户汇总 → 客户; 金额最大的5个客户 → 个客户."""
    if group := lexicon.GROUP.search(text):
        return group.group("a") or group.group("b") or group.group("c") or group.group("d")
    if top := top_n(text):
        return text[top[1][1] - 2 : top[1][1] + 6]
    return None


def _shape(reading: Reading, text: str, residual: str, terms: list[Term], top: int | None) -> None:
    form = reading.form
    own_labels = [t for t in terms if t.form_id == form.form_id and t.kind == "label"]
    numeric = [t.target for t in own_labels if isinstance(t.target, FieldMeta) and t.target.numeric]
    group_column = _group_column(form, _group_word(text))
    if top:
        reading.shape, reading.top = "top", top
        reading.measure = numeric[0] if numeric else _money(form)
        reading.group = group_column
        return
    if group_column:
        reading.shape, reading.group = "group", group_column
        reading.measure = numeric[0] if numeric else _money(form)
        return
    if lexicon.COUNT.search(residual):
        reading.shape = "count"
        return
    if _which_is_extreme(reading, text, residual, numeric):
        return
    for agg, pattern in (("avg", lexicon.AVG), ("max", lexicon.MAX), ("min", lexicon.MIN), ("sum", lexicon.SUM)):
        if pattern.search(residual) and (numeric or lexicon.MONEY.search(text)):
            reading.shape, reading.agg = "aggregate", agg
            reading.measure = numeric[0] if numeric else _money(form)
            return
    asked = [
        t.target
        for t in own_labels
        if isinstance(t.target, FieldMeta) and t.target.column not in _filtered_columns(reading)
    ]
    if asked and lexicon.ASKS_VALUE.search(residual) and reading.filters:
        reading.shape, reading.asked = "field", list(dict.fromkeys(asked))
        return
    if numeric and lexicon.SUM.search(residual):
        reading.shape, reading.agg, reading.measure = "aggregate", "sum", numeric[0]


def _which_is_extreme(reading: Reading, text: str, residual: str, numeric: list[FieldMeta]) -> bool:
    """哪个客户的信用额度最高 / 上个月收款最多的客户: the record (or the group) at the top, not the
    largest value alone."""
    smallest = lexicon.MIN.search(residual) is not None
    if not (smallest or lexicon.MAX.search(residual)):
        return False
    which = lexicon.WHICH.search(text) or lexicon.BEST_OF.search(text)
    if which is None:
        return False
    word = which.group("w") if "w" in which.groupdict() and which.group("w") else which.groupdict().get("e")
    measure = numeric[0] if numeric else _money(reading.form)
    if measure is None:
        return False
    column = _group_column(reading.form, word)
    reading.shape, reading.top, reading.measure, reading.ascending = "top", 1, measure, smallest
    reading.group = None if column in KEY_COLUMNS else column
    return True


def _filtered_columns(reading: Reading) -> set[str]:
    names = set(reading.filters)
    return {f.column for f in reading.form.filters if f.name in names}


def _group_column(form: FormMeta, word: str | None) -> str | None:
    """The column a group-by word names (客户 → customer_name, via the filter labelled 客户名称)."""
    if not word:
        return None
    for f in form.filters:
        if (
            f.type in ("text", "select")
            and f.op in ("eq", "like")
            and any(c and c in word for c in _label_heads(f.label))
        ):
            return f.column
    for fd in form.fields:
        if fd.type in ("text", "select") and any(c and c in word for c in _label_heads(fd.label)):
            return fd.column
    return None


def _label_heads(label: str) -> list[str]:
    return [c for c in _cores(label) if len(c) >= 2]


def _no_forms(english: bool) -> str:
    return "You have no ERP forms to ask about." if english else "您没有可查询的 ERP 表单。"


def _unknown_words(words: list[str], forms: list[FormMeta], english: bool) -> str:
    names = "、".join(f"{f.name}" for f in forms)
    if english:
        lead = (
            f"I did not understand, nor find in the data you can see: {', '.join(words)}. "
            if words
            else "None of your forms fits this question. "
        )
        return lead + f"I can't answer that offline; I can answer questions about: {names}."
    lead = (
        f"我没有理解，也没在您能查看的数据里找到：{'、'.join(f'“{w}”' for w in words)}。"
        if words
        else "您的表单里没有能回答这个问题的。"
    )
    return lead + f"离线规划器可以回答关于这些表单的问题：{names}。"
