"""An ERP that speaks two languages (Tryton's zh_CN and en): a form, a field or an option is found
by its name in either, and the answer is worded in the user's own labels; what a word of the
language itself says (an English "Total", "Number") stays the question's shape, never a field.
Also the readings the Tryton suite lacked, on forms shaped like Tryton's (issue 38): the stock a
product form holds (还剩, 库存), what is unpaid or owed on a form whose label says 未收, and a
reference field's label naming the form it refers to (上海有哪些客户). The catalog is built with
``tryton_forms`` from ``fields_get``-shaped specs; the real Tryton is tests/tryton's."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from tether.packs.erp.metadata import Catalog, FormMeta, Seen
from tether.packs.erp.reader import read
from tether.packs.erp.readings import Reading, Refusal
from tether.packs.erp.tryton_forms import add_aliases, field_meta, filters_of

TODAY = date(2026, 11, 30)
STATES = {"zh_CN": [["draft", "草稿"], ["posted", "已过账"], ["paid", "已收款"]],
          "en": [["draft", "Draft"], ["posted", "Posted"], ["paid", "Paid"]]}  # fmt: skip
SALE_STATES = {
    "zh_CN": [["draft", "草稿"], ["quotation", "报价"]],
    "en": [["draft", "Draft"], ["quotation", "Quotation"]],
}
# form id, model, name per language, fields: (name, type, label per language, relation or options)
FORMS: list[tuple[str, str, dict[str, str], list[tuple[str, str, dict[str, str], Any]]]] = [
    (
        "110",
        "party.party",
        {"zh_CN": "往来单位", "en": "Party"},
        [
            ("code", "char", {"zh_CN": "编码", "en": "Code"}, None),
            ("name", "char", {"zh_CN": "名称", "en": "Name"}, None),
            ("city", "char", {"zh_CN": "城市", "en": "City"}, None),
        ],
    ),
    (
        "214",
        "product.product",
        {"zh_CN": "产品", "en": "Product"},
        [
            ("code", "char", {"zh_CN": "产品编码", "en": "Code"}, None),
            ("name", "char", {"zh_CN": "产品名称", "en": "Name"}, None),
            ("list_price_used", "numeric", {"zh_CN": "售价", "en": "List Price"}, None),
            ("quantity", "float", {"zh_CN": "库存数量", "en": "Quantity"}, None),
        ],
    ),
    (
        "278",
        "account.invoice",
        {"zh_CN": "发票", "en": "Account Invoice"},
        [
            ("number", "char", {"zh_CN": "发票号", "en": "Number"}, None),
            ("party", "many2one", {"zh_CN": "客户", "en": "Party"}, "party.party"),
            ("state", "selection", {"zh_CN": "状态", "en": "State"}, STATES),
            ("total_amount", "numeric", {"zh_CN": "含税合计", "en": "Total"}, None),
            ("amount_to_pay", "numeric", {"zh_CN": "未收金额", "en": "Amount to Pay"}, None),
        ],
    ),
    (
        "329",
        "sale.sale",
        {"zh_CN": "销售订单", "en": "Sale"},
        [
            ("number", "char", {"zh_CN": "单号", "en": "Number"}, None),
            ("party", "many2one", {"zh_CN": "客户", "en": "Party"}, "party.party"),
            ("state", "selection", {"zh_CN": "状态", "en": "State"}, SALE_STATES),
            ("total_amount", "numeric", {"zh_CN": "含税合计", "en": "Total"}, None),
        ],
    ),
]
ROWS = [
    Seen("110", {"code": "C001", "name": "天府食品有限公司", "city": "杭州"}),
    Seen("110", {"code": "C002", "name": "浦江医疗器械有限公司", "city": "上海"}),
    Seen("214", {"code": "P001", "name": "联轴器"}),
    Seen("214", {"code": "P002", "name": "减速机"}),
    Seen("278", {"party_name": "天府食品有限公司"}),
    Seen("329", {"party_name": "浦江医疗器械有限公司"}),
]


def _layout(fields: list[tuple[str, str, dict[str, str], Any]], language: str) -> tuple[list[Any], list[Any]]:
    specs: dict[str, dict[str, Any]] = {}
    for name, kind, labels, extra in fields:
        spec: dict[str, Any] = {"type": kind, "string": labels[language]}
        if kind == "many2one":
            spec["relation"] = extra
        if kind == "selection":
            spec["selection"] = extra[language]
        specs[name] = spec
    master = [m for n, spec in specs.items() for m in field_meta(n, spec)]
    return master, filters_of(list(specs.items()))


def catalog(language: str, granted: tuple[str, ...] = ("110", "214", "278", "329")) -> Catalog:
    other = "en" if language == "zh_CN" else "zh_CN"
    ids = {model: form_id for form_id, model, _, _ in FORMS}
    metas = []
    for form_id, _model, names, fields in FORMS:
        master, filters = _layout(fields, language)
        twin_master, twin_filters = _layout(fields, other)
        add_aliases(master, twin_master, "column")
        add_aliases(filters, twin_filters, "name")
        for f in master:  # as the adapter gives them: a reference by the form's id
            f["ref"] = ids.get(f["ref"], f["ref"])
        card = {"formId": form_id, "name": names[language], "aliases": [names[other]]}
        config = {"formId": form_id, "name": names[language], "master": master, "filters": filters}
        metas.append(FormMeta.from_erp(card, config, frozenset(str(f["column"]) for f in master)))
    forms = [f for f in metas if f.form_id in granted]
    denied = [f for f in metas if f.form_id not in granted]
    return Catalog(forms, [r for r in ROWS if r.form_id in granted], denied=denied)


ZH, EN = catalog("zh_CN"), catalog("en")


def reading(question: str, cat: Catalog) -> Reading:
    r = read(question, cat, TODAY)
    assert isinstance(r, Reading), (question, r)
    return r


@pytest.mark.parametrize(
    ("question", "form_id", "shape", "filters"),
    [
        ("一共有多少个往来单位", "110", "count", {}),
        ("有多少张发票已经过账了", "278", "count", {"state": "posted"}),
        ("过账了的发票有几张", "278", "count", {"state": "posted"}),
        ("浦江医疗器械有限公司的销售订单", "329", "list", {"party_name": "浦江医疗器械有限公司"}),
    ],
)
def test_a_user_of_the_other_language_is_read_by_the_forms_fields_and_options_in_either(
    question: str, form_id: str, shape: str, filters: dict[str, str]
) -> None:
    r = reading(question, EN)
    assert (r.form.form_id, r.shape, r.filters) == (form_id, shape, filters)
    if "state" in filters:
        assert r.said == ["State = Posted"]  # said in the user's own labels


def test_english_words_of_a_chinese_user_find_forms_and_options() -> None:
    r = reading("which sales are still quotations?", ZH)
    assert (r.form.form_id, r.filters) == ("329", {"state": "quotation"})
    r = reading("show me the sales orders of 浦江医疗器械有限公司", ZH)
    assert (r.form.form_id, r.filters) == ("329", {"party_name": "浦江医疗器械有限公司"})


def test_an_english_label_that_is_a_word_of_the_shape_is_not_a_field() -> None:
    """ "Total" is the sale's and the invoice's total amount in English, and the question's sum."""
    r = reading("what is the total amount still to be paid on our customer invoices?", ZH)
    assert (r.form.form_id, r.shape, r.agg) == ("278", "aggregate", "sum")
    assert r.measure is not None and r.measure.column == "amount_to_pay"
    assert r.where == [("amount_to_pay", ">", 0)] and r.filters == {}


@pytest.mark.parametrize("question", ["哪些发票还没收款", "哪些发票客户还没付款"])
def test_unpaid_is_an_amount_to_pay_above_zero_on_a_form_whose_label_says_unpaid(question: str) -> None:
    r = reading(question, ZH)
    assert (r.form.form_id, r.where, r.filters) == ("278", [("amount_to_pay", ">", 0)], {})


def test_what_a_party_owes_is_read_from_the_one_form_of_its_records_holding_what_is_unpaid() -> None:
    r = reading("天府食品有限公司还欠我们多少钱", ZH)
    assert (r.form.form_id, r.shape, r.agg, r.filters) == (
        "278",
        "aggregate",
        "sum",
        {"party_name": "天府食品有限公司"},
    )
    assert r.measure is not None and r.measure.column == "amount_to_pay"


@pytest.mark.parametrize("question", ["联轴器还剩几个", "联轴器剩几个", "减速机库存多少", "减速机还有多少库存"])
def test_what_is_left_of_a_product_is_the_sum_of_its_stock_quantity(question: str) -> None:
    r = reading(question, ZH)
    assert (r.form.form_id, r.shape, r.agg) == ("214", "aggregate", "sum")
    assert r.measure is not None and r.measure.column == "quantity" and r.beside


def test_a_price_asked_as_what_it_sells_for_is_the_list_price() -> None:
    r = reading("联轴器卖多少钱", ZH)
    assert r.form.form_id == "214" and r.filters == {"name": "联轴器"}
    asked = [r.measure] if r.measure is not None else r.asked
    assert [f.column for f in asked] == ["list_price_used"]


@pytest.mark.parametrize(("question", "city"), [("上海有哪些客户", "上海"), ("list the customers in 杭州", "杭州")])
def test_a_reference_fields_label_names_the_form_it_refers_to_when_no_form_is_named(question: str, city: str) -> None:
    r = reading(question, ZH)
    assert (r.form.form_id, r.shape, r.filters) == ("110", "list", {"city": city})


def test_the_customer_of_a_named_form_stays_that_forms_field() -> None:
    r = reading("浦江医疗器械有限公司的销售订单有几张", ZH)
    assert (r.form.form_id, r.shape) == ("329", "count")


def test_a_form_not_granted_is_refused_by_its_name_in_either_language() -> None:
    sales = catalog("zh_CN", granted=("110", "214", "329"))
    r = read("show me the account invoices that are posted", sales, TODAY)
    assert isinstance(r, Refusal) and r.outcome == "not_granted" and "发票" in r.text
