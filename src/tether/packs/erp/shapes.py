"""The shape of a read question: list, count, one field, sum / average / max / min, group-by,
top-N — from the words around the metadata's (一共, 平均, 按客户汇总, 金额最大的5个, 哪个…最高)."""

from __future__ import annotations

import re

from tether.pack import phrases
from tether.packs.erp import lexicon
from tether.packs.erp.metadata import KEY_COLUMNS, FieldMeta, FormMeta
from tether.packs.erp.readings import Reading
from tether.packs.erp.wording import Term, cores


def says(f: FieldMeta, word: str) -> bool:
    """Whether the field's label, in any of the ERP's languages, holds ``word``."""
    return any(word in label for label in (f.label, *f.aliases))


def owed_field(form: FormMeta) -> FieldMeta | None:
    """The number of what is still owed: its label says a balance (未收余额) or unpaid (未收金额)."""
    numeric = [f for f in form.fields if f.numeric]
    return next((f for f in numeric if says(f, "余额")), None) or next(
        (f for f in numeric if any(lexicon.UNPAID.search(label) for label in (f.label, *f.aliases))), None
    )


def money_field(form: FormMeta, text: str = "") -> FieldMeta | None:
    """The form's amount: its total, or what is still owed when the question asks that."""
    numeric = [f for f in form.fields if f.numeric]
    if (lexicon.OWED.search(text) or _named_as_owed(form, text)) and (owed := owed_field(form)) is not None:
        return owed
    for word in ("合计", "金额", "余额"):
        hit = next((f for f in numeric if says(f, word) and not says(f, "不含税")), None)
        if hit:
            return hit
    return price_field(form) if lexicon.PRICE.search(text) else None


def _named_as_owed(form: FormMeta, text: str) -> bool:
    """逾期应收最多的客户 / 应付有多少: a form named as what is owed (应收, 应付账款, 欠款) — its
    amount is the balance, not the bills' totals."""
    return any(w in text and re.search(r"应收|应付|欠", w) for w in (form.name, *form.aliases))


def price_field(form: FormMeta) -> FieldMeta | None:
    """The form's unit price (单价), else a number whose label says 价: what one unit costs."""
    numeric = [f for f in form.fields if f.numeric]
    return next((f for f in numeric if says(f, "单价")), None) or next((f for f in numeric if says(f, "价")), None)


def quantity_field(form: FormMeta) -> FieldMeta | None:
    """The form's quantity (库存数量, 现存量): a number whose label says 量."""
    return next((f for f in form.fields if f.numeric and says(f, "量")), None)


def date_field(form: FormMeta) -> FieldMeta | None:
    """The date a record is ordered by: its bill date filter's column, else its first date field —
    never a due date (the newest payable is not the one due last)."""
    dated = [f for f in form.fields if f.type == "date" and "到期" not in f.label]
    column = next((f.column for f in form.filters if f.type == "date"), None)
    return next((f for f in dated if f.column == column), None) or next(iter(dated), None)


def _latest(reading: Reading, text: str, terms: list[Term], top: int | None) -> bool:
    """最近一张报价单多少钱: the newest record (by its date) and what was asked of it, never the sum of all."""
    if top not in (None, 1) or not lexicon.LATEST.search(text):
        return False
    when = date_field(reading.form)
    if when is None:
        return False
    form = reading.form
    asked = [
        t.target for t in terms if t.form_id == form.form_id and t.kind == "label" and isinstance(t.target, FieldMeta)
    ]
    money = money_field(form, text) if lexicon.MONEY.search(text) or lexicon.HOW_MUCH.search(text) else None
    # 最后一次出库什么时候: the newest by the date asked (最近出库), not by another date of the row
    when = next((f for f in asked if f.type == "date"), when)
    reading.shape, reading.top, reading.measure, reading.latest = "top", 1, when, True
    reading.asked = list(dict.fromkeys([*asked, *([money] if money else [])]))
    return True


def group_word(text: str) -> str | None:
    """The word a question groups or ranks by: 按客户汇总 → 客户; 金额最大的5个客户 → 个客户."""
    if group := lexicon.GROUP.search(text):
        return group.group("a") or group.group("b") or group.group("c") or group.group("d")
    if top := phrases.top_n(text):
        return text[top[1][1] - 2 : top[1][1] + 6]
    return None


def shape(reading: Reading, text: str, residual: str, terms: list[Term], top: int | None) -> None:
    form = reading.form
    own_labels = [t for t in terms if t.form_id == form.form_id and t.kind == "label"]
    numeric = _numbers_named(reading, own_labels)
    if _latest(reading, text, terms, top):
        return
    if _grouped(reading, text, residual, numeric, top):
        return
    named = {t.span for t in terms if t.form_id == form.form_id and t.kind in ("name", "alias")}
    if _unit_price(reading, text, residual):
        return
    quantity = next((f for f in numeric if "量" in f.label), None) or quantity_field(form)
    if quantity is not None and lexicon.REMAIN.search(text) and not lexicon.KINDS.search(text):
        # 还剩几个 / 库存多少: the sum of the quantity, with the rows it adds up beside it
        reading.shape, reading.agg, reading.measure, reading.beside = "aggregate", "sum", quantity, True
        return
    if (counted := _units_of(reading, numeric, residual)) is not None:
        # 骨架油封缺口多少个: the named number's value (its sum over the rows), never a row count
        reading.shape, reading.agg, reading.measure, reading.beside = "aggregate", "sum", counted, True
        return
    if _counted(reading, text, residual, numeric, own_labels, named):
        return
    if _which_is_extreme(reading, text, residual, numeric):
        return
    quantity = numeric[0] if numeric else quantity_field(form)
    if lexicon.REMAIN.search(text) and quantity is not None:
        reading.shape, reading.agg, reading.measure = "aggregate", "sum", quantity
        return
    if _aggregate(reading, text, residual, numeric):
        return
    asked = [  # 供应商 names the form, not its code and name fields
        t.target
        for t in own_labels
        if isinstance(t.target, FieldMeta) and t.target.column not in _filtered_columns(reading) and t.span not in named
    ]
    if asked and reading.filters and (lexicon.ASKS_VALUE.search(residual) or _bare(residual)):
        reading.shape, reading.asked = "field", list(dict.fromkeys(asked))
        return
    if numeric and lexicon.SUM.search(residual):
        reading.shape, reading.agg, reading.measure = "aggregate", "sum", numeric[0]
        return
    money = money_field(form, text) if lexicon.MONEY.search(text) or _how_much(residual) else None
    money = money or next((f for f in numeric if f.type == "number" and not _is_filtered(reading, f)), None)
    if money is not None:  # 报价单和金额, 所有报价单的含税合计是多少: a list of amounts carries their total
        reading.measure, reading.beside = money, True


def _grouped(reading: Reading, text: str, residual: str, numeric: list[FieldMeta], top: int | None) -> bool:
    """A total compared per record (总库存低于10的物料), a top-N, or a group-by."""
    form = reading.form
    grouped = group_column(form, group_word(text))
    if reading.having:  # 总库存低于10的物料: the records (物料) whose rows add up below 10
        reading.shape, reading.group = "group", grouped or group_column(form, text)
        reading.measure = form.field(reading.having[0][0])
        return True
    if not (top or grouped):
        return False
    reading.shape, reading.top, reading.group = ("top" if top else "group"), top, grouped
    if top:
        reading.ascending = bool(lexicon.MIN.search(residual)) and not lexicon.MAX.search(residual)
    reading.measure = numeric[0] if numeric else (money_field(form, text) or _stock_measure(form, text))
    return True


def _numbers_named(reading: Reading, own_labels: list[Term]) -> list[FieldMeta]:
    """The numbers the question names that no filter or comparison took (逾期的应收最多: 逾期 is a
    filter there, not the number ranked)."""
    compared = {column for column, _, _ in reading.where}
    fields = [t.target for t in own_labels if isinstance(t.target, FieldMeta) and t.target.numeric]
    return [f for f in fields if not _is_filtered(reading, f) and f.column not in compared]


def _counted(
    reading: Reading,
    text: str,
    residual: str,
    numeric: list[FieldMeta],
    own_labels: list[Term],
    named: set[tuple[int, int]],
) -> bool:
    """A question with a count in it: the count, the rows beside it, or the sum it comes with."""
    counts = lexicon.COUNT.search(residual) is not None
    if counts and _EACH_ONE.search(residual):
        return True  # 一共有几种规格，分别是啥: the records listed, with how many there are
    if (summed := _units_summed(reading, residual)) is not None:
        # 成品仓里深沟球轴承加起来一共多少个: the stock's quantity added up, not its rows counted
        reading.shape, reading.agg, reading.measure, reading.beside = "aggregate", "sum", summed, True
        return True
    if counts and (total := _total_too(reading, text, residual, numeric)) is not None:
        # 这个月开了几张发票，金额多少: the sum, which says how many records it adds up
        reading.shape, reading.agg, reading.measure = "aggregate", "sum", total
        return True
    if counts:
        reading.shape = "count"
        reading.distinct = _counted_field(reading, own_labels, named)
    return counts


def _total_too(reading: Reading, text: str, residual: str, numeric: list[FieldMeta]) -> FieldMeta | None:
    """The amount a count is asked with (几张单，合计多少 / 价税合计多少): the number named, else the
    form's amount — where the question asks a sum or how much beside the count."""
    rest = _COUNTED.sub("", residual)
    asked = lexicon.SUM.search(rest) or lexicon.HOW_MUCH.search(text) or lexicon.MONEY.search(rest)
    if not (asked or (numeric and _how_much(rest))):  # 价税合计多少: a number named, asked how much
        return None
    return next(iter(numeric), None) or money_field(reading.form, text)


# the records themselves asked beside their count (分别是啥, 都有哪些, 是哪些)
_EACH_ONE = re.compile(r"分别是|分别有|各是|都是(?:什么|啥|哪)|是哪些|有哪些|都有哪|which (?:are|ones)", re.I)
# a count in units with nothing after it (加起来一共多少个), not of a thing named (多少个仓库: □)
_UNITS_ALONE = re.compile(r"(?:多少|几)\s*(?:个|台|件|只|根|套|米|公斤|吨|桶|盒|pcs)(?!\s*□)", re.I)


def _units_summed(reading: Reading, residual: str) -> FieldMeta | None:
    """The quantity added up where the question sums (加起来, 一共) a count in units on a form that
    holds a quantity — the pieces, not the rows."""
    if not (lexicon.SUM.search(residual) and _UNITS_ALONE.search(residual)):
        return None
    return quantity_field(reading.form)


# a count with the words that lead it (一共下了几个订单 asks how many, not a sum)
_COUNTED = re.compile(rf"(?:一共|总共|共计|总计|累计|in total)?[^，。,?？\s]{{0,3}}?(?:{lexicon.COUNT.pattern})", re.I)


def _how_much(residual: str) -> bool:
    """还没付的应付有多少: an amount asked of a list — its total, with the rows."""
    return bool(re.search(r"多少(?!\s*[个张条家笔单位种份名项次批])|how much", residual, re.I))


_UNITS = re.compile(r"(?:多少|几)\s*(?:个|台|件|只|根|套|米|公斤|吨|pcs)", re.I)


def _units_of(reading: Reading, numeric: list[FieldMeta], residual: str) -> FieldMeta | None:
    """The number a question names (no filter took it) and counts in units (缺口多少个, 在途数量几台):
    that number, not the count of rows."""
    return next(iter(numeric), None) if _UNITS.search(residual) else None


def _is_filtered(reading: Reading, f: FieldMeta) -> bool:
    return f.column in _filtered_columns(reading)


def _aggregate(reading: Reading, text: str, residual: str, numeric: list[FieldMeta]) -> bool:
    """平均 / 最高 / 最低 / 一共 (or 多少钱) of the named number or the form's amount."""
    for agg, pattern in (("avg", lexicon.AVG), ("max", lexicon.MAX), ("min", lexicon.MIN), ("sum", lexicon.SUM)):
        said = pattern.search(residual) or (agg == "sum" and lexicon.HOW_MUCH.search(text))
        if said and (numeric or lexicon.MONEY.search(text) or lexicon.OWED.search(text)):
            reading.measure = numeric[0] if numeric else money_field(reading.form, text)
            reading.shape, reading.agg = "aggregate", agg
            # 列出…和合计: the total with the rows it adds up beside it — never the total alone
            reading.beside = agg == "sum" and bool(lexicon.LISTED.search(text))
            return True
    return False


def _unit_price(reading: Reading, text: str, residual: str) -> bool:
    """伺服电机多少钱一台: the record's unit price, never a sum (on a form that holds no amount)."""
    form = reading.form
    price = price_field(form) if lexicon.PER_UNIT.search(text) and money_field(form) is None else None
    if price is None or not reading.filters or lexicon.SUM.search(residual) or lexicon.MANY.search(text):
        return False
    reading.shape, reading.asked = "field", [price]
    return True


def _bare(residual: str) -> bool:
    """天津北辰电话 / M0010单位 / address of 沈阳联众: a record and a field, nothing else — the field
    of that record is asked, as a noun phrase without a question word."""
    left = re.sub(r"[□的\s]", "", residual)
    return not left or (left.isascii() and not lexicon.FILLER_RE.sub("", residual).strip("□ "))


def _stock_measure(form: FormMeta, text: str) -> FieldMeta | None:
    """库存最多的5个物料 / 各仓库分别有多少: the quantity, where the question names the stock."""
    return quantity_field(form) if lexicon.REMAIN.search(text) or "库存" in text or "多少" in text else None


def _counted_field(reading: Reading, own_labels: list[Term], named: set[tuple[int, int]]) -> FieldMeta | None:
    """一共有几个仓库 over the stock ledger counts its warehouses, not its rows: the one text field
    the question names that is neither the form itself nor a filter it applied."""
    filtered = _filtered_columns(reading) | {column for column, _, _ in reading.where}
    fields = {
        t.target.column: t.target
        for t in own_labels
        if isinstance(t.target, FieldMeta)
        and not t.target.numeric
        and t.target.type in ("text", "select")
        and t.target.column not in filtered
        and t.span not in named
    }
    return next(iter(fields.values())) if len(fields) == 1 else None


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
    measure = numeric[0] if numeric else (money_field(reading.form, text) or _stock_measure(reading.form, text))
    column = group_column(reading.form, word)
    if measure is None:  # 哪个业务员负责的客户最多: the group with the most records
        if column is None or column in KEY_COLUMNS or lexicon.MONEY.search(text):
            return False
        reading.shape, reading.top, reading.group, reading.ascending = "top", 1, column, smallest
        return True
    reading.shape, reading.top, reading.measure, reading.ascending = "top", 1, measure, smallest
    reading.group = None if column in KEY_COLUMNS else column
    return True


def _filtered_columns(reading: Reading) -> set[str]:
    names = set(reading.filters)
    return {f.column for f in reading.form.filters if f.name in names}


def group_column(form: FormMeta, word: str | None) -> str | None:
    """The column a group-by word names (客户 → customer_name, via the filter labelled 客户名称); an
    id column by the name beside it in the view (warehouse_id → warehouse_name)."""
    column = _group_column(form, word)
    if column and column.endswith("_id") and f"{column[:-3]}_name" in form.columns:
        return f"{column[:-3]}_name"
    return column


def _group_column(form: FormMeta, word: str | None) -> str | None:
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
    return [c for c in cores(label) if len(c) >= 2]
