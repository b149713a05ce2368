"""A new bill with its lines, read from a clerk's words: 帮嘉兴金泰开张报价单，深沟球轴承6205 50个，每个18块 /
嘉兴金泰要2000个圆锥滚子轴承30205，单价46，做张报价单 / 来一张报价单：恒达，M0004 3台，1350一台 / quote X
for 5 pcs of M0003 at 45 each.

The customer is found among the customers the caller can see (a name or short name said whole,
else the words around the verb: 给/帮<客户>开…, <客户>要…, 报价单给<客户>), the materials by code, or
by name narrowed by part of the spec (深沟球轴承6205 is the 6205-2RS one), the quantity by its unit,
the price by 单价/每个/一台/块/元/at. What it cannot finish — a customer or material it did not find,
a quantity not said, a word it cannot place — is never guessed: it falls back to the form
(``FormFill``), prefilled with what it did understand, for the person to complete.
"""

from __future__ import annotations

import re
from typing import Any

from tether.pack import phrases
from tether.packs.erp import lexicon
from tether.packs.erp.metadata import Catalog, FieldMeta, FormMeta, Seen
from tether.packs.erp.readings import Ask, FormFill, Outcome, Proposal

_UNIT = r"(?:台|个|件|套|只|根|米|张|片|盒|吨|桶|公斤|条|pcs?|pieces?|units?)"
_MONEY = r"(?:元|块钱|块|yuan|rmb)"
_PRICE_EACH = re.compile(
    rf"(\d+(?:\.\d+)?)\s*{_MONEY}?\s*(?:一|每|/|per\s*|a\s*){_UNIT}|"
    rf"(?:at|@)\s*(\d+(?:\.\d+)?)\s*{_MONEY}?\s*(?:each|apiece|/\s*pc)?|"
    rf"(?:单价|价格|价钱|每{_UNIT}|each|price)\s*(?:是|为|:|：)?\s*(\d+(?:\.\d+)?)\s*{_MONEY}?",
    re.I,
)
_QTY = re.compile(
    rf"(\d+(?:\.\d+)?)\s*{_UNIT}(?:\s*of\b)?|(?:数量|qty)\s*[:：]?\s*(\d+(?:\.\d+)?)",
    re.I,
)
_NAME = r"[^\s，,：:；;。、的]{2,24}?"
# the words around the verb that name the customer, tried in order; each is checked against the
# customers the caller can see
_CUSTOMER_SAID = (
    re.compile(rf"(?:帮我|帮忙|麻烦|请)?(?:给|帮|为|替)(?:客户)?(?P<w>{_NAME})(?:做|开|出|报|新建|建|来|要|拟)"),
    re.compile(rf"报价单?\s*(?:给|[：:，,\s]+(?:给)?)\s*(?:客户)?(?P<w>{_NAME})(?=$|[\s，,：:；;。]|[A-Za-z0-9])"),
    re.compile(rf"^(?:客户)?(?P<w>{_NAME})(?:要|需要|想要|订|报价)"),
    re.compile(r"quot(?:e|ation)\s+(?:to\s+|for\s+)?(?P<w>.+?)\s*(?:\bfor\b|[:：,，])", re.I),
)
_NAME_TRIM = re.compile(r"^(?:一下|个|张|客户|我|给)+|(?:一个|一张|一份|个|张)+$")
_LINE_SPLIT = re.compile(r"[；;]|\band\b|另外|还有")
# the request's own words, not a line's: the verb, the form, politeness
_NOT_A_LINE = re.compile(
    r"帮我|帮忙|麻烦|请|谢谢|报价单|报价|一下|好吗|吧|"
    r"\b(?:please|quotation|quote|new|make|create|draft|prepare|a|for|to)\b",
    re.I,
)
_LEFT_OK = re.compile(r"^[\s，,。.、:：的和及x×*]*$", re.I)
_READS = re.compile(r"看|查|列出|显示|最近|\bshow\b|\blist\b", re.I)


def named_forms(text: str, forms: list[FormMeta]) -> list[FormMeta]:
    """The forms ``text`` names by name or alias, the longest naming first (销售订单 before 订单)."""
    lower = text.lower()
    hits = [(len(w), f) for f in forms for w in (f.name, *f.aliases) if len(w) >= 2 and w.lower() in lower]
    if not hits:
        return []
    longest = max(n for n, _ in hits)
    return list({f.form_id: f for n, f in hits if n == longest}.values())


def _ref_rows(catalog: Catalog, form_id: str | None) -> list[Seen]:
    """The records a reference may name: the form's rows seen, else the ERP's list of them."""
    rows = [r for r in catalog.rows if r.form_id == form_id] or [r for r in catalog.choices if r.form_id == form_id]
    return list({r.values.get("code") or r.values.get("name") or "": r for r in rows}.values())


def _records(word: str, rows: list[Seen]) -> list[Seen]:
    """The records ``word`` names among ``rows``: exactly by code or name, else as part of a name."""
    key = word.lower().strip()
    if not key:
        return []
    cols = ("code", "name", "short_name")
    exact = [r for r in rows if any(r.values.get(c, "").lower() == key for c in cols)]
    if exact:
        return exact
    return [
        r for r in rows if len(key) >= 2 and any(key in r.values.get(c, "").lower() for c in ("name", "short_name"))
    ]


def _shown(row: Seen) -> str:
    return " ".join(dict.fromkeys(v for c in ("code", "name", "spec") if (v := row.values.get(c))))


def _customer(text: str, rows: list[Seen]) -> tuple[list[Seen], str, tuple[int, int] | None]:
    """The customers the request names, the words that named them and where they are."""
    whole = [
        (text.find(v), len(v), r)
        for r in rows
        for c in ("name", "short_name")
        if (v := r.values.get(c)) and len(v) >= 2 and v in text
    ]
    if whole:
        longest = max(n for _, n, _ in whole)
        at = next(i for i, n, _ in whole if n == longest)
        return [r for _, n, r in whole if n == longest], text[at : at + longest], (at, at + longest)
    first: tuple[str, tuple[int, int]] | None = None
    for pattern in _CUSTOMER_SAID:
        if not (m := pattern.search(text)):
            continue
        word = _NAME_TRIM.sub("", m["w"].strip()).strip()
        if len(word) < 2 or BILL_WORD.search(word):
            continue
        first = first or (word, m.span("w"))
        found = _records(word, rows) if rows else [Seen("", {"name": word})]
        if found:
            return found, word, m.span("w")
    return [], first[0] if first else "", first[1] if first else None


# a bill's roles, whatever the ERP calls them (port.py): the party it is for, a state that is a quotation
PARTY_COLUMNS = ("customer_id", "party_id")
_QUOTATION_STATE = re.compile(r"^(?:quotation|报价|报价单|quote)$", re.I)


def party_field(form: FormMeta) -> FieldMeta | None:
    """The header's reference to whom the bill is for (the demo's customer, Tryton's party)."""
    refs = [f for f in form.fields if f.type == "ref" and not f.read_only]
    return next((f for c in PARTY_COLUMNS for f in refs if f.column.endswith(c)), None)


def quoted(form: FormMeta) -> bool:
    """Whether the form's bills go through a quotation state (Tryton's sale: draft → quotation)."""
    return any(
        _QUOTATION_STATE.match(v) or _QUOTATION_STATE.match(label) for f in form.fields for v, label in f.options
    )


BILL_WORD = re.compile(r"报价|单$|^\d|^[A-Za-z]+\d")


def _bill_form(text: str, verb: re.Match[str], catalog: Catalog) -> FormMeta | None:
    """The one writable form with lines the request names — by name or alias, or the verb's own
    (quote → quotation); else, every create verb saying a quotation, the form whose bills go
    through a quotation state (Tryton's sale)."""
    said_form = "quotation" if "quot" in verb.group(0).lower() else lexicon.CREATE_FORM.get(verb.group(0).lower(), "")
    forms = named_forms(text, catalog.forms) or named_forms(said_form, catalog.forms)
    forms = [f for f in forms if f.writable and f.details]
    if not forms:
        forms = [f for f in catalog.forms if f.writable and f.details and quoted(f)]
    return forms[0] if len(forms) == 1 else None


def create_bill(text: str, verb: re.Match[str], catalog: Catalog, english: bool, prefer: str | None) -> Outcome | None:
    """A new bill read into a proposal, a question (which of several customers), the form
    prefilled with what was understood, or ``None`` (no one bill with lines named)."""
    form = _bill_form(text, verb, catalog)
    if form is None:
        return None  # no one bill with lines named: the reader's
    party = party_field(form)
    material = next((f for f in form.details if f.type == "ref" and f.column == "material_id"), None)
    if party is None or material is None:
        return None
    customers, name, span = _customer(text, _ref_rows(catalog, party.ref))
    if prefer:
        customers = [r for r in customers if prefer.split()[0] in r.values.values()] or customers
    if len(customers) > 1:
        shown = [_shown(r) for r in customers][:8]
        lead = (
            f"“{name}” matches several customers; which one?" if english else f"“{name}”对应多个客户，您指的是哪一个？"
        )
        return Ask(lead + " " + " / ".join(shown), shown)
    verb_end = verb.end() + (text[verb.end() : verb.end() + 1] == "单")  # 开张报价单
    rest = text
    for start, end in (s for s in (span, (verb.start(), verb_end)) if s):
        rest = rest[:start] + " " * (end - start) + rest[end:]  # the same length: the other span stays put
    rest = _NOT_A_LINE.sub(" ", rest)
    rest = re.sub(r"^[\s，,。：:]*(?:给|帮|为|替|要|需要)|(?:给|帮|为|替|要|需要)(?=[\s，,：:]*$)", " ", rest.strip())
    lines: list[dict[str, Any]] = []
    unclear: list[str] = []
    for part in _LINE_SPLIT.split(rest):
        if not part.strip(" ，,。.：:"):
            continue
        line = _line(part, _ref_rows(catalog, material.ref), english)
        if isinstance(line, str):
            unclear.append(line)
        else:
            lines.append(line)
    if not customers:
        unclear.insert(0, name or ("the customer" if english else "客户"))
    if not lines and not unclear and _READS.search(text):
        return None  # 给我看看恒达的报价: a read
    if unclear or not lines:
        prefill: dict[str, Any] = {}
        if customers:
            prefill[party.column] = customers[0].values.get("code") or customers[0].values.get("name")
        if lines:
            prefill["details"] = lines
        return FormFill(form.form_id, prefill, unclear)
    payload = {party.column: customers[0].values.get("code") or name, "details": lines}
    return Proposal({"form_id": form.form_id, "op": "create", "payload": payload})


def _material(part: str, materials: list[Seen]) -> tuple[list[Seen], str]:
    """The materials a line names — by code, else by name narrowed by part of its spec (6205,
    HGR20), else by a spec alone — and the line without those words."""
    codes = {r.values.get("code", "").lower(): r for r in materials if r.values.get("code")}
    said = re.findall(r"[A-Za-z]+\d+[A-Za-z0-9-]*", part)
    if not materials:  # the material form is not the caller's to read: propose_write resolves the code
        codes = {w.lower(): Seen("", {"code": w.upper()}) for w in said}
    found = [r for word in said if (r := codes.get(word.lower()))]
    if found:
        return found, re.sub(r"[A-Za-z]+\d+[A-Za-z0-9-]*", " ", part)
    named = [r for r in materials if (n := r.values.get("name")) and len(n) >= 2 and n in part]
    longest = max((len(r.values["name"]) for r in named), default=0)
    named = [r for r in named if len(r.values["name"]) == longest]
    tokens = [t for t in re.findall(r"[A-Za-z0-9][A-Za-z0-9.\-]*", part) if len(t) >= 3 and re.search(r"\d", t)]
    by_spec = [(t, r) for t in tokens for r in (named or materials) if t.lower() in r.values.get("spec", "").lower()]
    chosen = list({id(r): r for _, r in by_spec}.values()) or named
    left = part
    for word in [*(named[0].values["name"] for _ in named[:1]), *(t for t, _ in by_spec)]:
        left = left.replace(word, " ")
    return chosen, left


def _line(part: str, materials: list[Seen], english: bool) -> dict[str, Any] | str:
    """One line: a material, a quantity with its unit, a unit price; or what it could not place."""
    price = None
    if m := _PRICE_EACH.search(part):
        price = float(next(g for g in m.groups() if g))
        part = part[: m.start()] + " " + part[m.end() :]
    part = re.sub(r"(?<![一二两三四五六七八九\d])十(?=\s*(?:个|台|件|套|只|根|米|张|片))", "10", part)  # 十个
    part = phrases.arabic(re.sub(r"([A-Za-z]+\d+[A-Za-z0-9-]*)", r" \1 ", part))  # M0004两台: not 00042
    qty = None
    if m := _QTY.search(part):
        qty = float(m[1] or m[2])
        part = part[: m.start()] + " " + part[m.end() :]
    found, left = _material(part, materials)
    left = re.sub(r"\s*(?:pcs?|pieces|of|at|each|单价|元|块)\s*", " ", left, flags=re.I)
    what = part.strip(" ，,")
    if len(found) > 1:
        shown = " / ".join(_shown(r) for r in found[:8])
        return f"“{what}” matches several materials: {shown}" if english else f"“{what}”对应多个物料：{shown}"
    if not found:
        return f"no material found in “{what}”" if english else f"没有在“{what}”里找到物料"
    code = found[0].values.get("code", "")
    if qty is None:
        return f"how many of {code}" if english else f"{code} 的数量"
    if not _LEFT_OK.match(left):
        return f"“{left.strip()}”"
    line: dict[str, Any] = {"material_id": code, "qty": qty}
    if price is not None:
        line["unit_price"] = price
    return line
