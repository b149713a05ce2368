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
from datetime import date
from typing import Any

from tether.pack import phrases
from tether.packs.erp import lexicon
from tether.packs.erp.mentions import (
    Mention,
    find_mentions,
    identity,
    names_record,
    narrow,
    option_of,
    same_records,
)
from tether.packs.erp.metadata import Catalog, FieldMeta, FilterMeta, FormMeta
from tether.packs.erp.plans import number_text
from tether.packs.erp.readings import Ask, Outcome, Reading, Refusal
from tether.packs.erp.respell import respelled, romanized
from tether.packs.erp.shapes import group_column, group_word, money_field, owed_field, quantity_field, says, shape
from tether.packs.erp.wording import ALIAS, CJK, GAPPED, LABEL, NAME, Term, blank, cores, find_terms, free, not_yet

_PUNCT = re.compile(r"[？?。！!，,、：:；;“”\"'（）()《》<>【】\[\]]+")
BILL = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2})(\d{6}-\d{4})(?![0-9])")
MAX_CANDIDATES = 8
_CONTRACTION = re.compile(r"(?<=[A-Za-z])['’]s\b")


def _normal(question: str) -> str:
    text = question.strip().translate(str.maketrans("０１２３４５６７８９", "0123456789"))
    text = _CONTRACTION.sub(" is", text)  # what's the price → what is the price
    text = lexicon.A_NOT_A.sub(r"\1\2了没", text).replace("是不是", "是")  # 审没审核 → 审核了没
    return phrases.arabic(_PUNCT.sub(" ", text))


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
    owners: set[str] = set()  # the forms whose own records the question names
    for group in mentions:  # a record named counts most for its own form (客户档案 for a customer)
        own = {m.seen.form_id for m in group if m.column in ("name", "code", "short_name", "spec")}
        owners |= own
        for form_id in {m.seen.form_id for m in group}:
            score[form_id] += 2.0 if form_id in own else 1.0
    if bill_form:
        score[bill_form] = score.get(bill_form, 0.0) + NAME
    _demote_fields(score, named, owners, {f.form_id: f for f in forms})
    best = max(score.values(), default=0.0)
    if best <= 0:
        return []
    return [f for f, s in score.items() if s >= best - 0.5 and s > 0]


def _demote_fields(
    score: dict[str, float], named: dict[str, list[Term]], owners: set[str], by_id: dict[str, FormMeta]
) -> None:
    """A form named only as a field of another named form is that form's column (供应商 in 应付账款);
    when each names a field of the other, the one whose name is the other's field exactly yields
    (安全库存 names 安全库存预警 and is 物料档案's field) — as it does to the form of a record the
    question names (深沟球轴承的安全库存: 物料档案's field of that material)."""

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
        if any(b != a and b not in named and exactly(a, b) for b in owners):
            score[a] -= NAME


def read(
    question: str,
    catalog: Catalog,
    today: date,
    prefer: str | None = None,
    retyped: bool = False,
    english: bool | None = None,
) -> Outcome:
    """``prefer``: the user's answer to an earlier question (a form's name or a record's);
    ``retyped``: the question is already a sound-alike typo read again (``respell``); ``english``:
    the language of the answer, where the question's own text no longer tells (Shanghai → 上海)."""
    english = not CJK.search(question) if english is None else english
    forms = catalog.forms
    text = not_yet(_normal(question), forms)
    if not forms:
        return Refusal(_no_forms(english))
    period, comps, top, taken = _spoken(text, today, forms)
    bill_no, bill_form = None, None
    if m := BILL.search(text):
        bill_no = (m[1] + m[2]).upper()
        bill_form = next((f.form_id for f in forms if (f.bill_prefix or "").upper() == m[1].upper()), None)
        if bill_form is None:
            return Refusal(_unknown_words([bill_no], forms, english))
        taken.append(m.span())
    terms = find_terms(text, forms, taken)
    if denied := _denied_named(text, catalog, terms, english):
        return denied
    terms += _referred(terms, forms)
    taken += [t.span for t in terms] + _left(text, taken + [t.span for t in terms], forms)
    mentions, unknown = find_mentions(text, taken, catalog.rows, forms)
    mentions = same_records(mentions)
    if prefer:
        mentions = [narrow(g, prefer) for g in mentions]
    if unknown:
        return _unplaced(text, unknown, catalog, today, prefer, retyped, english)
    chosen = _choose_form(terms, mentions, forms, bill_form)
    if prefer and (named := next((f.form_id for f in forms if f.name == prefer), None)):
        chosen = [named]
    if not chosen:
        return _not_granted(text, catalog, english) or Refusal(_unknown_words([], forms, english))
    chosen = _remaining(_owing(chosen, forms, text, terms, mentions), forms, text)
    form = _one_form(chosen, forms, terms, mentions, text, english)
    if not isinstance(form, FormMeta):
        return form
    reading = Reading(form, "list", period=period, english=english)
    reading.chosen = prefer is not None  # a candidate the user picked: filter by its code
    problem = _apply(reading, catalog, text, terms, mentions, comps, bill_no, english)
    if problem is not None:
        return problem
    residual = blank(text, [t.span for t in terms] + [m.span for g in mentions for m in g])
    shape(reading, text, residual, terms, top[0] if top else None)
    if reading.having and reading.group is None:  # a total compared, but of what records?
        return Refusal(_unknown_words([reading.said[-1]], [form], english))
    if lexicon.LATEST.search(text) and not reading.latest and (top is None or top[0] == 1):
        return Refusal(_no_bill_date(form, english))
    if reading.measure is None and reading.shape in ("aggregate", "group", "top") and lexicon.MONEY.search(text):
        return _which_amount(reading, forms, text, english)
    return reading


def _one_form(
    chosen: list[str], forms: list[FormMeta], terms: list[Term], mentions: list[list[Mention]], text: str, english: bool
) -> FormMeta | Ask | Refusal:
    """The form the question is read on, a question between the ones that fit equally, or the
    words the one chosen cannot honour."""
    if len(chosen) > 1:
        names = [f.name for f in forms if f.form_id in chosen]
        ask = "Which form do you mean?" if english else "您问的是哪张表单？"
        return Ask(ask + " " + " / ".join(names), names)
    form = _stocked(next(f for f in forms if f.form_id == chosen[0]), forms, mentions, text)
    unused = _unused(terms, form)
    # never for a count: which records of the other form are counted (仓库里有多少种物料) is not said
    if unused and not lexicon.COUNT.search(text) and (whole := _holding_all(terms, mentions, forms, form)):
        return whole  # 缺口最大的是哪个物料: 物料 is also a field of the form that holds 缺口
    if unused:
        return Refusal(_not_on_form(unused, form, forms, english))
    return form


def _unplaced(
    text: str, unknown: list[str], catalog: Catalog, today: date, prefer: str | None, retyped: bool, english: bool
) -> Outcome:
    """Words nothing explained: a typo read again (发漂 → 发票), an English data value (Shanghai →
    上海), a form the caller is not granted, or the words named back."""
    forms = catalog.forms
    fixes = [] if retyped else respelled(text, unknown, forms) or (romanized(unknown, catalog.rows) if english else [])
    if fixes:
        return _retyped(text, fixes, catalog, today, prefer, english)
    return _not_granted(text, catalog, english) or Refusal(_unknown_words(unknown, forms, english))


def _retyped(
    text: str, fixes: list[tuple[str, str]], catalog: Catalog, today: date, prefer: str | None, english: bool
) -> Outcome:
    """The question read again with its sound-alike typos mended (发漂 → 发票); a reading says so."""
    for typed, meant in fixes:
        text = text.replace(typed, meant)
    outcome = read(text, catalog, today, prefer, retyped=True, english=english)
    if isinstance(outcome, Reading):
        said = (
            ", ".join(f"“{t}” as “{m}”" for t, m in fixes) if english else "、".join(f"“{t}”按“{m}”" for t, m in fixes)
        )
        outcome.said.insert(0, f"(read {said})" if english else f"（{said}理解）")
    return outcome


def _spoken(
    text: str, today: date, forms: list[FormMeta]
) -> tuple[phrases.Period | None, list[phrases.Comparison], tuple[int, tuple[int, int]] | None, list[tuple[int, int]]]:
    """The period, the comparisons, the top-N and the latest phrase (最近那张, 最后一次: the
    shape's own words, never a record's), and the spans they take."""
    taken: list[tuple[int, int]] = []
    period = phrases.period_of(text, today)
    if period:
        taken.append(period.span)
    comps = [c for c in phrases.comparisons(text) if free(c.span, taken)]
    taken += [c.span for c in comps]
    top = phrases.top_n(text)
    if top and free(top[1], taken):
        taken.append(top[1])
    if (latest := lexicon.LATEST.search(text)) and free(latest.span(), taken):
        taken.append(latest.span())
    if (yes_no := lexicon.YES_NO.search(text)) and free(yes_no.span(), taken):
        taken.append(yes_no.span())  # 审核了没: asks, does not negate
    if (unpaid := lexicon.UNPAID.search(text)) and free(unpaid.span(), taken + _labels_in(text, forms)):
        taken.append(unpaid.span())  # read on the chosen form (_apply_unpaid), or named back there
    return period, comps, top, taken


def _labels_in(text: str, forms: list[FormMeta]) -> list[tuple[int, int]]:
    """Where a field's label is said whole (未收金额): words inside it are the label's, not a
    condition of their own (未收 there is no "unpaid")."""
    spans = []
    for label in {f.label for form in forms for f in form.fields if len(f.label) > 1}:
        at = text.find(label)
        if at >= 0:
            spans.append((at, at + len(label)))
    return spans


def _referred(terms: list[Term], forms: list[FormMeta]) -> list[Term]:
    """A question that names no form but a field referring to another form (上海有哪些客户: 客户
    is the sale's and the invoice's reference to the parties) names the form referred to: the
    customers are its records, not the sales' customer column."""
    if any(t.kind in ("name", "alias", "gapped") for t in terms):
        return []
    ids = {f.form_id for f in forms}
    out: dict[tuple[tuple[int, int], str], Term] = {}
    for t in terms:
        ref = t.target.ref if t.kind == "label" and isinstance(t.target, FieldMeta) else None
        if ref in ids and ref != t.form_id:
            out.setdefault((t.span, str(ref)), Term(t.text, t.span, str(ref), "alias"))
    return list(out.values())


def _left(text: str, taken: list[tuple[int, int]], forms: list[FormMeta]) -> list[tuple[int, int]]:
    """还剩 / 剩下 said where no form word explains it (联轴器还剩几个 on a product form holding its
    stock): the quantity the shape reads (``lexicon.REMAIN``), where a granted form holds one."""
    if not lexicon.REMAIN.search(text) or not any(quantity_field(f) for f in forms):
        return []
    return [m.span() for m in lexicon.LEFT.finditer(text) if free(m.span(), taken)]


def _owing(
    chosen: list[str], forms: list[FormMeta], text: str, terms: list[Term], mentions: list[list[Mention]]
) -> list[str]:
    """常州力拓欠我们多少 fits 销售发票, 收款单 and 应收账龄 alike by 客户: what is owed is read from
    the one form that holds a balance (未收余额), not asked about; 哪些发票没收款 names 销售发票, which
    holds no balance, and 应收账龄 (by its 发票号), which does: the unpaid ones are that form's."""
    if not chosen or not lexicon.OWED.search(text):
        return chosen

    def owes(f: FormMeta) -> bool:
        return (m := money_field(f, text)) is not None and m == owed_field(f)

    # 天府食品还欠我们多少钱 names a party: what it owes is on the one form of its records that holds a balance
    named = [t.form_id for t in terms] + [m.seen.form_id for group in mentions for m in group]
    pool = chosen if len(chosen) > 1 else [] if owes(_by_id(forms, chosen[0])) else named
    owing = [f.form_id for f in forms if f.form_id in pool and owes(f)]
    return owing if len(owing) == 1 else chosen


def _remaining(chosen: list[str], forms: list[FormMeta], text: str) -> list[str]:
    """6205-2RS还有多少个 fits the material, its stock and its safety-stock row alike: what is left is
    the stock, read from the one of them whose quantity is the stock (库存数量), not asked about."""
    if len(chosen) < 2 or not lexicon.REMAIN.search(text) or lexicon.OWED.search(text) or lexicon.MONEY.search(text):
        return chosen
    stock = _the_stock([_by_id(forms, f) for f in chosen])
    return [stock.form_id] if stock else chosen


def _by_id(forms: list[FormMeta], form_id: str) -> FormMeta:
    return next(f for f in forms if f.form_id == form_id)


def _no_bill_date(form: FormMeta, english: bool) -> str:
    if english:
        return f"{form.name} has no bill date to tell its latest record by; I can't answer that offline."
    return f"{form.name}没有单据日期，分不出最近的一条，离线规划器无法这样回答。"


def _stocked(form: FormMeta, forms: list[FormMeta], mentions: list[list[Mention]], text: str) -> FormMeta:
    """M0020还有几桶 names a material, and asks its stock: the one granted form with a stock
    quantity that holds the record, not the material master (which would answer with a row count)."""
    if not lexicon.REMAIN.search(text) or quantity_field(form) is not None:
        return form
    seen = {m.seen.form_id for group in mentions for m in group}
    return _the_stock([f for f in forms if f.form_id in seen]) or form


def _the_stock(candidates: list[FormMeta]) -> FormMeta | None:
    """The one form among ``candidates`` whose quantity is the stock (库存数量), if one is."""
    stocked = [f for f in candidates if (q := quantity_field(f)) is not None and says(q, "库存")]
    return stocked[0] if len(stocked) == 1 else None


def _which_amount(reading: Reading, forms: list[FormMeta], text: str, english: bool) -> Outcome:
    """An amount asked of a form that holds none (金额最大的5个客户 on 客户档案): the forms that
    hold one for that grouping, as a question; none: say so."""
    word = group_word(text)
    fits = [f.name for f in forms if money_field(f) and (not word or group_column(f, word))]
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


def _holding_all(
    terms: list[Term], mentions: list[list[Mention]], forms: list[FormMeta], chosen: FormMeta
) -> FormMeta | None:
    """The one other form whose own words explain every word the question's terms took, and
    which holds every record it names — where the form chosen by its name cannot honour them."""
    spans = {t.span for t in terms}
    fits = [
        f
        for f in forms
        if f.form_id != chosen.form_id
        and spans <= {t.span for t in terms if t.form_id == f.form_id}
        and all(any(m.seen.form_id == f.form_id for m in group) for group in mentions)
    ]
    return fits[0] if len(fits) == 1 else None


def _not_on_form(words: list[str], form: FormMeta, forms: list[FormMeta], english: bool) -> str:
    shown = ", ".join(words) if english else "、".join(f"“{w}”" for w in words)
    others = [f.name for f in forms if f.form_id != form.form_id]
    if english:
        return f"{form.name} has no {shown}; I can't answer that offline. Ask about one of your forms: {form.name}, {', '.join(others)}."
    return f"{form.name}里没有{shown}，离线规划器无法这样回答。可以询问的表单：{form.name}、{'、'.join(others)}。"


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
    comps: list[phrases.Comparison],
    bill_no: str | None,
    english: bool,
) -> Refusal | Ask | None:
    form = reading.form
    if not (bill_no and lexicon.YES_NO.search(text)):  # SO…审核了没: the bill and its state, not a filter
        _apply_options(reading, terms)
    if bill_no:
        flt = next((f for f in form.filters if f.column == "bill_no"), None)
        other = form.bill_prefix and not bill_no.upper().startswith(form.bill_prefix.upper())
        if flt is None or other:  # SO…这个订单发货了吗 on 发货单: a DN number filter never takes an SO
            return Refusal(_unknown_words([bill_no], [form], english))
        reading.filters[flt.name] = bill_no
        reading.said.append(f"{flt.label} = {bill_no}")
    many = bool(lexicon.MANY.search(text) or lexicon.SUM.search(text))  # 都有哪些, 一共: all the records named
    for group in mentions:
        problem = _apply_mention(reading, catalog, group, english, many)
        if problem is not None:
            return problem
    for c in comps:
        problem = _apply_comparison(reading, c, terms, english, text)
        if problem is not None:
            return problem
    if not comps:
        _apply_day_counts(reading, terms)
    if reading.period:
        _apply_period(reading, terms, english)
    return _apply_unpaid(reading, text, english)


def _apply_unpaid(reading: Reading, text: str, english: bool) -> Refusal | None:
    """没收完款的发票 / 还没付的应付: the rows whose balance is above zero; a form without a balance
    cannot say what is unpaid, and the words are named back."""
    said = lexicon.UNPAID.search(text)
    if said is None or not free(said.span(), _labels_in(text, [reading.form])):
        return None
    balance = owed_field(reading.form)
    if balance is None or balance.column not in reading.form.columns:
        return Refusal(_unknown_words([said[0]], [reading.form], english))
    reading.where.append((balance.column, ">", 0))
    reading.said.append(f"{balance.label} > 0")
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
        # the filter offering the option, else one taking that column's value as it is (业务员 赵强
        # is an option of the field; the filter takes salesman_id = sales03)
        flt = next((f for f in form.filters if f.column == column and f.options), None) or next(
            (f for f in form.filters if f.column == column and f.op == "eq" and f.type in ("text", "select")), None
        )
        label = dict(_options_of(form, column)).get(value, value)
        if flt is not None:
            reading.filters[flt.name] = value
        else:
            reading.where.append((column, "=", value))
        shown = f"{label}（{value}）" if flt is not None and not flt.options and label != value else label
        reading.said.append(f"{form.label_of(column)} = {shown}")


def _apply_day_counts(reading: Reading, terms: list[Term]) -> None:
    """A day-count filter named without a number (哪些应付已经超期了): overdue at all, ≥ 1."""
    form = reading.form
    for t in terms:
        if t.form_id != form.form_id or t.kind not in ("label", "alias"):
            continue
        for flt in form.filters:
            if flt.op != "gte" or flt.type != "integer" or "天" not in flt.label or flt.name in reading.filters:
                continue
            named = t.kind == "label" and t.target.column == flt.column
            # 逾期应收 names the form as its overdue rows: the alias holds the day filter's word
            if named or (
                t.kind == "alias" and any(len(w) > 1 and w in t.text for w in cores(form.label_of(flt.column)))
            ):
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
        if not names_record(m.column) and form.field(m.column) is not None:
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


def _apply_mention(
    reading: Reading, catalog: Catalog, group: list[Mention], english: bool, many: bool = False
) -> Refusal | Ask | None:
    form = reading.form
    own = [m for m in group if m.seen.form_id == form.form_id and _target(form, catalog, m)]
    usable = own or group  # the form's own rows say best what it can filter by
    # one record seen in several forms (客户档案 and 报价单) is one candidate, shown at its fullest
    records: dict[Any, list[tuple[tuple[str, str, str], Mention]]] = {}
    for m in usable:
        if (t := _target(form, catalog, m)) is not None:
            records.setdefault(identity(m) if names_record(m.column) else t[2], []).append((t, m))
    what = group[0].text
    if not records:
        if english:
            return Refusal(f"{form.name} cannot be filtered by “{what}”.")
        return Refusal(f"{form.name}无法按“{what}”筛选。")
    if len(records) > 1 and many and (shared := _shared_filter(form, catalog, group)) is not None:
        reading.filters[shared.name] = what  # 深沟球轴承都有哪些: every record whose name holds the words
        reading.said.append(f"{shared.label} 含 {what}")
        return None
    if len(records) > 1:
        shown = [max((option_of(w[1]) for w in ways), key=len) for ways in records.values()][:MAX_CANDIDATES]
        lead = f"“{what}” matches several records; which one?" if english else f"“{what}”对应多条记录，您指的是哪一个？"
        return Ask(lead + " " + " / ".join(shown), shown)
    ways = next(iter(records.values()))  # one record, maybe by several filters: by its name first
    ways.sort(key=lambda w: (w[0][0] == "", w[1].column not in ("name", w[0][1])))
    name, column, value = ways[0][0]
    row = ways[0][1].seen.values
    code = next((f for f in form.filters if f.op == "eq" and f.type == "text" and row.get(f.column)), None)
    if reading.chosen and code is not None and ways[0][1].seen.form_id == form.form_id:
        name, column, value = code.name, code.column, row[code.column]  # the one the user picked
    flt = next((f for f in form.filters if f.name == name), None)
    if flt is None:
        reading.where.append((column, "=", value))
        reading.said.append(f"{form.label_of(column)} = {value}")
        return None
    reading.filters[flt.name] = value
    named = row.get(ways[0][1].column, "")
    said = f"{named}（{value}）" if named and named != value and column.endswith("_id") else value
    reading.said.append(f"{flt.label} = {said}" if flt.op == "eq" else f"{flt.label} 含 {value}")
    return None


def _shared_filter(form: FormMeta, catalog: Catalog, group: list[Mention]) -> FilterMeta | None:
    """The one "contains" filter that takes the words every candidate record holds literally in
    the same column (深沟球轴承 in 物料名称): a list or a total of them all, not a question which."""
    ways = set()
    for m in group:
        value = m.seen.values.get(m.column, "")
        source = None if m.seen.form_id == form.form_id else catalog.form(m.seen.form_id)
        flt = _filter_for(form, m.column, source)
        if m.text.lower() not in value.lower() or flt is None or flt.op != "like":
            return None
        ways.add(flt)
    return ways.pop() if len(ways) == 1 else None


def _apply_comparison(
    reading: Reading, c: phrases.Comparison, terms: list[Term], english: bool, text: str
) -> Refusal | None:
    form = reading.form
    op_word = {">=": "≥", "<=": "≤", ">": ">", "<": "<"}[c.op]
    if c.unit == "天":
        # a day filter takes its bound as said (超期超过60天: 最少逾期天数 60, the ERP's own reading)
        way = "gte" if c.op.startswith(">") else "lte"
        flt = next((f for f in form.filters if f.type == "integer" and f.op == way and "天" in f.label), None)
        if flt is not None:
            reading.filters[flt.name] = int(c.value)
            reading.said.append(f"{flt.label} {'≥' if way == 'gte' else '≤'} {int(c.value)}")
            return None
        column = next((f.column for f in form.fields if "天" in f.label and f.numeric), None)
    else:
        labels = [
            t
            for t in terms
            if t.kind == "label" and t.form_id == form.form_id and isinstance(t.target, FieldMeta) and t.target.numeric
        ]
        money = money_field(form)
        column = labels[0].target.column if labels else (money.column if money else None)
        if labels and _TOTAL_OF.search(text[: labels[0].span[0]]) and column in form.columns:
            # 总库存低于10的物料: the total of each record's rows is compared, not each row
            reading.having.append((column, c.op, c.value))
            reading.said.append(f"{form.label_of(column)}合计 {op_word} {number_text(c.value)}")
            return None
    if column is None or column not in form.columns:
        what = c.phrase
        return Refusal(
            f"“{what}”: {form.name} has no such number." if english else f"“{what}”：{form.name}没有可比较的数值字段。"
        )
    reading.where.append((column, c.op, c.value))
    reading.said.append(f"{form.label_of(column)} {op_word} {number_text(c.value)}")
    return None


_TOTAL_OF = re.compile(r"(?:总|合计|加起来|一共|total)\s*$", re.I)


def _apply_period(reading: Reading, terms: list[Term], english: bool) -> None:
    """The period on the date the question names (本月到期的发票: the due date, up to the month's
    end), else on the form's first date filter (its bill date), else on its first date field."""
    form, period = reading.form, reading.period
    assert period is not None
    named = next(
        (t.target.column for t in terms if t.form_id == form.form_id and t.kind == "label" and t.target.type == "date"),
        None,
    )
    if named is not None:
        period = reading.period = period.ahead()
    start = next((f for f in form.filters if f.type == "date" and f.op == "gte" and named in (None, f.column)), None)
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
    column = named or next((f.column for f in form.fields if f.type == "date"), None)
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


def _not_granted(text: str, catalog: Catalog, english: bool) -> Refusal | None:
    """A question the reader cannot place that names a form the caller is not granted (销售发票 to a
    salesperson): said as that, by the form's name only. Asked only where the question would
    otherwise be "not understood", from the form's card (its name and aliases), before any data is
    read: the answer is the same whether or not the form holds a matching record."""
    if not catalog.denied:
        return None
    granted = {t.span for t in find_terms(text, catalog.forms, []) if t.kind in ("name", "alias")}
    named = [t for t in find_terms(text, catalog.denied, []) if t.kind in ("name", "alias") and t.span not in granted]
    return _refused([t.form_id for t in named], catalog, english) if named else None


def _denied_named(text: str, catalog: Catalog, terms: list[Term], english: bool) -> Refusal | None:
    """上个月销售订单金额合计 to finance, who reads 销售发票 but not 销售订单: a form the caller is not
    granted, named by its name where no granted form is named (its word may be a granted form's
    field: 销售订单号 on an invoice) — said as not granted, never read on the form holding that field.
    发票的销售订单号 names the invoices, and is theirs."""
    if not catalog.denied:
        return None
    own = [t.span for t in terms if t.kind in ("name", "alias")]
    named = [
        t
        for t in find_terms(text, catalog.denied, [])
        if t.kind == "name" and not any(a <= t.span[0] and t.span[1] <= b for a, b in own)
    ]
    if not named or any(not any(_overlap(s, t.span) for t in named) for s in own):
        return None
    return _refused([t.form_id for t in named], catalog, english)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _refused(form_ids: list[str], catalog: Catalog, english: bool) -> Refusal:
    names = list(dict.fromkeys(f.name for i in form_ids for f in catalog.denied if f.form_id == i))
    if english:
        return Refusal(f"You are not granted the form {' / '.join(names)}.", "not_granted")
    return Refusal(f"您没有{'、'.join(names)}的权限。", "not_granted")


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
