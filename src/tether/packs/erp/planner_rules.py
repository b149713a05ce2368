"""The offline planner's rules for the ERP pack: recognise a clerk's request, resolve the entity
it names (material code, customer name, bill number, date phrase) and choose the steps
and the answer template (``extract.erp.plan`` / ``extract.erp.answer``, spliced in by the ERP
skills' ``steps`` entries).

Entity resolution is exact for codes and bill numbers; a material or customer named by a name
that may be several records (深沟球轴承, 正泰) is the reader's, which asks which one. A request no pinned
rule takes, or one a pinned rule would misread (应付 is not 应收; "超期超过60天" is not a customer),
goes to the metadata reader (``read_question``, ``reader.py``), which answers it from the ERP's own
metadata or says what it did not understand — never a guess.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from tether.pack import phrases
from tether.packs.erp import lexicon

# codes sit next to Chinese characters, which count as word characters: no \b here
BILL_NO = re.compile(r"(?<![A-Za-z0-9])(QT|SO|DN|IV|RC|PO|IN)\d{6}-\d{4}(?![0-9])", re.I)
MATERIAL_CODE = re.compile(r"(?<![A-Za-z0-9])M\d{4}(?![0-9])", re.I)
_LEAD = r"(?:请|帮我|麻烦)?(?:查一下|查询一下|查询|查查|查|看一下|看看|看|列出|统计一下|统计)?"
_STOCK_OF = re.compile(_LEAD + r"(?:物料)?(.+?)(?:的)?(?:现存量|库存(?:数量|情况|还有多少|有多少)?|还有多少)")
_AR_OF = re.compile(_LEAD + r"(?:客户)?(.+?)的?(?:应收账款|应收|欠款)")
_RECON_OF = re.compile(_LEAD + r"(?:客户)?(.+?)(?:本月|上月|这个月|上个月)?的?(?:对账|对账单)")
_OVER_DAYS = re.compile(r"(?:超期|逾期|超过|超)(\d{1,4})\s*天")
_NOISE = re.compile(r"^(?:一下|下|的|客户|物料|我的|我们的)+|(?:的|一下)+$")

DISPLAY = {
    "stock": "material_code,material_name,spec,warehouse_name,qty,unit,last_in_date,last_out_date",
    "low_stock": "material_code,material_name,spec,safety_stock,stock_qty,shortage_qty",
    "ar": "bill_no,customer_name,bill_date,due_date,total_amount,received_amount,balance,overdue_days,aging_bucket",
    "quotation_lines": "line_no,material_code,material_name,spec,qty,unit_price,amount",
}


# words that make a captured "customer" a condition or a question, not a name: the reader's
_NOT_A_NAME = re.compile(
    r"\d+\s*天|哪|什么|所有|全部|各|每个|^我|本月|这个月|上个?月|今年|最近|超期|逾期|超过|按|汇总|统计|一共|多少|总"
)
_EVERY_CUSTOMER = re.compile(r"(?:所有|全部|各|每个)?客户")


def _clean(term: str) -> str:
    term = re.sub(r"[？?。！!，,\s]+", "", term)
    return _NOISE.sub("", term).strip()


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def month_range(query: str, today: date | None = None) -> tuple[date, date, str]:
    today = today or date.today()
    first = today.replace(day=1)
    if "上月" in query or "上个月" in query:
        end = first - timedelta(days=1)
        return end.replace(day=1), end, f"{end:%Y年%m月}"
    if "今年" in query or "本年" in query:
        return today.replace(month=1, day=1), today, f"{today:%Y年}"
    return first, today, f"{today:%Y年%m月}"


def _read(form_id: str, filters: dict[str, Any], page_size: int = 20) -> list[dict[str, Any]]:
    args = {"form_id": form_id, "filters": filters, "page": 1, "page_size": page_size}
    return [{"tool": "read_form_data", "args": args}]


_LOW_EN = re.compile(
    r"\b(?:below|under|short of|less than)\s+(?:the\s+|their\s+|its\s+)?safety stock|\blow stock|\breorder|\brestock",
    re.I,
)


def _stock(query: str) -> dict[str, Any] | None:
    # below the safety stock, never a number (库存低于100 is a comparison: the reader's)
    english = _LOW_EN.search(query) is not None
    if english or re.search(r"低于安全库存|安全库存(?:以下|不足)|库存(?:不足|预警)|缺货|补货", query):
        lead = (
            "Materials whose stock is below their safety stock (${prev.total}); reorder soon:"
            if english
            else "以下物料的现存量低于安全库存（共 ${prev.total} 种），建议尽快补货："
        )
        return {"plan": _read("4002", {}, 50), "answer": f"{lead}\n\n${{prev|table:{DISPLAY['low_stock']}}}"}
    if "安全库存" in query:
        return None  # a material's safety stock is a field of the material: the reader's
    code = MATERIAL_CODE.search(query)
    if not code or not _STOCK_OF.search(query):
        return None  # a material by name or spec may be several: the reader resolves it, or asks
    filters, name = {"material_code": code.group(0).upper()}, code.group(0).upper()
    return {
        "plan": _read("4001", filters, 50),
        "answer": f"{name} 的库存数量合计 ${{prev|sum:qty}}（共 ${{prev.total}} 条台账记录）：\n\n"
        f"${{prev|table:{DISPLAY['stock']}}}",
    }


def _ranked_or_grouped(query: str) -> bool:
    """逾期应收最多的是哪个客户 / 按账龄区间分别是多少 / 前三: a ranking or a grouping, which
    the pinned list does not answer — the reader's."""
    shaped = (lexicon.MAX, lexicon.MIN, lexicon.WHICH, lexicon.GROUP)
    return any(p.search(query) for p in shaped) or phrases.top_n(query) is not None


def _receivables(query: str) -> dict[str, Any] | None:
    if not re.search(r"超期|逾期|催收", query) or re.search(r"应付|供应商|采购", query):
        return None  # all receivables (not only overdue) and payables are the reader's
    if _ranked_or_grouped(query):
        return None
    days = _OVER_DAYS.search(query)
    match = _AR_OF.search(query)
    customer = _clean(match.group(1)) if match else ""
    if customer and re.fullmatch(r"(?:列出|所有|全部|哪些)?(?:超期|逾期)?\d*天?(?:以上)?", customer):
        customer = ""
    if customer and _NOT_A_NAME.search(customer):
        return None  # "超期超过60天" is a condition, not a customer: the reader reads it
    min_days = int(days.group(1)) if days else 1
    filters: dict[str, Any] = {"min_overdue_days": min_days}
    if customer:
        filters["customer_name"] = customer
        head = f"{customer} 逾期的应收（逾期 ≥ {min_days} 天）"
    else:
        head = f"逾期 {min_days} 天以上的应收"
    return {
        "plan": _read("5001", filters, 100),
        "answer": f"{head}：共 ${{prev.total}} 张发票，未收余额合计 ${{prev|sum:balance}} 元。\n\n"
        f"${{prev|table:{DISPLAY['ar']}}}",
    }


# the only periods month_range knows; any other date phrase is the reader's
_MONTH_WORDS = re.compile(r"本月|这个月|上月|上个月|今年|本年")
_OTHER_PERIOD = re.compile(r"最近|近\d|过去|本周|上周|去年|季度|Q[1-4]|\d+月|\d{4}|今天|昨天", re.I)


def _sales_summary(query: str) -> dict[str, Any] | None:
    if not (re.search(r"销售订单|销售额|订单", query) and re.search(r"汇总|按客户", query)):
        return None
    if re.search(r"采购|供应商|按(?!客户)\w{1,4}汇总", query) or _OTHER_PERIOD.search(_MONTH_WORDS.sub("", query)):
        return None  # purchase orders, another grouping or another period: the reader reads it
    if not _MONTH_WORDS.search(query):
        return None  # no period asked: not this month by default, the reader sums them all
    start, end, label = month_range(query)
    sql = (
        "SELECT customer_name, COUNT(*) AS order_count, SUM(total_amount) AS total_amount "
        f"FROM viw_sales_order WHERE bill_date >= {_sql_text(start.isoformat())} "
        f"AND bill_date <= {_sql_text(end.isoformat())} "
        "GROUP BY customer_name ORDER BY total_amount DESC LIMIT 50"
    )
    return {
        "plan": [{"tool": "query_data", "args": {"question": f"{label}销售订单按客户汇总", "sql": sql}}],
        "answer": f"{label}销售订单按客户汇总（{start} 至 {end}，共 ${{prev.rowCount}} 个客户，"
        "金额合计 ${prev|sum:total_amount} 元）：\n\n${prev|table:customer_name,order_count,total_amount}",
    }


def _quotation(query: str) -> dict[str, Any] | None:
    bill = BILL_NO.search(query)
    if not bill or not bill.group(0).upper().startswith("QT"):
        return None
    bill_no = bill.group(0).upper()
    return {
        "plan": [{"tool": "lookup_record", "args": {"form_id": "2001", "record_id": bill_no}}],
        "answer": f"报价单 {bill_no}：客户 ${{prev.master.customer_name}}，日期 ${{prev.master.bill_date}}，"
        "状态 ${prev|label:status}，交期 ${prev|label:delivery_days} 天，金额合计 ${prev.master.total_amount} 元。"
        "备注：${prev|label:remark}\n\n"
        f"明细（${{prev.details.total}} 行）：\n\n${{prev.details|table:{DISPLAY['quotation_lines']}}}",
    }


def _reconciliation(query: str) -> dict[str, Any] | None:
    if "对账" not in query:
        return None
    match = _RECON_OF.search(query)
    customer = _MONTH_WORDS.sub("", _clean(match.group(1))) if match else ""
    if _EVERY_CUSTOMER.fullmatch(customer):
        customer = ""
    if customer and _NOT_A_NAME.search(customer):
        return None  # 哪些客户对账有差额: the reader's
    start, end, label = month_range(query)
    where_customer = f" AND customer_name LIKE {_sql_text('%' + customer + '%')}" if customer else ""
    period = f"bill_date >= {_sql_text(start.isoformat())} AND bill_date <= {_sql_text(end.isoformat())}"
    sql = (
        "SELECT customer_name, SUM(invoiced) AS invoiced, SUM(received) AS received, "
        "SUM(invoiced) - SUM(received) AS difference FROM ("
        f"SELECT customer_name, total_amount AS invoiced, 0 AS received FROM viw_sales_invoice WHERE {period}{where_customer} "
        "UNION ALL "
        f"SELECT customer_name, 0 AS invoiced, amount AS received FROM viw_receipt WHERE {period}{where_customer}"
        ") t GROUP BY customer_name ORDER BY difference DESC LIMIT 50"
    )
    who = customer or "各客户"
    return {
        "plan": [{"tool": "query_data", "args": {"question": f"{label}{who}对账", "sql": sql}}],
        "answer": f"{label}{who}对账（{start} 至 {end}，开票对收款）：开票合计 ${{prev|sum:invoiced}} 元，"
        "收款合计 ${prev|sum:received} 元。\n\n${prev|table:customer_name,invoiced,received,difference}",
    }


_NEW_QUOTE_FOR = re.compile(
    r"(?:新建|新开|开|做)(?:一张|一份)?报价单?(?:给|，给)?(?:客户)?(.*)$|给(?:客户)?(.+?)(?:做个|做一个|做张|开个|出个)?报价"
)


def _new_quotation(query: str) -> dict[str, Any] | None:
    """新建一张报价单给<客户> → the quotation form (customer prefilled) → a create proposal."""
    match = _NEW_QUOTE_FOR.search(query)
    if not match or re.search(r"看|查|哪些|多少|几张|最近|列出", query):
        return None  # "给我看看恒达最近的报价单" reads quotations: the reader's
    customer = _clean(re.split(r"[：:，,]", (match.group(1) or match.group(2) or ""))[0])
    if not customer:
        return None
    return {
        "plan": [
            {"tool": "collect_form", "args": {"form_id": DEMO_FORMS["报价单"], "prefill": {"customer_id": customer}}},
            {
                "tool": "propose_write",
                "args": {"form_id": DEMO_FORMS["报价单"], "op": "create", "payload": "${prev.values}"},
            },
        ],
        "answer": WRITE_ANSWER,
    }


_QUOTE_FOR = re.compile(r"给(?:客户)?(?P<customer>[^：:，,]+?)报价[：:](?P<lines>.+)$")
_QUOTE_LINE = re.compile(
    r"^\s*(?P<material>[^\s，,]+?)\s*(?P<qty>\d+(?:\.\d+)?)\s*"
    r"(?:个|台|套|件|米|根|盒|吨|公斤|张|片)?\s*[，,]?\s*单价\s*(?P<price>\d+(?:\.\d+)?)\s*(?:元)?\s*$"
)
WRITE_ANSWER = "${prev.text}"


def _quote_with_lines(query: str) -> dict[str, Any] | None:
    """给<客户>报价：<物料> <数量>个，单价<价格>[；<物料> ...] → a complete create proposal."""
    match = _QUOTE_FOR.search(query)
    if not match:
        return None
    lines = []
    for part in re.split(r"[；;]", match["lines"].strip().rstrip("。")):
        line = _QUOTE_LINE.match(part)
        if not line:
            return None
        lines.append({"material_id": line["material"], "qty": float(line["qty"]), "unit_price": float(line["price"])})
    payload = {"customer_id": _clean(match["customer"]), "details": lines}
    return {
        "plan": [
            {"tool": "propose_write", "args": {"form_id": DEMO_FORMS["报价单"], "op": "create", "payload": payload}}
        ],
        "answer": WRITE_ANSWER,
    }


# the demo ERP's forms, which the pinned write rules name by id: on another ERP (Tryton) they do not
# apply, and every write is read from that ERP's own form metadata (writes.py, new_bills.py)
DEMO_FORMS = {"报价单": "2001", "销售订单": "2002", "发货单": "2003", "销售发票": "2004", "收款单": "2005"}
_BILL_FORM = "(报价单|销售订单|发货单|销售发票|收款单)"
_UPDATE = re.compile(
    r"把"
    + _BILL_FORM
    + r"\s*(?P<bill>[A-Za-z]{2}\d{6}-\d{4})\s*的(?P<field>.+?)(?:改成|改为|修改为|改到)(?P<value>.+)$"
)
_EXAMINE = re.compile(r"(?<!反)审核" + _BILL_FORM + r"\s*(?P<bill>[A-Za-z]{2}\d{6}-\d{4})")
_GENERATE = re.compile(
    r"(?:把|根据|由|从)?" + _BILL_FORM + r"\s*(?P<bill>[A-Za-z]{2}\d{6}-\d{4})\s*(?:生成|转成|转为|下推)" + _BILL_FORM
)
_DELETE = re.compile(r"(?:删除|删掉|作废)" + _BILL_FORM + r"\s*(?P<bill>[A-Za-z]{2}\d{6}-\d{4})")


_LINE_FIELD = re.compile(r"^(?:明细)?第\s*(?P<no>\d{1,3})\s*行的?(?P<field>.+)$")
_MATERIAL_FIELD = re.compile(r"^(?:明细(?:中|里)?)?(?P<code>M\d{4})的?(?P<field>.+)$", re.I)


def _update_payload(field: str, value: str) -> dict[str, Any]:
    """A header field (交期(天)), or a line's: 第<N>行的<字段> / <物料编码>的<字段> (单价, 数量)."""
    if line := _LINE_FIELD.match(field):
        return {"details": [{"line_no": int(line["no"]), line["field"].strip(): value}]}
    if line := _MATERIAL_FIELD.match(field):
        return {"details": [{"material_id": line["code"].upper(), line["field"].strip(): value}]}
    return {field: value}


def _change(query: str) -> dict[str, Any] | None:
    """Update / examine / delete of one bill: a proposal with its diff, confirmed by the person."""
    if lexicon.NEGATED.search(query):
        return None  # 撤销审核, 别删: not the op the verb says; the change reader says what it can do
    args: dict[str, Any] | None = None
    if match := _UPDATE.search(query):
        value = re.sub(r"[。！!]+$", "", match["value"].strip())
        payload = _update_payload(match["field"].strip(), value)
        args = {
            "form_id": DEMO_FORMS[match[1]],
            "op": "update",
            "record_id": match["bill"].upper(),
            "payload": payload,
        }
    elif match := _GENERATE.search(query):
        source = {"formId": DEMO_FORMS[match[1]], "billId": match["bill"].upper()}
        args = {"form_id": DEMO_FORMS[match[3]], "op": "generate", "source_ref": source}
    elif match := _EXAMINE.search(query):
        args = {"form_id": DEMO_FORMS[match[1]], "op": "examine", "record_id": match["bill"].upper()}
    elif match := _DELETE.search(query):
        args = {"form_id": DEMO_FORMS[match[1]], "op": "delete", "record_id": match["bill"].upper()}
    if args is None:
        return None
    return {"plan": [{"tool": "propose_write", "args": args}], "answer": WRITE_ANSWER}


_BY_ID = re.compile(r"[（(]\s*\d{1,9}\s*[)）]")
_QTY_SAID = re.compile(r"\d+(?:\.\d+)?\s*(?:个|台|套|件|只|根|米|盒|吨|公斤|张|片|pcs?|pieces|units?)", re.I)


def _change_request(query: str) -> dict[str, Any] | None:
    """A change no pinned phrasing takes (QT…这张不要了, 帮我把QT…审一下, QT…交期改到20天, change the
    remark of …, 给恒达做个报价，M0004两台): the reader reads it from the metadata (``writes.py``)
    into a proposal, a question or "not understood"."""
    text = phrases.arabic(query)
    if lexicon.ASK_WORDS.search(text) or (lexicon.ASK_MARKS.search(text) and not lexicon.POLITE.search(text)):
        return None
    ops = [op for op, verb in lexicon.WRITE_VERBS.items() if verb.search(text)]
    if not ops:
        return READER if BILL_NO.search(text) and lexicon.NEGATED.search(text) else None  # 反审核<单号>
    if (BILL_NO.search(text) or _BY_ID.search(text)) and ops != ["create"]:
        return READER  # a bill, or a draft named by its id as Tryton names it: 把销售订单(1)的说明改成…
    if "create" in ops and _QTY_SAID.search(re.sub(r"[一1](?:张|份|个)(?=报价)", "", text)):
        return READER  # a new bill with its lines said; without them, the form path collects them
    return None


RULES = (
    _change,
    _quote_with_lines,
    _change_request,
    _new_quotation,
    _quotation,
    _reconciliation,
    _sales_summary,
    _receivables,
    _stock,
)
DEMO_WRITE_RULES = frozenset({_change, _quote_with_lines, _new_quotation})  # they name DEMO_FORMS


# anything the pinned rules do not take goes to the metadata reader (``read_question``): its
# result is the steps that answer the question, spliced in once it has run
READER = {
    "plan": [{"tool": "read_question", "args": {"question": "${query}"}}, {"steps": "${steps.0.plan}"}],
    "answer": "${steps.0.answer|render}",
}


def extract(query: str, context: dict[str, Any], demo_forms: bool = True) -> dict[str, Any]:
    """The plan for ``query``; ``demo_forms``: the ERP is the demo one, whose form ids the pinned
    write rules name (else its writes are the metadata reader's)."""
    if "${" in query:  # the pinned rules put the user's words into step arguments, which the planner
        return {"erp": READER}  # renders: ${…} there would read the planner's scope; the reader refuses it
    for rule in RULES:
        if not demo_forms and rule in DEMO_WRITE_RULES:
            continue
        chosen = rule(query)
        if chosen is not None:
            return {"erp": chosen}
    return {"erp": READER}


def extract_off_demo(query: str, context: dict[str, Any]) -> dict[str, Any]:
    """``extract`` on an ERP other than the demo one (Tryton): no rule names the demo's forms."""
    return extract(query, context, demo_forms=False)
