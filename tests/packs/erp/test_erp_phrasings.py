"""Constructions a clerk uses that the reader once could not read, each as a class (issue 37):
a record and a field said as a bare noun phrase, the latest phrase's own words, a price, a
ranking of the cheapest, an English contraction. The questions are written for these tests —
never the held-out suite's — over the reader's catalog fixture (``test_erp_reader``)."""

from __future__ import annotations

import pytest

from tests.packs.erp.test_erp_reader import ADMIN, FINANCE, SALES, TODAY, WAREHOUSE, reading
from tether.core.skills import SkillRegistry, load_skills, select_by_rules
from tether.packs.erp.metadata import Catalog
from tether.packs.erp.pack import SKILLS
from tether.packs.erp.reader import read
from tether.packs.erp.readings import Ask, Refusal


def _asked(question: str, cat: Catalog) -> list[str]:
    r = reading(question, cat)
    assert r.shape == "field", (question, r.shape)
    return [f.column for f in r.asked]


@pytest.mark.parametrize(
    ("question", "cat", "column"),
    [
        ("常州力拓的联系人", SALES, "contact"),
        ("恒达自动化 手机", SALES, "phone"),
        ("无锡锡东地址", SALES, "address"),
        ("phone of 常州力拓", SALES, "phone"),
        ("M0003的单位", WAREHOUSE, "unit"),
    ],
)
def test_a_record_and_a_field_as_a_noun_phrase_ask_that_field(question: str, cat: Catalog, column: str) -> None:
    assert column in _asked(question, cat)


@pytest.mark.parametrize("question", ["哪些供应商的应付已经超期了", "苏州的客户", "恒达自动化的报价单"])
def test_a_list_or_a_condition_is_not_read_as_a_field(question: str) -> None:
    assert reading(question).shape != "field"


@pytest.mark.parametrize(
    ("question", "cat", "form_id"),
    [
        ("最近那笔收款是多少钱", FINANCE, "2005"),
        ("常州力拓最近一次下的订单", SALES, "2002"),
        ("最后一张发票是哪天开的", FINANCE, "2004"),
    ],
)
def test_the_latest_phrase_is_read_whole(question: str, cat: Catalog, form_id: str) -> None:
    r = reading(question, cat)
    assert r.form.form_id == form_id and r.latest and r.top == 1


def test_the_latest_of_a_date_asked_is_ordered_by_that_date() -> None:
    r = reading("M0003最后一次出库是哪天", WAREHOUSE)
    assert r.form.form_id == "4001" and r.latest and r.measure is not None
    assert r.measure.column == "last_out_date" and [f.column for f in r.asked] == ["last_out_date"]


@pytest.mark.parametrize(
    "question",
    ["圆锥滚子轴承多少钱一个", "M0005每台多少钱", "蜗轮蜗杆减速机的价格", "what's the price of M0007"],
)
def test_a_price_of_one_record_is_its_unit_price_never_a_sum(question: str) -> None:
    assert _asked(question, WAREHOUSE) == ["price"]


def test_a_cost_price_is_the_cost() -> None:
    assert _asked("M0002成本价是多少", WAREHOUSE) == ["cost"]


@pytest.mark.parametrize(
    ("question", "top", "ascending"),
    [("最贵的2个物料", 2, False), ("最便宜的4个物料", 4, True), ("最便宜的物料是哪个", 1, True)],
)
def test_the_dearest_and_the_cheapest_rank_by_the_price(question: str, top: int, ascending: bool) -> None:
    r = reading(question, WAREHOUSE)
    assert r.shape == "top" and r.top == top and r.ascending is ascending
    assert r.measure is not None and r.measure.column == "price"


@pytest.mark.parametrize(("question", "ascending"), [("金额最小的3张报价单", True), ("金额最大的3张报价单", False)])
def test_a_top_n_of_the_smallest_is_ascending(question: str, ascending: bool) -> None:
    r = reading(question, ADMIN)
    assert r.shape == "top" and r.top == 3 and r.ascending is ascending


@pytest.mark.parametrize(
    "question",
    ["常州力拓地址", "M0007单价", "冷轧钢板还剩几吨", "无锡锡东联系人是哪位", "latest invoice", "how much do we owe"],
)
def test_a_question_without_the_old_keywords_reaches_the_reader(question: str) -> None:
    skills, issues = load_skills([SKILLS])
    assert not issues
    assert "erp-questions" in select_by_rules(SkillRegistry(skills), question, "erp").skill_ids


@pytest.mark.parametrize(
    "question", ["客户还欠多少钱", "哪家客户欠我们最多", "how much do customers owe", "客户一共还欠多少钱"]
)
def test_what_is_owed_is_read_from_the_form_that_holds_a_balance(question: str) -> None:
    r = reading(question, FINANCE)  # 销售发票, 收款单 and 应收账龄 all name 客户; only 应收账龄 holds what is owed
    assert r.form.form_id == "5001" and r.measure is not None and r.measure.column == "balance"


@pytest.mark.parametrize(
    ("question", "form_id"),
    [("哪些供应商还没付清", "5002"), ("suppliers we owe the most", "5002"), ("customers overdue", "5001")],
)
def test_money_words_and_english_labels_are_read(question: str, form_id: str) -> None:
    assert reading(question, FINANCE).form.form_id == form_id


def test_a_bill_number_label_is_said_without_its_number_word() -> None:
    r = reading("应付里逾期最久的采购单", FINANCE)
    assert r.form.form_id == "5002"


def test_a_spec_label_is_said_without_its_model_word() -> None:
    assert _asked("M0006的规格", WAREHOUSE) == ["spec"]


def test_the_latest_of_a_form_with_only_a_due_date_is_not_guessed() -> None:
    outcome = read("最新的一笔应付是哪家供应商", FINANCE, TODAY)
    assert isinstance(outcome, Refusal) and "单据日期" in outcome.text


@pytest.mark.parametrize(
    ("question", "cat", "form_id", "shape"),
    [
        ("圆锥滚子轴承有哪些型号", WAREHOUSE, "1003", "list"),
        ("深沟球轴承都有哪几种", WAREHOUSE, "1003", "list"),
        ("深沟球轴承合计还有多少", WAREHOUSE, "4001", "aggregate"),
    ],
)
def test_a_name_several_records_share_asked_as_a_list_or_a_total_takes_them_all(
    question: str, cat: Catalog, form_id: str, shape: str
) -> None:
    r = reading(question, cat)
    assert r.form.form_id == form_id and r.shape == shape
    assert "深沟球轴承" in r.filters.values() or "圆锥滚子轴承" in r.filters.values()


def test_a_name_several_records_share_asked_as_one_is_still_a_question() -> None:
    assert isinstance(read("深沟球轴承的单价", WAREHOUSE, TODAY), Ask)


@pytest.mark.parametrize(
    ("question", "form_id", "shape"),
    [
        ("应付还有多少没付", "5002", "aggregate"),
        ("还没付清的应付有几笔", "5002", "count"),
        ("哪些发票还没收回来", "5001", "list"),
        ("unpaid receivables", "5001", "list"),
    ],
)
def test_unpaid_is_a_balance_above_zero(question: str, form_id: str, shape: str) -> None:
    r = reading(question, FINANCE)
    assert r.form.form_id == form_id and r.shape == shape and r.where == [("balance", ">", 0)]


def test_unpaid_on_a_form_without_a_balance_is_named_back() -> None:
    outcome = read("没付的采购订单", ADMIN, TODAY)
    assert isinstance(outcome, Refusal) and "没付" in outcome.text


def test_a_list_asked_with_its_total_is_the_list_and_the_total_beside() -> None:
    r = reading("列出还没付清的应付和合计", FINANCE)
    assert r.form.form_id == "5002" and r.shape == "aggregate" and r.agg == "sum" and r.beside
    assert r.measure is not None and r.measure.column == "balance"


def test_unpaid_words_inside_a_fields_label_are_the_label_not_a_condition() -> None:
    """未收余额 is a field: its 未收 is no "unpaid" condition of its own (on Tryton, 未收金额 — the
    amount to pay — was refused as a form without a balance)."""
    r = reading("未收余额合计多少", FINANCE)
    assert r.measure is not None and "未收余额" in r.measure.label
    assert not any(op == ">" for _column, op, _value in r.where), r.where
    unpaid = reading("哪些应收还没收完款", FINANCE)
    assert any(op == ">" for _column, op, _value in unpaid.where), unpaid.where  # still read where said apart
