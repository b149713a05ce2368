"""The offline planner's writes read by role, not by the demo ERP's form ids: on a catalog shaped as
Tryton's port answers it (``sale.sale``: a party, lines of products, a state that is a quotation,
no bill prefix — a draft named by its id, as Tryton names it: (1)), a clerk's new quotation, field
change, line change, examine and delete become proposals on that form; the pinned rules that name
the demo's forms stay the demo's."""

from __future__ import annotations

from typing import Any

import pytest

from tether.packs.erp.metadata import Catalog, FormMeta, Seen
from tether.packs.erp.new_bills import party_field, quoted
from tether.packs.erp.planner_rules import READER, extract, extract_off_demo
from tether.packs.erp.readings import FormFill, Proposal
from tether.packs.erp.writes import read_change

SALE, PARTY, PRODUCT = "329", "110", "214"


def _ref(column: str, label: str, ref: str) -> dict[str, Any]:
    return {"column": column, "label": label, "type": "ref", "ref": ref}


STATES = [
    {"value": "draft", "label": "草稿"},
    {"value": "quotation", "label": "报价"},
    {"value": "confirmed", "label": "已确认"},
]
SALE_CONFIG = {
    "formId": SALE,
    "name": "销售订单",
    "billNoPrefix": None,
    "writable": True,
    "examinable": True,
    "master": [
        {"column": "number", "label": "单号", "type": "text", "readOnly": True},
        _ref("party_id", "客户", PARTY),
        {"column": "party_name", "label": "客户", "type": "text", "readOnly": True},
        {"column": "state", "label": "状态", "type": "select", "readOnly": True, "options": STATES},
        {"column": "description", "label": "说明", "type": "text"},
        {"column": "reference", "label": "客户参考号", "type": "text"},
    ],
    "detail": {
        "fields": [
            _ref("material_id", "产品", PRODUCT),
            {"column": "qty", "label": "数量", "type": "number"},
            {"column": "unit_price", "label": "单价", "type": "number"},
        ]
    },
    "filters": [],
}
ROWS = [
    Seen(PARTY, {"code": "C001", "name": "华东机电设备有限公司"}),
    Seen(PARTY, {"code": "C002", "name": "北方重工集团"}),
    Seen(PRODUCT, {"code": "P003", "name": "深沟球轴承 6204"}),
    Seen(PRODUCT, {"code": "P012", "name": "安全帽"}),
]
TRYTON = Catalog(
    [
        FormMeta.from_erp({"formId": SALE, "name": "销售订单"}, SALE_CONFIG),
        FormMeta.from_erp({"formId": PARTY, "name": "往来单位"}, {"formId": PARTY, "name": "往来单位"}),
    ],
    ROWS,
)


def _args(request: str) -> dict[str, Any]:
    outcome = read_change(request, TRYTON)
    assert isinstance(outcome, Proposal), (request, outcome)
    return outcome.args


def test_the_sales_form_is_found_by_its_roles_a_party_and_a_quotation_state() -> None:
    sale = TRYTON.forms[0]
    party = party_field(sale)
    assert party is not None and party.column == "party_id"
    assert quoted(sale) and not quoted(TRYTON.forms[1])


@pytest.mark.parametrize(
    ("request_", "payload"),
    [
        ("给华东机电开张报价单，P003 5个，单价100", {"party_id": "C001", "details": [{"material_id": "P003", "qty": 5.0, "unit_price": 100.0}]}),
        ("new quote for 北方重工集团, 10 pcs of P003 at 55 each", {"party_id": "C002", "details": [{"material_id": "P003", "qty": 10.0, "unit_price": 55.0}]}),
        ("北方重工要20个安全帽，单价24，做张报价单", {"party_id": "C002", "details": [{"material_id": "P012", "qty": 20.0, "unit_price": 24.0}]}),
    ],
)  # fmt: skip
def test_a_new_quotation_in_a_clerks_words_is_a_sale_on_the_party_column(
    request_: str, payload: dict[str, Any]
) -> None:
    assert _args(request_) == {"form_id": SALE, "op": "create", "payload": payload}


def test_a_quotation_without_its_lines_is_the_sales_form_to_fill() -> None:
    outcome = read_change("开张报价单", TRYTON)
    assert isinstance(outcome, FormFill) and outcome.form_id == SALE and outcome.prefill == {}


@pytest.mark.parametrize(
    ("request_", "args"),
    [
        ("把销售订单(1)的说明改成周五前发货", {"op": "update", "record_id": "1", "payload": {"description": "周五前发货"}}),
        ("change the description of sale (2) to deliver before Friday", {"op": "update", "record_id": "2", "payload": {"description": "deliver before Friday"}}),
        ("把销售订单（1）的P001的数量改成600", {"op": "update", "record_id": "1", "payload": {"details": [{"material_id": "P001", "qty": 600}]}}),
        ("审核销售订单(2)", {"op": "examine", "record_id": "2"}),
        ("删除销售订单(1)", {"op": "delete", "record_id": "1"}),
    ],
)  # fmt: skip
def test_a_draft_named_by_its_id_is_changed_quoted_or_deleted(request_: str, args: dict[str, Any]) -> None:
    assert _args(request_) == {"form_id": SALE, **args}


@pytest.mark.parametrize("request_", ["删除销售订单 3", "别删销售订单(1)", "销售订单(1)删除了吗"])
def test_a_bare_number_a_negated_op_or_a_question_is_no_proposal(request_: str) -> None:
    assert not isinstance(read_change(request_, TRYTON), Proposal)


def test_the_pinned_rules_naming_the_demo_forms_stay_the_demos() -> None:
    quote = "给华东机电报价：P003 5个，单价100"
    assert extract(quote, {})["erp"]["plan"][0]["args"]["form_id"] == "2001"
    assert extract_off_demo(quote, {})["erp"] == READER  # on Tryton the reader reads it from the metadata
    assert extract_off_demo("新建一张报价单给华东机电", {})["erp"] == READER
    assert extract_off_demo("把报价单QT202612-0006的备注改成加急", {})["erp"] == READER


def test_on_the_demo_erp_an_id_in_parentheses_names_no_record() -> None:
    from tests.packs.erp.test_erp_writes_reader import CATALOG as DEMO

    for request_ in ("删除客户档案(1)", "把报价单(3)的备注改成加急", "删除(2)"):
        assert not isinstance(read_change(request_, DEMO), Proposal), request_


def test_a_change_of_a_draft_by_its_id_is_the_readers_whatever_words_its_new_value_holds() -> None:
    # 逾期催收 would be the overdue-receivables rule's, on the demo's form 5001
    assert extract_off_demo("把销售订单(1)的说明改成逾期催收", {})["erp"] == READER
    assert _args("把销售订单(1)的说明改成逾期催收")["payload"] == {"description": "逾期催收"}
