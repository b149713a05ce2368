"""The offline reader of change requests: a clerk's write (删掉 / 审一下 / 转成订单 / 交期改到20天 /
给恒达做个报价) read from the ERP's own metadata — the bill number's prefix names the form, the
form's field labels (and its lines' fields) name what changes, the forms' names and aliases name
the bill to generate, the customer and materials are found among the records the caller can see.

The result is always a ``Proposal`` (``propose_write`` arguments: the person sees the diff and
confirms), an ``Ask``, or a ``Refusal`` saying which word it did not understand — never a guess:
a wrong proposal is worse than "I can't do that offline". ``None``: not a change request.
"""

from __future__ import annotations

import re
from typing import Any

from tether.pack import phrases
from tether.packs.erp import lexicon
from tether.packs.erp.metadata import Catalog, FieldMeta, FormMeta
from tether.packs.erp.new_bills import create_bill, named_forms
from tether.packs.erp.readings import Ask, Outcome, Proposal, Refusal
from tether.packs.erp.schema import named_by_label
from tether.packs.erp.wording import CJK

BILL = re.compile(r"(?<![A-Za-z0-9])([A-Za-z]{2})(\d{6}-\d{4})(?![0-9])")
_QUOTES = "\"'“”‘’「」『』"
_END = re.compile(r"[\s。！!？?，,；;吧啊呀]+$")
_NUMBER = re.compile(
    r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?:天|日|元|块|个|台|件|套|%|days?|pcs?|yuan)?\s*$",
    re.I,
)


def _op(text: str) -> tuple[str, re.Match[str]] | None:
    """The first change verb of the request (its op and where it is)."""
    found = [(m.start(), op, m) for op, verb in lexicon.WRITE_VERBS.items() if (m := verb.search(text))]
    if not found:
        return None
    _, op, match = min(found, key=lambda f: f[0])
    return op, match


def read_change(question: str, catalog: Catalog, prefer: str | None = None) -> Outcome | None:
    """A change request read into a proposal, a question or a refusal; ``None``: not one."""
    text = question.strip().translate(str.maketrans("０１２３４５６７８９", "0123456789"))
    english = not CJK.search(text)
    if lexicon.ASK_WORDS.search(text) or (lexicon.ASK_MARKS.search(text) and not lexicon.POLITE.search(text)):
        return None  # 审核了吗 / has it been approved: a question about the bill, the reader's
    op = _op(text)
    bill = BILL.search(text)
    if op is None and bill is not None and lexicon.NEGATED.search(text):
        return _cannot(english)  # 反审核<单号>: an op undone, which it does not propose
    if op is None:
        return None
    if bill is None and (record := _by_id(text, catalog)) is not None:
        form, at = record
        return _change_of_record(text, op, at, at[1] or at[2], form, catalog, english, prefer)
    if bill is None:
        if op[0] == "create":
            return create_bill(text, op[1], catalog, english, prefer)
        return None  # 删除的单据有哪些: no bill named, not a change of one
    return _change_of_bill(text, op, bill, catalog, english, prefer)


# a record of a form without bill numbers of its own pattern, as Tryton names a draft sale: (12)
_BY_ID = re.compile(r"[（(]\s*(\d{1,9})\s*[)）]|#\s*(\d{1,9})(?![0-9])")


def _by_id(text: str, catalog: Catalog) -> tuple[FormMeta, re.Match[str]] | None:
    """The writable bill form without a bill prefix a record named by its id belongs to (the form
    named right before it, else the only such form), and where the id is. The demo ERP's bills all
    have prefixes: none is named so there."""
    at = _BY_ID.search(text)
    if at is None:
        return None
    forms = [f for f in catalog.forms if f.writable and f.details and not f.bill_prefix]  # bills, not master data
    named = _form_said_before(text[: at.start()], forms) or forms
    return (named[0], at) if len(named) == 1 else None


def _change_of_bill(
    text: str,
    op: tuple[str, re.Match[str]],
    bill: re.Match[str],
    catalog: Catalog,
    english: bool,
    prefer: str | None,
) -> Outcome | None:
    command = text[: op[1].end()] if op[0] == "update" else text  # not the new value (备注改成不要删除)
    if lexicon.NEGATED.search(command):
        return _cannot(english)
    if len({b.group(0).upper() for b in BILL.finditer(text)}) > 1:
        if english:
            return Refusal("One bill at a time, please: I propose a change to one bill per request.")
        return Refusal("请一次只说一张单据：离线规划器每次只提议修改一张单据。")
    bill_no = (bill[1] + bill[2]).upper()
    form = next((f for f in catalog.forms if (f.bill_prefix or "").upper() == bill[1].upper()), None)
    if form is None:
        if english:
            return Refusal(f"None of your forms has bills numbered like {bill_no}; I can't change it offline.")
        return Refusal(f"您的表单里没有单号形如 {bill_no} 的单据，离线规划器无法修改它。")
    named = _form_said_before(text[: bill.start()], catalog.forms)
    if op[0] != "generate" and named and form not in named:
        other = "、".join(f.name for f in named)
        if english:
            return Refusal(f"{bill_no} is a {form.name}, not a {other}; which did you mean?")
        return Refusal(f"{bill_no} 是{form.name}，不是{other}。请核对单号。")
    return _change_of_record(text, op, bill, bill_no, form, catalog, english, prefer)


def _change_of_record(
    text: str,
    op: tuple[str, re.Match[str]],
    bill: re.Match[str],
    bill_no: str,
    form: FormMeta,
    catalog: Catalog,
    english: bool,
    prefer: str | None,
) -> Outcome | None:
    """The op on one record of ``form`` (``bill``: where the text names it, ``bill_no`` its key)."""
    if bill_no.isdigit() and lexicon.NEGATED.search(text[: op[1].end()] if op[0] == "update" else text):
        return _cannot(english)
    if op[0] in ("delete", "examine"):
        if op[0] == "examine" and not form.examinable:
            return Refusal(f"{form.name} is not examined." if english else f"{form.name}没有审核这一步。")
        return Proposal({"form_id": form.form_id, "op": op[0], "record_id": bill_no})
    if op[0] == "generate":
        return _generate(text, op[1], form, bill_no, catalog, english, prefer)
    if op[0] == "update":
        return _update(text, op[1], form, bill, bill_no, english, prefer)
    return None


def _cannot(english: bool) -> Refusal:
    if english:
        return Refusal(
            "I can't do that offline: I propose only deletes, examines, generates, updates and new quotations."
        )
    return Refusal("离线规划器不能这样操作：只能提议删除、审核、生成下游单据、修改字段和新建报价。")


def _form_said_before(before: str, forms: list[FormMeta]) -> list[FormMeta]:
    """The forms named right before the bill number (审核销售订单<单号>, quotation <no>)."""
    before = re.sub(r"[\s的:：]+$", "", before).lower()
    hits = [(len(w), f) for f in forms for w in (f.name, *f.aliases) if len(w) >= 2 and before.endswith(w.lower())]
    longest = max((n for n, _ in hits), default=0)
    return [f for n, f in hits if n == longest]


def _generate(
    text: str, verb: re.Match[str], form: FormMeta, bill_no: str, catalog: Catalog, english: bool, prefer: str | None
) -> Outcome:
    after = text[verb.end() :]
    targets = [f for f in named_forms(after, catalog.forms) if f.form_id != form.form_id and f.bill_prefix]
    if prefer:
        targets = [f for f in targets if f.name == prefer] or targets
    if not targets:
        names = "、".join(f.name for f in catalog.forms if f.bill_prefix and f.form_id != form.form_id)
        if english:
            return Refusal(f"Which bill should {bill_no} become? I did not understand “{after.strip()}”.")
        return Refusal(f"没有理解要由 {bill_no} 生成哪种单据（“{after.strip()}”）。可以生成的单据：{names}。")
    if len(targets) > 1:
        options = [f.name for f in targets]
        lead = "Which bill do you mean?" if english else "要生成哪种单据？"
        return Ask(lead + " " + " / ".join(options), options)
    source = {"formId": form.form_id, "billId": bill_no}
    return Proposal({"form_id": targets[0].form_id, "op": "generate", "source_ref": source})


# 第1行的单价 / 明细第2行单价 / line 1's price / the price of line 1
_LINE = re.compile(r"(?:明细)?第\s*(\d{1,3})\s*行的?|(?:the\s+)?line\s*(\d{1,3})(?:'s)?", re.I)
_MATERIAL_LINE = re.compile(r"^(?:明细(?:中|里)?)?(?P<code>[A-Za-z]\d{3,}[A-Za-z0-9-]*)\s*的?(?P<field>.+)$")
_SEPARATOR = re.compile(r"\bto\b|为", re.I)  # the field … to / 为 the value, after a leading verb
_EN_OF = re.compile(r"^(?:the\s+)?(?P<field>.+?)\s+(?:of|on|in|for)\s*(?:the\s+)?(?:\w+\s+)?$", re.I)


def _said_field(text: str, verb: re.Match[str], bill: re.Match[str]) -> tuple[str, int | None, str | None]:
    """The words naming the field, and the line (its number, or its material's code) if any."""
    if verb.start() >= bill.end():  # 把报价单<单号>的交期改成15 / <单号>交期改到20天
        said = text[bill.end() : verb.start()]
    else:  # change the remark of quotation <no> to … / set <no>'s remark to … / 修改<单号>的交期为20天
        said = text[verb.end() : bill.start()]
        if m := _EN_OF.match(said.strip() + " "):
            said = m["field"]
        if not said.strip():
            said = re.split(_SEPARATOR, text[bill.end() :], maxsplit=1)[0]
    said = re.sub(r"^(?:\s|的|里的|中的|里|'s\b)+|[\s的']+$", "", said).strip()
    if m := _LINE.search(said):
        said = (said[: m.start()] + said[m.end() :]).strip(" 的")
        return re.sub(r"^(?:the\s+)?|\s+(?:of|on|in)$", "", said, flags=re.I).strip(), int(m[1] or m[2]), None
    if m := _MATERIAL_LINE.match(said):
        return m["field"].strip(), None, m["code"].upper()
    return said, None, None


def _update(
    text: str,
    verb: re.Match[str],
    form: FormMeta,
    bill: re.Match[str],
    bill_no: str,
    english: bool,
    prefer: str | None = None,
) -> Outcome:
    said, line_no, material = _said_field(text, verb, bill)
    said = _without_fillers(said, form)
    value_text = _value_after(text, verb, bill)
    on_line = line_no is not None or material is not None
    fields = form.details if on_line else form.fields
    named = _fields(said, fields)
    if len(named) > 1:  # 交期 for 交期(天) and 交期(周): the person says which
        options = [f.label for f in named]
        if prefer not in options:
            lead = f"Which field is “{said}”?" if english else f"“{said}”对应多个字段，您指的是哪一个？"
            return Ask(lead + " " + " / ".join(options), options)
        named = [f for f in named if f.label == prefer]
    field = named[0] if named else None
    if field is None and not on_line and _fields(said, form.details):
        if english:
            return Refusal(f"Which line's {said}? Say e.g. “line 1's {said}” or the material code.")
        return Refusal(f"要改哪一行的{said}？请说明行号（如“第1行的{said}”）或物料编码。")
    where = "line" if line_no is not None else form.name
    if field is None:
        known = "、".join(f.label for f in fields if not f.read_only)
        if english:
            return Refusal(f"I did not understand which field of {where} “{said}” is; the fields: {known}.")
        return Refusal(f"没有理解“{said}”是{form.name}{'明细' if line_no else ''}的哪个字段。可以修改的字段：{known}。")
    if field.read_only:
        return Refusal(
            f"{field.label} is computed, not changed." if english else f"{field.label}是计算得出的，不能直接修改。"
        )
    value = _value(value_text, field)
    if value is None:
        if english:
            return Refusal(f"I did not understand the new {field.label}: “{value_text}”.")
        return Refusal(f"没有理解{field.label}的新值：“{value_text}”。")
    payload: dict[str, Any] = {field.column: value}
    if line_no is not None:
        payload = {"details": [{"line_no": line_no, field.column: value}]}
    elif material is not None:
        payload = {"details": [{"material_id": material, field.column: value}]}
    return Proposal({"form_id": form.form_id, "op": "update", "record_id": bill_no, "payload": payload})


_FILLER_LEAD = re.compile(r"^(?:这张|那张|这个|那个|这份|那份|这单|那单|该|此|单子|单据|的|里的|中的|上的|里|上)+")
_FILLER_TAIL = re.compile(r"(?:改一下|修改一下|改下|改改|一下|麻烦|帮忙|[，,、\s])+$")


def _without_fillers(said: str, form: FormMeta) -> str:
    """The field's words without those that point at the bill (那个, 这张单子的, 报价单的) or soften the
    verb (改一下，改成…): 把QT…的那个交期改成30天 names 交期."""
    names = sorted((w for w in (form.name, *form.aliases) if len(w) >= 2), key=len, reverse=True)
    bill_words = re.compile("^(?:" + "|".join(map(re.escape, names)) + ")") if names else None
    before = None
    while before != said:
        before = said
        said = _FILLER_TAIL.sub("", _FILLER_LEAD.sub("", said)).strip()
        if bill_words is not None and (rest := bill_words.sub("", said)).strip():
            said = rest
    return said


def _value_after(text: str, verb: re.Match[str], bill: re.Match[str]) -> str:
    rest = text[verb.end() :]
    if verb.start() < bill.start():  # change … <bill> to <value> / 修改<单号>的交期为<值>
        parts = re.split(_SEPARATOR, text[bill.end() :], maxsplit=1)
        rest = parts[1] if len(parts) > 1 else ""
    rest = _END.sub("", rest.strip())
    return rest.strip().strip(_QUOTES).strip()


def _fields(said: str, fields: tuple[FieldMeta, ...]) -> list[FieldMeta]:
    """The fields a clerk's words name: a label, a synonym, the column, the label without its unit
    (交期 for 交期(天)). Several: neither is guessed, the reader asks."""
    word = lexicon.FIELD_SYNONYMS.get(said.lower(), said)
    key = word.lower().replace(" ", "_")
    exact = [f for f in fields if f.label == word or key == f.column.lower()]
    return exact or named_by_label(word, fields, lambda f: f.label)


def _value(raw: str, field: FieldMeta) -> Any:
    if not raw or "${" in raw:
        return None  # nothing said, or a template: a value is text, never a reference
    if field.numeric:
        m = _NUMBER.match(phrases.arabic(raw))
        if m is None:
            return None
        number = float(m["n"])
        return int(number) if field.type == "integer" or number.is_integer() else number
    if field.options:
        return next((v for v, label in field.options if raw in (v, label)), None)
    if field.type == "date":
        return raw if re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw) else None
    if field.type == "ref":
        return None  # a record by name: the form's own collect/propose path resolves those
    return raw
