"""Which words of a question the ERP's metadata explains: form names and aliases, field and
filter labels (and the shorter ways a clerk says them), option labels and their synonyms. Each
word found keeps its span, so the reader can tell what is left unexplained."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from tether.packs.erp import lexicon
from tether.packs.erp.metadata import FormMeta
from tether.packs.erp.schema import without_unit

T = TypeVar("T")
S = TypeVar("S")
CJK = re.compile(r"[\u4e00-\u9fff]")
NAME, ALIAS, LABEL, GAPPED = 10.0, 8.0, 3.0, 5.0


@dataclass(frozen=True)
class Term:
    """A word of the question the metadata explains."""

    text: str
    span: tuple[int, int]
    form_id: str
    kind: str  # name | alias | label | option | gapped
    target: Any = None  # the FieldMeta / FilterMeta for labels, (column, value) for options


def cores(label: str) -> list[str]:
    """The ways a clerk says a label: itself, without its bracketed unit (交期(天) → 交期), without
    an ending (逾期天数 → 逾期), or the noun it ends with (未收余额 → 余额)."""
    bare = without_unit(label)
    out = [label] if bare == label else [label, bare]
    for suffix in lexicon.LABEL_SUFFIXES:
        if bare.endswith(suffix) and len(bare) - len(suffix) >= 2:
            out.append(bare[: -len(suffix)])
    out += [tail for tail in lexicon.LABEL_TAILS if bare.endswith(tail) and len(bare) > len(tail)]
    out += [bare[len(p) :] for p in lexicon.LABEL_PREFIXES if bare.startswith(p) and len(bare) - len(p) >= 2]
    return out


def aliases(form: FormMeta) -> tuple[str, ...]:
    """The form's own aliases and the business words that name it (销售额, 下单 for 销售订单)."""
    own = {form.name.lower(), *(a.lower() for a in form.aliases)}
    words = [w for w, names in lexicon.FORM_WORDS.items() if own & {n.lower() for n in names}]
    return tuple(dict.fromkeys([*form.aliases, *words]))


_KEPT: dict[tuple[str, int], tuple[list[Any], Any]] = {}
KEPT_MAX = 128


def per_catalog(name: str, forms: list[S], build: Callable[[list[S]], T]) -> T:
    """``build(forms)``, kept while that list of the catalog's is alive (an index its forms or its
    rows give: the terms here, their sounds in ``respell``, the values in ``mentions``); ``name``
    tells the indexes apart."""
    kept = _KEPT.get((name, id(forms)))
    if kept is not None and kept[0] is forms:
        return cast(T, kept[1])
    if len(_KEPT) >= KEPT_MAX:
        _KEPT.clear()
    built = build(forms)
    _KEPT[(name, id(forms))] = (forms, built)
    return built


def _index(forms: list[FormMeta]) -> list[tuple[str, str, float, str, Any]]:
    """(term, form id, weight, kind, target), longest terms first; built once per catalog."""
    return per_catalog("terms", forms, _build_index)


_NOT_YET = re.compile(r"(?:还)?没有?(?=(?P<w>[\u4e00-\u9fff]{2}))")


def not_yet(text: str, forms: list[FormMeta]) -> str:
    """还没到期 → 未到期: a 没 said before a word the metadata says with 未 (an option 未到期, a
    label 未收余额) is that word; any other 没 stays as said."""
    words = per_catalog("words", forms, lambda fs: set(metadata_words(fs)))

    def sub(m: re.Match[str]) -> str:
        said = m.group("w")
        return "未" if any(w.startswith("未" + said) for w in words) else m.group(0)

    return _NOT_YET.sub(sub, text)


def metadata_words(forms: list[FormMeta]) -> list[str]:
    """Every word the metadata explains (names, aliases, labels and their cores, options)."""
    return list(dict.fromkeys(row[0] for row in _index(forms)))


def _build_index(forms: list[FormMeta]) -> list[tuple[str, str, float, str, Any]]:
    rows: list[tuple[str, str, float, str, Any]] = []
    for form in forms:
        rows.append((form.name, form.form_id, NAME, "name", None))
        rows += [(a, form.form_id, ALIAS, "alias", None) for a in aliases(form) if len(a) >= 2]
        labelled: list[Any] = [*form.fields, *form.filters]
        bare: dict[str, set[str]] = {}
        for item in labelled:
            for label in (item.label, *_aliases_of(item)):
                bare.setdefault(without_unit(label), set()).add(label)
        for item in labelled:
            for label in (item.label, *_aliases_of(item)):
                for core in cores(label):
                    if core != label and len(bare.get(core, ())) > 1:
                        continue  # 交期 for 交期(天) and 交期(周) names neither: the reader does not guess
                    rows.append((core, form.form_id, LABEL, "label", item))
                    rows += [(s, form.form_id, LABEL, "label", item) for s in _synonyms_of(core)]
            for value, label in (*item.options, *_option_aliases_of(item)):
                if len(label) < 2:  # units (个, 张) are measure words in a question, not options
                    continue
                column = item.column
                rows += [(said, form.form_id, LABEL, "option", (column, value)) for said in _option_words(label)]
    rows.sort(key=lambda r: -len(r[0]))
    return rows


def _synonyms_of(core: str) -> list[str]:
    """The words a clerk says for a label's word, and theirs in turn (卖 → 售价 → 单价)."""
    out: list[str] = []
    wanted = [core]
    while wanted:
        word = wanted.pop()
        said = [s for s, t in lexicon.TERM_SYNONYMS.items() if t == word and s not in out and s != core]
        out += said
        wanted += said
    return out


def _option_words(label: str) -> list[str]:
    """An option's label and the ways a clerk says it: its synonyms, and a state 已X said 已经X or
    X了 (已过账: 已经过账了, 过账了)."""
    out = [label, *lexicon.STATE_SYNONYMS.get(label, ())]
    if label.startswith("已") and len(label) >= 3 and CJK.match(label[1]):
        out += [f"已经{label[1:]}", f"{label[1:]}了"]
    return out


def _said(word: str) -> bool:
    """Whether another language's label may name its field: not a word the shape reads (an English
    "Total" or "Number" is the question's sum or count, not a field)."""
    return len(word) >= 2 and not lexicon.FILLER_RE.fullmatch(word.strip())


def _aliases_of(item: Any) -> list[str]:
    return [a for a in item.aliases if a != item.label and _said(a)]


def _option_aliases_of(item: Any) -> list[tuple[str, str]]:
    own = {label for _, label in item.options}
    return [(v, label) for v, label in item.option_aliases if label not in own and _said(label)]


def free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in taken)


def find_terms(text: str, forms: list[FormMeta], taken: list[tuple[int, int]]) -> list[Term]:
    """Every metadata word in ``text``, longest first; a shorter word inside a longer one is not
    read again (应收 inside 应收账款). A two-character name or alias may be split by up to three
    characters (收了多少款 → 收款), or — a verb and its object, split as Chinese splits them — by
    a phrase that ends in 的 or 多少 (收了哪些客户的款, 收了常州力拓多少款), when nothing else
    names a form."""
    lower = text.lower()
    found: list[Term] = []
    claimed: list[tuple[int, int]] = list(taken)
    for term, form_id, _weight, kind, target in _index(forms):
        key = term.lower()
        # a Latin word as a whole word, plural or not (customers); Chinese anywhere
        pattern = rf"(?<![a-z]){re.escape(key)}(?:e?s)?(?![a-z])" if key.isascii() else re.escape(key)
        for m in re.finditer(pattern, lower):
            span = m.span()
            if free(span, claimed) or any(t.span == span for t in found):
                found.append(Term(term, span, form_id, kind, target))
        claimed += [t.span for t in found]
    if not any(t.kind in ("name", "alias") for t in found):
        for form in forms:
            for word in (form.name, *aliases(form)):
                if len(word) != 2 or not CJK.match(word):
                    continue
                split = re.escape(word[0]) + r"([^\s]{1,3}?|[^\s]{1,8}?(?:的|多少))" + re.escape(word[1])
                for m in re.finditer(split, text):
                    ends = [(m.start(), m.start() + 1), (m.end() - 1, m.end())]
                    if free(m.span(), claimed) or (len(m[1]) > 3 and all(free(e, claimed) for e in ends)):
                        found.append(Term(word, (m.start(), m.start() + 1), form.form_id, "gapped"))
                        found.append(Term(word, (m.end() - 1, m.end()), form.form_id, "gapped"))
    return found


def chunks(text: str, taken: list[tuple[int, int]]) -> list[tuple[str, int]]:
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


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the words the metadata explained blanked (价税合计 is a field, not 合计)."""
    chars = list(text)
    for a, b in spans:
        chars[a:b] = "□" * (b - a)
    return "".join(chars)
