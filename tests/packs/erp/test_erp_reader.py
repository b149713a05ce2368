"""The offline reader on its own, against a fixed clock: questions a clerk types, read from the
demo ERP's metadata (its form definitions, as ``/forms`` and ``/forms/{id}/config`` describe
them) and a handful of seen rows. Each capability gets many phrasings; the wrong answers the issue
found (应付 read as 应收, 超期超过60天 read as a customer) are pinned here."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

import pytest

from tether import phrases
from tether.erp_demo import facts
from tether.erp_demo.forms import BY_ID, FORMS, Form
from tether.erp_demo.meta import _filter_json
from tether.packs.erp import plans
from tether.packs.erp.metadata import Catalog, FormMeta, Seen
from tether.packs.erp.reader import read
from tether.packs.erp.readings import Ask, Reading, Refusal
from tether.sqlguard import Policy, guard

TODAY = date(2026, 12, 4)  # a Friday
COMMON = {
    "salesman_name",
    "bill_no",
    "customer_name",
    "customer_code",
    "supplier_name",
    "material_code",
    "material_name",
    "spec",
}


def _meta(form: Form) -> FormMeta:
    card = {"formId": form.form_id, "name": form.name, "aliases": list(form.aliases), "description": form.description,
            "answers": form.answers, "view": form.view}  # fmt: skip
    fields = [{"column": f.column, "label": f.label, "type": f.type, "ref": f.ref,
               "options": [{"value": v, "label": lb} for v, lb in f.options or ()]} for f in form.fields]  # fmt: skip
    config = {"formId": form.form_id, "name": form.name, "view": form.view, "billNoPrefix": form.bill_prefix,
              "master": fields, "filters": [_filter_json(f) for f in form.filters]}  # fmt: skip
    columns = frozenset({f.column for f in form.fields} | {f.column for f in form.filters} | COMMON)
    return FormMeta.from_erp(card, config, columns)


ALL = {f.form_id: _meta(f) for f in FORMS}
ROWS = [
    *(
        Seen("1001", {"code": c, "name": n, "city": "苏州" if "苏州" in n else "常州"})
        for c, n, _ in facts.BRAND_1_CUSTOMERS
    ),
    Seen(
        "1001", {"code": "C0001", "name": facts.SALES01_CUSTOMER[1], "short_name": "恒达自动化", "phone": "0512-1234"}
    ),
    Seen("1001", {"code": "C0010", "name": "苏州力诺自动化设备有限公司", "city": "苏州"}),
    Seen("1001", {"code": "C0003", "name": facts.SALES02_CUSTOMER[1], "short_name": "无锡锡东"}),
    Seen("1002", {"code": "S0001", "name": "东莞正泰液压气动有限公司", "category": "液压气动"}),
    Seen("1002", {"code": "S0002", "name": "沈阳海川液压气动有限公司", "category": "液压气动"}),
    Seen("1002", {"code": "S0003", "name": "苏州元丰传动科技有限公司", "category": "传动件"}),
    *(
        Seen("1003", {"code": c, "name": n, "spec": s, "category": "轴承" if "轴承" in n else "其他"})
        for c, n, s, *_ in facts.BRAND_1_MATERIALS
    ),
    *(
        Seen("2001", {"bill_no": f"QT202611-000{i}", "customer_name": n})
        for i, (_, n, _) in enumerate(facts.BRAND_1_CUSTOMERS)
    ),
    *(
        Seen("4001", {"material_code": c, "material_name": n, "spec": s, "warehouse_name": "原材料仓"})
        for c, n, s, *_ in facts.BRAND_1_MATERIALS
    ),
    Seen("5002", {"bill_no": "PO202611-0001", "supplier_name": "苏州元丰传动科技有限公司"}),
    Seen("1001", {"salesman_name": "赵强", "salesman_id": "sales03"}),  # an id filter's names, apart
    Seen("1001", {"salesman_name": "王婷", "salesman_id": "sales02"}),
    Seen("1002", {"code": "S0004", "name": "武汉金泰电机有限公司", "category": "电机"}),
    Seen("2002", {"customer_name": "郑州正泰精密五金有限公司"}),
    Seen("2002", {"customer_name": "青岛正泰精密五金有限公司"}),
    Seen("2002", {"customer_name": facts.SALES02_CUSTOMER[1]}),
]


def catalog(*form_ids: str) -> Catalog:
    granted = form_ids or tuple(ALL)
    return Catalog([ALL[i] for i in granted], [r for r in ROWS if r.form_id in granted])


ADMIN = catalog()
SALES = catalog(*facts.SALES_FORMS)
WAREHOUSE = catalog(*facts.WAREHOUSE_FORMS)
FINANCE = catalog(*facts.FINANCE_FORMS)


def reading(question: str, cat: Catalog = ADMIN) -> Reading:
    outcome = read(question, cat, TODAY)
    assert isinstance(outcome, Reading), (question, outcome)
    return outcome


# ---- the two wrong answers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    ["哪些供应商的应付已经超期了？", "应付账款里超期的有哪些", "欠供应商的钱哪些逾期了", "哪些应付已经过期了"],
)
def test_payables_are_read_from_the_payables_form_never_the_receivables(question: str) -> None:
    r = reading(question, FINANCE)
    assert r.form.form_id == "5002" and r.filters == {"min_overdue_days": 1}


@pytest.mark.parametrize(
    ("question", "days"),
    [
        ("超期超过60天的应收有哪些？", 60),
        ("逾期60天以上的应收", 60),
        ("应收里超过九十天的有哪些", 90),
        ("应收账款逾期超过30天的", 30),
    ],
)
def test_an_overdue_condition_is_a_filter_never_a_customer_name(question: str, days: int) -> None:
    r = reading(question, FINANCE)
    assert r.form.form_id == "5001" and r.filters == {"min_overdue_days": days}


# ---- the form ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "form_id"),
    [
        ("我一共有多少个客户？", "1001"),
        ("有哪些供应商", "1002"),
        ("上个月新建了几张报价单？", "2001"),
        ("销售订单有哪些", "2002"),
        ("本月的发货单", "2003"),
        ("今年开了多少张发票", "2004"),
        ("本月一共收了多少款？", "2005"),
        ("最近的采购订单", "3001"),
        ("6205-2RS还有多少库存", "4001"),
        ("缺货预警有哪些物料", "4002"),
        ("哪些物料的安全库存超过100", "1003"),  # a field of 物料档案, though 安全库存 names 4002 too
        ("应收账龄", "5001"),
    ],
)
def test_the_form_comes_from_names_aliases_and_records(question: str, form_id: str) -> None:
    assert reading(question).form.form_id == form_id


def test_only_granted_forms_are_chosen_and_the_refusal_names_them() -> None:
    outcome = read("哪些供应商的应付已经超期了？", SALES, TODAY)
    assert isinstance(outcome, Refusal)
    assert "应付账款" not in outcome.text and all(ALL[i].name in outcome.text for i in facts.SALES_FORMS)


def test_two_forms_that_fit_equally_are_a_question() -> None:
    outcome = read("含税合计最大的单据", SALES, TODAY)
    assert isinstance(outcome, Ask) and {"报价单", "销售订单", "发货单"} <= set(outcome.options)
    again = read("含税合计最大的单据", SALES, TODAY, prefer="销售订单")
    assert isinstance(again, Reading) and again.form.form_id == "2002"


@pytest.mark.parametrize(
    "question",
    [
        "今天天气怎么样",
        "帮我订一张去北京的机票",
        "哪些员工请假了",
        "没有发货的销售订单",
        "不是苏州的客户",
        "11月以来的报价单",
        "库存少的物料",
    ],
)
def test_words_it_cannot_place_are_named_not_guessed(question: str) -> None:
    outcome = read(question, ADMIN, TODAY)
    assert isinstance(outcome, Refusal) and "客户档案" in outcome.text


def test_a_comparison_between_two_fields_is_not_read_as_a_plain_list() -> None:
    outcome = read("哪些物料低于安全库存", WAREHOUSE, TODAY)  # the pinned rule reads 4002; the reader cannot
    assert isinstance(outcome, Refusal) and "低于" in outcome.text


def test_a_form_named_as_a_field_of_the_one_that_holds_every_word_reads_that_one() -> None:
    # 供应商 names the supplier master, which knows no overdue: the payables hold both words
    r = reading("Which suppliers are overdue?", ADMIN)
    assert r.form.form_id == "5002" and r.filters == {"min_overdue_days": 1}
    r = reading("缺口最大的是哪个物料", WAREHOUSE)
    assert r.form.form_id == "4002" and r.shape == "top" and r.measure and r.measure.column == "shortage_qty"


def test_a_word_another_form_knows_is_not_dropped_silently() -> None:
    outcome = read("仓库里一共有多少种物料", WAREHOUSE, TODAY)  # a count of which form's records: not said
    assert isinstance(outcome, Refusal) and "仓库" in outcome.text


# ---- options and their synonyms --------------------------------------------------------------------


@pytest.mark.parametrize(
    "question", ["哪些报价单还没审核？", "未审核的报价单", "报价单里没审核的", "待审核的报价单", "草稿状态的报价单"]
)
def test_not_yet_examined_is_draft(question: str) -> None:
    r = reading(question, SALES)
    assert r.form.form_id == "2001" and r.filters == {"status": "draft"} and r.said == ["状态 = 草稿"]


@pytest.mark.parametrize("question", ["已审核的销售订单", "审核过的销售订单有哪些", "审核通过的销售订单"])
def test_examined_synonyms(question: str) -> None:
    assert reading(question, SALES).filters == {"status": "examined"}


# ---- shapes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question", ["我一共有多少个客户？", "客户有几家", "How many customers do I have?", "报价单共几张"]
)
def test_counts(question: str) -> None:
    assert reading(question, SALES).shape == "count"


@pytest.mark.parametrize(
    ("question", "column", "filters"),
    [
        ("恒达自动化的联系电话是多少？", "phone", {"code": "C0001"}),  # by its short name: the code
        ("恒达的联系人是谁", "contact", {"name": facts.SALES01_CUSTOMER[1]}),
        ("常州力拓传动机械有限公司的信用额度是多少", "credit_limit", {"name": facts.OVERDUE_CUSTOMER_1[1]}),
        ("发票IV202604-0009的价税合计是多少？", "total_amount", {"bill_no": "IV202604-0009"}),
    ],
)
def test_one_field_of_one_record(question: str, column: str, filters: dict[str, Any]) -> None:
    r = reading(question)
    assert r.shape == "field" and [f.column for f in r.asked] == [column] and r.filters == filters


def test_sum_of_receipts_this_month_is_sql_over_the_view_with_the_period() -> None:
    r = reading("本月一共收了多少款？", FINANCE)
    assert (r.form.form_id, r.shape, r.agg, r.measure and r.measure.column) == ("2005", "aggregate", "sum", "amount")
    sql = plans.build_sql(r)
    assert (
        sql.startswith("SELECT SUM(amount)")
        and "bill_date >= '2026-12-01'" in sql
        and "bill_date <= '2026-12-04'" in sql
    )


@pytest.mark.parametrize(
    ("question", "agg"),
    [("平均每张发票多少钱", "avg"), ("发票价税合计最高是多少", "max"), ("收款金额最小是多少", "min")],
)
def test_average_max_min(question: str, agg: str) -> None:
    assert reading(question, FINANCE).agg == agg


def test_group_by_and_top_n_are_sql_the_sandbox_accepts() -> None:
    grouped = reading("按客户汇总本月的收款", FINANCE)
    assert (grouped.shape, grouped.group) == ("group", "customer_name")
    top = reading("销售订单金额最大的5个客户", SALES)
    assert (top.shape, top.top, top.group, top.measure and top.measure.column) == (
        "top",
        5,
        "customer_name",
        "total_amount",
    )
    policy = Policy(tables={"viw_receipt": "brands_id", "viw_sales_order": "brands_id"}, tenant=1, max_rows=200)
    for r in (grouped, top):
        guarded = guard(plans.build_sql(r), dialect="sqlite", policy=policy)
        assert "brands_id" in guarded.sql


def test_an_amount_asked_of_a_form_without_one_asks_which_form() -> None:
    outcome = read("金额最大的5个客户", ADMIN, TODAY)
    assert isinstance(outcome, Ask) and "销售订单" in outcome.options and "客户档案" not in outcome.options


# ---- records and values -----------------------------------------------------------------------------


def test_records_exact_then_part_of_a_name_then_near() -> None:
    assert reading("常州力拓传动机械有限公司的报价单", SALES).filters == {"customer_name": facts.OVERDUE_CUSTOMER_1[1]}
    assert reading("力拓的报价单", SALES).filters == {"customer_name": facts.OVERDUE_CUSTOMER_1[1]}
    assert reading("常州力拓传动机戒的报价单", SALES).filters == {"customer_name": facts.OVERDUE_CUSTOMER_1[1]}


def test_a_name_that_fits_several_records_is_a_question_with_the_candidates() -> None:
    outcome = read("深沟球轴承的安全库存是多少", WAREHOUSE, TODAY)
    assert isinstance(outcome, Ask) and any("6204-2RS" in o for o in outcome.options)
    assert any("6205-2RS" in o for o in outcome.options)
    chosen = read("深沟球轴承的安全库存是多少", WAREHOUSE, TODAY, prefer=outcome.options[1])
    assert isinstance(chosen, Reading) and chosen.shape == "field"
    assert chosen.form.form_id in ("1003", "4002") and "M0002" in chosen.filters.values()


def test_a_spec_resolves_to_its_material_code_on_the_stock_form() -> None:
    assert reading("6205-2RS还有多少库存", WAREHOUSE).filters == {"material_code": "M0002"}


@pytest.mark.parametrize(
    ("question", "form_id", "filters", "where"),
    [
        ("做液压气动的供应商有哪些？", "1002", {"category": "液压气动"}, []),
        ("苏州的客户有哪些", "1001", {"city": "苏州"}, []),
        ("轴承类的物料", "1003", {"category": "轴承"}, []),
    ],
)
def test_text_filter_values_seen_in_the_data(
    question: str, form_id: str, filters: dict[str, Any], where: list[Any]
) -> None:
    r = reading(question)
    assert (r.form.form_id, r.filters, r.where) == (form_id, filters, where)


# ---- dates against a fixed clock ----------------------------------------------------------------------

DATES = [
    ("今天", "2026-12-04", "2026-12-04"),
    ("昨天", "2026-12-03", "2026-12-03"),
    ("本周", "2026-11-30", "2026-12-04"),
    ("上周", "2026-11-23", "2026-11-29"),
    ("本月", "2026-12-01", "2026-12-04"),
    ("这个月", "2026-12-01", "2026-12-04"),
    ("上个月", "2026-11-01", "2026-11-30"),
    ("今年", "2026-01-01", "2026-12-04"),
    ("去年", "2025-01-01", "2025-12-31"),
    ("最近7天", "2026-11-28", "2026-12-04"),
    ("最近七天", "2026-11-28", "2026-12-04"),
    ("近两周", "2026-11-21", "2026-12-04"),
    ("最近3个月", "2026-09-05", "2026-12-04"),
    ("2026年11月", "2026-11-01", "2026-11-30"),
    ("11月", "2026-11-01", "2026-11-30"),
    ("Q3", "2026-07-01", "2026-09-30"),
    ("第一季度", "2026-01-01", "2026-03-31"),
    ("今年第三季度", "2026-07-01", "2026-09-30"),
    ("去年Q4", "2025-10-01", "2025-12-31"),
    ("11月1日到15日", "2026-11-01", "2026-11-15"),
    ("2026-10-01到2026-10-31", "2026-10-01", "2026-10-31"),
    ("last month", "2026-11-01", "2026-11-30"),
]


@pytest.mark.parametrize(("phrase", "start", "end"), DATES)
def test_every_date_phrase(phrase: str, start: str, end: str) -> None:
    period = phrases.period_of(phrases.arabic(phrase), TODAY)
    assert period is not None and (period.start.isoformat(), period.end.isoformat()) == (start, end)


def test_a_period_goes_on_the_forms_date_filters_and_is_said() -> None:
    r = reading("上个月新建了几张报价单？", SALES)
    assert r.filters == {"date_from": "2026-11-01", "date_to": "2026-11-30"} and r.shape == "count"
    assert r.said == ["单据日期 2026-11-01 至 2026-11-30"]


# ---- comparisons with units ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "op", "value", "unit"),
    [
        ("超过60天", ">", 60, "天"),
        ("60天以上", ">=", 60, "天"),
        ("金额大于5万", ">", 50000, "元"),
        ("不超过30天", "<=", 30, "天"),
        ("少于2000元", "<", 2000, "元"),
        ("不少于2000元", ">=", 2000, "元"),
        ("至少3个", ">=", 3, "个"),
        ("最多3个", "<=", 3, "个"),
        ("more than 500", ">", 500, ""),
        ("at least 500", ">=", 500, ""),
        ("below 10", "<", 10, ""),
        (phrases.arabic("超过十五天"), ">", 15, "天"),
        (phrases.arabic("两千个以上"), ">=", 2000, "个"),
    ],
)
def test_comparisons(text: str, op: str, value: float, unit: str) -> None:
    (c,) = phrases.comparisons(text)
    assert (c.op, c.value, c.unit) == (op, value, unit)


def test_an_amount_comparison_without_a_filter_is_an_sql_condition() -> None:
    r = reading("金额大于5万的发票有哪些", FINANCE)
    assert r.where == [("total_amount", ">", 50000.0)] and "total_amount > 50000" in plans.build_sql(r)


def test_top_n_phrases() -> None:
    assert [phrases.top_n(phrases.arabic(t)) for t in ("前五个客户", "top 3", "金额最大的10个")] == [
        (5, (0, 3)),
        (3, (0, 5)),
        (10, (2, 8)),
    ]


# ---- the answer says what it did, in the language asked -----------------------------------------------


def test_the_answer_names_the_form_and_filters_in_chinese_and_english() -> None:
    zh = plans.plan_of(reading("哪些供应商的应付已经超期了？", FINANCE), "q")
    assert zh["answer"].startswith("按 应付账款（5002），最少逾期天数 ≥ 1：共 ${prev.total} 条")
    en = plans.plan_of(reading("How many customers do I have?", SALES), "q")
    assert en["answer"].startswith("From 客户档案 (1001), no filter: ${prev.total} records")
    step = zh["plan"][0]
    assert step == {
        "tool": "read_form_data",
        "args": {"form_id": "5002", "filters": {"min_overdue_days": 1}, "page": 1, "page_size": 20},
    }


@pytest.mark.parametrize(
    ("question", "cat", "group", "ascending"),
    [
        ("哪个客户的信用额度最高", SALES, None, False),
        ("我的客户里谁的信用额度最高", SALES, None, False),
        ("上个月收款最多的客户", FINANCE, "customer_name", False),
        ("哪个物料的销售单价最低", WAREHOUSE, None, True),
        ("最小的一笔收款金额", FINANCE, None, True),
    ],
)
def test_which_record_is_at_the_top_is_a_top_one_not_a_bare_maximum(
    question: str, cat: Catalog, group: str | None, ascending: bool
) -> None:
    r = reading(question, cat)
    assert (r.shape, r.top, r.group, r.ascending) == ("top", 1, group, ascending)
    assert plans.build_sql(r).endswith("ASC LIMIT 1" if ascending else "DESC LIMIT 1")


def test_a_trait_many_records_share_is_a_condition_not_a_question_about_records() -> None:
    r = reading("苏州的供应商", ADMIN_WITH_CITIES)
    assert r.form.form_id == "1002" and r.where == [("city", "=", "苏州")]


def test_one_record_named_in_parts_is_one_filter() -> None:
    r = reading("无锡锡东精工的联系电话是多少", SALES)  # 无锡锡东 is its short name, 精工 part of its name
    assert r.filters == {"code": "C0003"} and r.shape == "field"


def test_a_label_said_by_its_last_noun() -> None:
    r = reading("按客户汇总应收余额", FINANCE)
    assert (r.form.form_id, r.shape, r.group, r.measure and r.measure.column) == (
        "5001",
        "group",
        "customer_name",
        "balance",
    )


ADMIN_WITH_CITIES = Catalog(
    ADMIN.forms,
    [
        *ADMIN.rows,
        *(Seen("1002", {"code": f"S00{i}", "name": f"苏州{i}号供应商有限公司", "city": "苏州"}) for i in (21, 22)),
    ],
)


def test_a_name_narrowed_by_its_spec_is_the_one_record() -> None:
    r = reading("深沟球轴承6205-2RS还有多少库存", WAREHOUSE)
    assert (r.form.form_id, r.filters) == ("4001", {"material_code": "M0002"})


@pytest.mark.parametrize(
    ("question", "cat", "form_id", "shape"),
    [
        ("最近7天的报价单数量", SALES, "2001", "count"),
        ("上个月入库了几次", ADMIN, "3002", "count"),
        ("今天有新的销售订单吗", SALES, "2002", "list"),
        ("哪些物料的单价超过1000元", WAREHOUSE, "1003", "list"),
        ("供应商按类别统计", ADMIN, "1002", "group"),
        ("逾期最久的应收", FINANCE, "5001", "top"),
        ("今年第三季度开票金额合计", FINANCE, "2004", "aggregate"),
    ],
)
def test_more_everyday_phrasings(question: str, cat: Catalog, form_id: str, shape: str) -> None:
    r = reading(question, cat)
    assert (r.form.form_id, r.shape) == (form_id, shape)


def test_large_numbers_are_written_plainly() -> None:
    r = reading("信用额度超过100万的客户", SALES)
    assert "credit_limit > 1000000" in plans.build_sql(r) and r.said == ["信用额度 > 1000000"]


def test_the_reader_learns_names_and_short_texts_never_notes_or_bill_numbers() -> None:
    def with_lengths(form: Form) -> FormMeta:
        meta = _meta(form)
        fields = tuple(replace(fd, max_length=f.max_length) for fd, f in zip(meta.fields, form.fields, strict=True))
        return replace(meta, fields=fields)

    quotation, customer = with_lengths(BY_ID["2001"]), with_lengths(BY_ID["1001"])
    assert "remark" not in quotation.vocabulary_columns() and "bill_no" not in quotation.vocabulary_columns()
    assert "customer_name" in quotation.vocabulary_columns()
    assert {"name", "code", "city", "contact"} <= set(customer.vocabulary_columns())
    assert not {"address", "notes"} & set(customer.vocabulary_columns())


def test_a_field_of_a_named_record_is_read_on_the_records_own_form() -> None:
    r = reading("6205-2RS的安全库存是多少", WAREHOUSE)  # not 安全库存预警, which lists only the low ones
    assert (r.form.form_id, r.shape, r.filters) == ("1003", "field", {"spec": "6205-2RS"})


# ---- what the eval found: salespeople, 哪几家, business words, due dates, balances, what is left ----


@pytest.mark.parametrize("question", ["赵强负责哪些客户", "赵强的客户有哪些", "业务员赵强负责的客户"])
def test_a_salesperson_named_is_the_id_filter_with_the_name_said(question: str) -> None:
    r = reading(question)
    assert r.form.form_id == "1001" and r.filters == {"salesman_id": "sales03"} and r.shape == "list"
    assert r.said == ["业务员 = 赵强（sales03）"]
    assert ("sales03" in str(plans.plan_of(r, question)["plan"])) and not r.where


def test_how_many_customers_a_salesperson_has_is_a_count() -> None:
    r = reading("王婷负责几个客户")
    assert r.shape == "count" and r.filters == {"salesman_id": "sales02"}


@pytest.mark.parametrize(("question", "shape"), [("电机类的供应商有哪几家", "list"), ("电机类供应商有几家", "count")])
def test_which_few_is_a_list_how_many_is_a_count(question: str, shape: str) -> None:
    r = reading(question)
    assert r.form.form_id == "1002" and r.filters == {"category": "电机"} and r.shape == shape


def test_which_suppliers_and_their_phones_shows_the_phone_of_each() -> None:
    r = reading("供应商列表里电机类的有哪几家，电话多少")
    assert r.shape == "field" and [f.column for f in r.asked] == ["phone"] and r.filters == {"category": "电机"}
    answer = plans.plan_of(r, "")["answer"]
    assert "name" in answer and "phone" in answer


@pytest.mark.parametrize(
    ("question", "shape", "group"),
    [
        ("今年销售额最高的5个客户", "top", "customer_name"),
        ("本月各客户的销售额", "group", "customer_name"),
        ("上个月销售额一共多少", "aggregate", None),
    ],
)
def test_sales_amount_is_the_sales_orders_total(question: str, shape: str, group: str | None) -> None:
    r = reading(question)
    assert r.form.form_id == "2002" and r.shape == shape and r.group == group
    assert r.measure is not None and r.measure.column == "total_amount"
    sql = plans.build_sql(r)
    assert "FROM viw_sales_order" in sql and "bill_date >=" in sql


@pytest.mark.parametrize("question", ["天津北辰最近下了哪些单", "天津北辰下了几张单"])
def test_placing_an_order_names_the_sales_orders(question: str) -> None:
    r = reading(question, catalog(*facts.SALES_FORMS))
    assert r.form.form_id == "2002" and r.filters == {"customer_name": "天津北辰重工装备有限公司"}


@pytest.mark.parametrize("question", ["正泰最近的订单", "正泰的销售订单有哪些"])
def test_a_name_of_several_customers_on_orders_is_asked_then_read(question: str) -> None:
    outcome = read(question, ADMIN, TODAY)
    assert isinstance(outcome, Ask) and "青岛正泰精密五金有限公司" in outcome.options
    assert "郑州正泰精密五金有限公司" in outcome.options
    chosen = read(question, ADMIN, TODAY, prefer="青岛正泰精密五金有限公司")
    assert isinstance(chosen, Reading) and chosen.form.form_id == "2002"
    assert chosen.filters == {"customer_name": "青岛正泰精密五金有限公司"}


def test_due_this_week_is_the_due_date_through_sunday() -> None:
    r = reading("本周到期的应付", FINANCE)  # 2026-12-04 is a Friday
    assert r.form.form_id == "5002"
    assert ("due_date", ">=", "2026-11-30") in r.where and ("due_date", "<=", "2026-12-06") in r.where
    assert not r.filters  # not an overdue filter, not the bill date


@pytest.mark.parametrize("question", ["这个月到期的发票有哪些", "本月到期的销售发票"])
def test_due_this_month_goes_on_the_due_date_filters_to_the_months_end(question: str) -> None:
    r = reading(question, FINANCE)
    assert r.form.form_id == "2004" and r.filters == {"due_from": "2026-12-01", "due_to": "2026-12-31"}


def test_issued_this_month_stays_on_the_bill_date_up_to_today() -> None:
    r = reading("本月开的发票有哪些", FINANCE)
    assert r.filters == {"date_from": "2026-12-01", "date_to": "2026-12-04"}


@pytest.mark.parametrize(("question", "column"), [("欠供应商的钱一共多少", "balance"), ("应收余额一共多少", "balance")])
def test_what_is_owed_sums_the_balance_not_the_bills_total(question: str, column: str) -> None:
    r = reading(question, FINANCE)
    assert r.shape == "aggregate" and r.measure is not None and r.measure.column == column


def test_the_amount_of_the_bills_sums_their_total() -> None:
    r = reading("本月收款金额一共多少", FINANCE)
    assert r.measure is not None and r.measure.column == "amount"


@pytest.mark.parametrize("question", ["6205-2RS还剩多少", "6205-2RS还剩下多少", "6205-2RS剩余多少"])
def test_what_is_left_of_a_material_is_the_sum_of_its_stock(question: str) -> None:
    r = reading(question, WAREHOUSE)
    assert r.form.form_id == "4001" and r.filters == {"material_code": "M0002"}
    assert r.shape == "aggregate" and r.measure is not None and r.measure.column == "qty"


def test_what_is_left_of_a_name_of_several_materials_is_asked() -> None:
    outcome = read("深沟球轴承还剩多少", WAREHOUSE, TODAY)
    assert isinstance(outcome, Ask) and any("6204-2RS" in o for o in outcome.options)


def test_batches_arrived_this_month_count_the_inbound_bills() -> None:
    r = reading("这个月到了几批货")
    assert r.form.form_id == "3002" and r.shape == "count" and r.filters["date_from"] == "2026-12-01"


def test_a_three_character_name_is_found_whole_before_filler_words_split_it() -> None:
    mcu = [Seen("4001", {"material_code": f"M500{i}", "material_name": "单片机", "spec": s}) for i, s in
           enumerate(("STM32F103C8T6", "GD32F103C8T6"))]  # fmt: skip
    cat = Catalog([ALL[i] for i in facts.WAREHOUSE_FORMS], mcu)
    outcome = read("单片机还有多少库存", cat, TODAY)
    assert isinstance(outcome, Ask) and outcome.question.startswith("“单片机”")
    chosen = read("单片机还有多少库存", cat, TODAY, prefer="M5001 单片机 GD32F103C8T6")
    assert isinstance(chosen, Reading) and chosen.filters == {"material_code": "M5001"}


def test_an_id_filter_learns_the_names_beside_it_only_where_no_filter_takes_the_name() -> None:
    assert ALL["1001"].named_ids() == [("salesman_name", "salesman_id")]  # 业务员 by id only
    assert ALL["2002"].named_ids() == []  # 客户: customer_name has its own filter


@pytest.mark.parametrize(
    ("question", "form_id", "column"),
    [
        ("一共有几个仓库？", "4001", "warehouse_id"),  # the stock ledger's warehouses, not its 225 rows
        ("仓库有几个", "4001", "warehouse_id"),
        ("供应商档案里有几种供应类别", "1002", "category"),
    ],
)
def test_how_many_of_a_field_counts_its_values_not_the_rows(question: str, form_id: str, column: str) -> None:
    r = reading(question, WAREHOUSE if form_id == "4001" else ADMIN)
    assert (r.form.form_id, r.shape, r.distinct and r.distinct.column) == (form_id, "count", column)
    policy = Policy(tables={r.form.view: "brands_id"}, tenant=1, max_rows=200)
    sql = guard(plans.build_sql(r), dialect="sqlite", policy=policy).sql
    assert f"COUNT(DISTINCT {column})" in sql and "brands_id" in sql
    answer = plans.plan_of(r, question)["answer"]
    assert r.form.label_of(column) in answer and "不同" in answer


@pytest.mark.parametrize(
    "question", ["我一共有多少个客户？", "苏州的客户有几家", "最近30天新建了几张报价单", "赵强负责的客户有几个"]
)
def test_how_many_records_stays_a_count_of_records(question: str) -> None:
    r = reading(question, SALES if "赵强" not in question else ADMIN)
    assert r.shape == "count" and r.distinct is None


@pytest.mark.parametrize(
    ("question", "cat", "column"),
    [
        ("本月销售订单的总金额是多少？", SALES, "total_amount"),  # 总 before the field: a sum, not a word unknown
        ("本月收了多少款？", FINANCE, "amount"),  # how much money, asked without 一共
        ("上个月收了多少款", FINANCE, "amount"),
        ("应付账款一共还欠多少钱？", FINANCE, "balance"),  # 还欠: the balance
    ],
)
def test_how_much_money_is_a_sum_without_saying_total(question: str, cat: Catalog, column: str) -> None:
    r = reading(question, cat)
    assert (r.shape, r.agg, r.measure and r.measure.column) == ("aggregate", "sum", column)


@pytest.mark.parametrize("question", ["报价单总数是多少", "总共有几张报价单"])
def test_a_total_number_is_a_count(question: str) -> None:
    assert reading(question, SALES).shape == "count"


# ---- the answer has the shape of the question (issue 37's wrong answers) ------------------------------


@pytest.mark.parametrize(
    "question", ["常州力拓最近一张报价单多少钱", "力拓最新的报价单金额", "latest quotation for 常州力拓?"]
)
def test_the_latest_record_is_one_record_by_its_date_never_the_sum(question: str) -> None:
    r = reading(question, SALES)
    sql = plans.build_sql(r)
    assert r.latest and r.shape == "top" and r.agg is None
    assert "ORDER BY bill_date DESC, bill_no DESC LIMIT 1" in sql and "SUM(" not in sql and "total_amount" in sql


@pytest.mark.parametrize("question", ["What is the phone number of 恒达?", "恒达的电话号码是多少"])
def test_a_value_asked_is_the_value_never_a_count(question: str) -> None:
    r = reading(question, SALES)
    assert r.shape == "field" and [f.column for f in r.asked] == ["phone"]


@pytest.mark.parametrize(
    "question", ["M0005还剩几个", "M0005库存多少", "伺服电机还剩几台", "how many M0005 are left in stock?"]
)
def test_a_quantity_asked_is_the_sum_of_the_quantity_with_its_rows(question: str) -> None:
    r = reading(question, WAREHOUSE)
    plan = plans.plan_of(r, question)
    assert r.shape == "aggregate" and r.agg == "sum" and r.measure is not None and r.measure.column == "qty"
    assert [s["tool"] for s in plan["plan"]] == ["query_data", "query_data"]
    assert "SUM(qty)" in plan["plan"][0]["args"]["sql"] and "${prev|table}" in plan["answer"]


def test_a_count_of_kinds_stays_a_count() -> None:
    assert reading("一共几个仓库", WAREHOUSE).shape == "count"


def test_a_list_of_amounts_carries_its_total() -> None:
    r = reading("常州力拓的报价单和金额", SALES)
    plan = plans.plan_of(r, "常州力拓的报价单和金额")
    assert [s["tool"] for s in plan["plan"]] == ["read_form_data", "query_data"]
    assert "SUM(total_amount)" in plan["plan"][1]["args"]["sql"] and "合计 ${prev|sum:total_amount}" in plan["answer"]


@pytest.mark.parametrize("question", ["本月采购额多少", "这个月的采购额是多少？"])
def test_a_business_words_amount_is_a_list_of_amounts_with_its_total(question: str) -> None:
    r = reading(question, catalog("3001"))
    assert r.form.form_id == "3001" and r.beside and r.measure is not None and r.measure.column == "total_amount"
    assert "合计 ${prev|sum:total_amount}" in plans.plan_of(r, question)["answer"]


@pytest.mark.parametrize("question", ["帮我看一下M0020还有几桶", "how many M0004 do we still have?", "stock of M0010"])
def test_a_stock_asked_of_a_material_is_read_from_the_stock_ledger(question: str) -> None:
    r = reading(question, WAREHOUSE)
    assert r.form.form_id == "4001" and r.shape == "aggregate" and r.measure is not None and r.measure.column == "qty"


def test_a_group_shows_names_not_ids_and_a_code_with_its_name() -> None:
    by_warehouse = plans.build_sql(reading("每个仓库各有多少条库存", WAREHOUSE))
    assert "GROUP BY warehouse_name" in by_warehouse and "warehouse_id" not in by_warehouse
    top = plans.build_sql(reading("库存最多的5个物料", WAREHOUSE))
    assert "MAX(material_name) AS material_name" in top and "ORDER BY qty DESC LIMIT 5" in top


def test_a_list_through_sql_says_how_many_rows_match() -> None:
    plan = plans.plan_of(reading("这个月到期的应付有哪些", FINANCE), "这个月到期的应付有哪些")
    assert [s["tool"] for s in plan["plan"]] == ["query_data", "query_data"]
    assert plan["plan"][1]["args"]["sql"].startswith("SELECT COUNT(*)") and "共 ${prev.rows.0.0} 条" in plan["answer"]


def sales01_catalog() -> Catalog:
    """sales01's catalog as the reader gets it: the sales forms, and the ERP's other forms by name only."""
    cat = catalog(*facts.SALES_FORMS)
    cat.denied = [FormMeta.from_erp({"formId": f.form_id, "name": f.name, "aliases": list(f.aliases)}, {}) for f in
                  FORMS if f.form_id not in facts.SALES_FORMS]  # fmt: skip
    return cat


@pytest.mark.parametrize(
    ("question", "form"),
    [
        ("本月开了几张销售发票", "销售发票"),
        ("恒达的发票", "销售发票"),  # a customer sales01 serves
        ("佛山不存在机电的销售发票", "销售发票"),  # no such customer: the same answer
        ("查一下深沟球轴承的库存", "材料库存台账"),
    ],
)
def test_a_form_the_user_is_not_granted_is_named_never_read(question: str, form: str) -> None:
    outcome = read(question, sales01_catalog(), TODAY)
    assert isinstance(outcome, Refusal) and outcome.outcome == "not_granted"
    assert outcome.text == f"您没有{form}的权限。"
    planned = plans.plan_of(outcome, question)
    assert planned == {"plan": [], "answer": f"您没有{form}的权限。", "outcome": "not_granted"}
    english = read("Which invoices are overdue?", sales01_catalog(), TODAY)
    assert isinstance(english, Refusal) and english.text == "You are not granted the form 销售发票."


def test_words_not_understood_stay_not_understood_where_no_ungranted_form_is_named() -> None:
    outcome = read("报价单里的扑朔迷离", sales01_catalog(), TODAY)
    assert isinstance(outcome, Refusal) and outcome.outcome == "not_understood"
    assert "“扑朔迷离”" in outcome.text and "权限" not in outcome.text
    assert plans.plan_of(outcome, "报价单里的扑朔迷离")["outcome"] == "not_understood"


def test_a_reading_says_in_words_what_it_filtered_when_nothing_matches() -> None:
    listed = plans.plan_of(read("恒达2020年的报价单", sales01_catalog(), TODAY), "恒达2020年的报价单")
    assert listed["noRows"] == {
        "test": "${prev.total}",
        "answer": f"没有符合条件的记录：客户名称 含 {facts.SALES01_CUSTOMER[1]}，单据日期 2020-01-01 至 2020-12-31（报价单）。",
    }
    total = plans.plan_of(read("2020年报价单含税合计一共多少", sales01_catalog(), TODAY), "q")
    assert total["noRows"]["test"] == "${prev.rows.0.1}"  # the aggregate's record count
    english = plans.plan_of(read("quotations from last week", sales01_catalog(), TODAY), "q")
    assert english["noRows"]["answer"] == "No records match: 单据日期 2026-11-23 至 2026-11-29 (报价单)."
    counted = plans.plan_of(read("2020年有几张报价单", sales01_catalog(), TODAY), "q")
    assert "noRows" not in counted  # a count of 0 is an answer


# ---- a clerk's own words (issue 37): strictness, yes/no, what is left, typos ------------------------


def test_more_than_is_strict_and_at_least_is_not() -> None:
    assert reading("库存超过500的有哪些", WAREHOUSE).where == [("qty", ">", 500.0)]
    assert reading("库存不少于500的有哪些", WAREHOUSE).where == [("qty", ">=", 500.0)]
    assert reading("库存500以上的有哪些", WAREHOUSE).where == [("qty", ">=", 500.0)]
    # a day filter that takes only a minimum keeps the ERP's own reading of 超期超过60天
    assert reading("超期超过60天的应收有哪些", FINANCE).filters == {"min_overdue_days": 60}


def test_a_stock_row_shows_its_materials_code() -> None:
    assert plans.display_columns(ALL["4001"])[:2] == ["material_code", "material_name"]
    assert "customer_code" not in plans.display_columns(ALL["2001"])  # a bill is about itself


@pytest.mark.parametrize("question", ["金额排前3的报价单", "报价单金额排名前3", "金额前3的报价单"])
def test_ranked_first_n_is_a_top_n(question: str) -> None:
    r = reading(question, SALES)
    assert r.shape == "top" and r.top == 3 and r.measure and r.measure.column == "total_amount"


@pytest.mark.parametrize("question", ["QT202611-0001审核了没", "QT202611-0001审核了没有", "QT202611-0001审没审核"])
def test_a_yes_no_question_of_a_named_bill_shows_its_state_rather_than_filtering_by_it(question: str) -> None:
    r = reading(question, SALES)
    assert r.filters == {"bill_no": "QT202611-0001"} and "status" in plans.display_columns(r.form)


def test_a_state_without_a_named_bill_still_filters() -> None:
    assert reading("报价单审核了没", SALES).filters == {"status": "examined"}


def test_what_is_left_of_a_named_material_is_its_stock_not_a_question_between_forms() -> None:
    spec = facts.BRAND_1_MATERIALS[1][2]
    r = reading(f"{spec}还有多少个", WAREHOUSE)
    assert r.form.form_id == "4001" and r.shape == "aggregate" and r.measure and r.measure.column == "qty"


@pytest.mark.parametrize(
    ("question", "typed", "meant", "form_id", "cat"),
    [
        ("我有多少个客护", "客护", "客户", "1001", SALES),
        ("这个月开了几张发漂", "发漂", "发票", "2004", FINANCE),
        ("供因商有几家", "供因商", "供应商", "1002", ADMIN),
    ],
)
def test_a_sound_alike_typo_is_read_as_the_word_it_sounds_like_and_said(
    question: str, typed: str, meant: str, form_id: str, cat: Catalog
) -> None:
    r = reading(question, cat)
    assert r.form.form_id == form_id and r.shape == "count"
    assert r.said[0] == f"（“{typed}”按“{meant}”理解）"


def test_a_word_that_sounds_like_nothing_the_erp_knows_stays_not_understood() -> None:
    outcome = read("报价单的飞机有几张", SALES, TODAY)
    assert isinstance(outcome, Refusal) and "飞机" in outcome.text


def test_a_split_verb_and_its_object_name_the_form() -> None:
    r = reading("上周收了哪些客户的款", FINANCE)
    assert r.form.form_id == "2005" and r.filters == {"date_from": "2026-11-23", "date_to": "2026-11-29"}


@pytest.mark.parametrize(
    ("question", "form_id", "column"),
    [
        ("How much did we receive last month?", "2005", "amount"),
        ("这个月卖了多少钱", "2002", "total_amount"),
        ("M0001卖多少钱", "1003", "price"),  # 卖 → 售价 → 单价: a synonym's synonym
    ],
)
def test_a_clerks_verbs_name_the_amount(question: str, form_id: str, column: str) -> None:
    r = reading(question)
    assert r.form.form_id == form_id and r.measure and r.measure.column == column


# ---- stop 46: rankings, groups, totals of what is owed --------------------------------------------


@pytest.mark.parametrize("question", ["逾期应收最多的是哪个客户", "逾期的应收最多的客户"])
def test_the_customer_owing_most_overdue_is_ranked_by_the_balance_of_overdue_rows(question: str) -> None:
    r = reading(question, FINANCE)
    assert r.form.form_id == "5001" and r.shape == "top" and r.top == 1
    assert r.filters == {"min_overdue_days": 1}  # 逾期 filters; it is not the number ranked
    assert r.group == "customer_name" and r.measure and r.measure.column == "balance"


def test_the_pinned_overdue_list_leaves_a_ranking_or_a_grouping_to_the_reader() -> None:
    from tether.packs.erp import planner_rules

    assert planner_rules.extract("逾期的应收有哪些", {})["erp"] is not planner_rules.READER
    for question in ("逾期应收最多的是哪个客户", "逾期应收按客户汇总", "逾期金额前三的客户"):
        assert planner_rules.extract(question, {})["erp"] is planner_rules.READER, question


def test_grouped_by_a_field_said_with_fenbie_is_a_group() -> None:
    r = reading("应收按账龄区间分别是多少", FINANCE)
    assert r.shape == "group" and r.group == "aging_bucket" and r.measure and r.measure.column == "balance"


def test_which_group_has_the_most_records_is_a_top_one_by_count() -> None:
    r = reading("哪个业务员负责的客户最多")
    assert r.form.form_id == "1001" and r.shape == "top" and r.top == 1 and r.group == "salesman_name"
    assert r.measure is None and "ORDER BY record_count DESC LIMIT 1" in plans.build_sql(r)


def test_what_is_still_unpaid_is_listed_with_its_total_balance() -> None:
    r = reading("还没付的应付有多少", FINANCE)
    assert r.where == [("balance", ">", 0)] and r.beside and r.measure and r.measure.column == "balance"
    sqls = [s["args"]["sql"] for s in plans.plan_of(r, "还没付的应付有多少")["plan"]]
    assert sqls[1] == "SELECT SUM(balance) AS balance, COUNT(*) AS record_count FROM viw_ap WHERE balance > 0"


def test_a_number_counted_in_units_is_that_number_not_a_row_count() -> None:
    r = reading("骨架油封缺口多少个", WAREHOUSE)
    assert r.form.form_id == "4002" and r.shape == "aggregate" and r.measure and r.measure.column == "shortage_qty"
    assert reading("安全库存预警有多少条", WAREHOUSE).shape == "count"  # rows, counted as rows


@pytest.mark.parametrize("question", ["总库存低于10的物料", "哪些物料总库存不到100"])
def test_a_total_compared_is_each_records_total_not_each_row(question: str) -> None:
    r = reading(question, WAREHOUSE)
    assert r.shape == "group" and r.group == "material_code" and not r.where
    sql = plans.build_sql(r)
    assert "GROUP BY material_code HAVING SUM(qty) <" in sql and "WHERE" not in sql
    assert reading("库存低于10的物料", WAREHOUSE).where == [("qty", "<", 10.0)]  # each row, without 总


@pytest.mark.parametrize(
    "question", ["这个月开了几张发票，合计多少", "今年一共开了多少张发票，金额多少", "今年开了几张发票，价税合计多少"]
)
def test_a_count_asked_with_a_sum_is_the_sum_which_says_the_count(question: str) -> None:
    r = reading(question, FINANCE)
    assert r.shape == "aggregate" and r.agg == "sum" and r.measure and r.measure.column == "total_amount"
    assert reading("恒达今年一共下了几个订单", SALES).shape == "count"  # 一共 leads the count: no sum asked


def test_a_count_asked_with_each_one_lists_the_records() -> None:
    assert reading("六角螺栓一共有几种规格，分别是啥").shape == "list"


def test_a_form_not_granted_named_whole_is_refused_even_where_a_granted_field_shares_its_name() -> None:
    denied = Catalog(FINANCE.forms, FINANCE.rows, [f for f in ALL.values() if f not in FINANCE.forms])
    outcome = read("上个月销售订单金额合计是多少", denied, TODAY)
    assert isinstance(outcome, Refusal) and outcome.outcome == "not_granted" and "销售订单" in outcome.text
    assert isinstance(read("销售发票有几张", denied, TODAY), Reading)


def test_an_english_data_value_in_pinyin_is_read_as_the_value_and_said() -> None:
    r = reading("Which customers are in Suzhou?")
    assert r.filters == {"city": "苏州"} and r.english and r.said[0] == "(read “Suzhou” as “苏州”)"


def test_a_bill_of_another_form_is_never_a_filter_of_this_one() -> None:
    outcome = read("SO202611-0001的发货单号", SALES, TODAY)
    assert not (isinstance(outcome, Reading) and outcome.form.form_id == "2003")
