"""The offline reader of change requests on its own: writes a clerk types (删掉 / 审一下 /
转成订单 / 交期改到20天 / change the remark … to … / 给恒达做个报价，M0004两台，1300一台), read from the
demo ERP's metadata into a ``propose_write`` proposal — or a question, or which word it did not
understand. Never a wrong proposal: reads about a bill stay reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tether.erp_demo import facts
from tether.erp_demo.forms import FORMS, Form
from tether.erp_demo.meta import _filter_json
from tether.packs.erp import plans
from tether.packs.erp.metadata import Catalog, FormMeta, Seen
from tether.packs.erp.planner_rules import READER, extract
from tether.packs.erp.readings import Ask, FormFill, Proposal, Refusal
from tether.packs.erp.writes import read_change


def _fields(fields: Any) -> list[dict[str, Any]]:
    return [{"column": f.column, "label": f.label, "type": f.type, "ref": f.ref, "readOnly": f.read_only,
             "options": [{"value": v, "label": lb} for v, lb in f.options or ()]} for f in fields]  # fmt: skip


def _meta(form: Form) -> FormMeta:
    card = {"formId": form.form_id, "name": form.name, "aliases": list(form.aliases), "view": form.view}
    config = {"formId": form.form_id, "name": form.name, "view": form.view, "billNoPrefix": form.bill_prefix,
              "master": _fields(form.fields), "filters": [_filter_json(f) for f in form.filters],
              "examinable": form.examinable, "writable": form.writable,
              "detail": {"fields": _fields(form.detail_fields)} if form.detail_fields else None}  # fmt: skip
    return FormMeta.from_erp(card, config)


ROWS = [
    Seen("1001", {"code": "C0001", "name": facts.SALES01_CUSTOMER[1], "short_name": "恒达自动化"}),
    Seen("1001", {"code": "C0002", "name": "常州力拓机械有限公司", "short_name": "常州力拓"}),
    Seen("1001", {"code": "C0010", "name": "苏州力诺自动化设备有限公司"}),
    Seen("1001", {"code": "C0041", "name": "嘉兴金泰自动化设备有限公司", "short_name": "嘉兴金泰"}),
    Seen("1001", {"code": "C0022", "name": "成都海川精密五金有限公司", "short_name": "成都海川"}),
    *(Seen("1003", {"code": c, "name": n, "spec": s}) for c, n, s, *_ in facts.BRAND_1_MATERIALS),
]
CATALOG = Catalog([_meta(f) for f in FORMS], ROWS)
SALES = Catalog([_meta(f) for f in FORMS if f.form_id in ("1001", "1003", "2001", "2002")], ROWS)


def _args(request: str, catalog: Catalog = CATALOG) -> dict[str, Any]:
    outcome = read_change(request, catalog)
    assert isinstance(outcome, Proposal), (request, outcome)
    return outcome.args


@pytest.mark.parametrize(
    "request_",
    [
        "QT202612-0006这张不要了，删掉吧",
        "删掉QT202612-0006",
        "把QT202612-0006作废",
        "QT202612-0006删了吧",
        "please delete quotation QT202612-0006",
        "remove QT202612-0006",
    ],
)
def test_delete_in_many_words_is_a_delete_proposal(request_: str) -> None:
    assert _args(request_) == {"form_id": "2001", "op": "delete", "record_id": "QT202612-0006"}


@pytest.mark.parametrize(
    ("request_", "form_id"),
    [
        ("帮我把QT202601-0005审一下", "2001"),
        ("QT202601-0005审核一下", "2001"),
        ("审批SO202612-0002", "2002"),
        ("approve QT202601-0005", "2001"),
        ("please examine sales order so202612-0002", "2002"),
        ("能帮我把QT202601-0005审核了吗？", "2001"),
    ],
)
def test_examine_in_many_words_names_the_form_by_the_bill_prefix(request_: str, form_id: str) -> None:
    bill = request_.upper().split("QT")[-1] if "QT" in request_.upper() else None
    args = _args(request_)
    assert args["op"] == "examine" and args["form_id"] == form_id
    assert args["record_id"] == ("QT" + bill[:11] if bill else "SO202612-0002")


@pytest.mark.parametrize(
    ("request_", "source", "target"),
    [
        ("QT202612-0003转成订单", "2001", "2002"),
        ("把QT202612-0003转为销售订单", "2001", "2002"),
        ("QT202612-0003下推销售订单", "2001", "2002"),
        ("SO202612-0001生成发货单", "2002", "2003"),
        ("SO202612-0001转发货", "2002", "2003"),
        ("convert QT202612-0003 to a sales order", "2001", "2002"),
        ("generate a delivery from SO202612-0001", "2002", "2003"),
    ],
)
def test_generate_names_the_downstream_bill_by_its_name_or_alias(request_: str, source: str, target: str) -> None:
    args = _args(request_)
    assert args["op"] == "generate" and args["form_id"] == target
    assert args["source_ref"]["formId"] == source


@pytest.mark.parametrize(
    ("request_", "payload"),
    [
        ("QT202612-0001交期改到20天", {"delivery_days": 20}),
        ("把QT202612-0001的交期改成二十天", {"delivery_days": 20}),
        ("QT202612-0001交货期调整为15", {"delivery_days": 15}),
        ("把报价单QT202612-0001的备注改为尽快发货", {"remark": "尽快发货"}),
        ('change the remark of quotation QT202612-0001 to "price confirmed"', {"remark": "price confirmed"}),
        ("set the delivery days of QT202612-0001 to 30", {"delivery_days": 30}),
        ("update QT202612-0001's remark to urgent", {"remark": "urgent"}),
        ("把报价单QT202612-0001第1行的单价改成1300", {"details": [{"line_no": 1, "unit_price": 1300}]}),
        ("QT202612-0001第2行数量改成50个", {"details": [{"line_no": 2, "qty": 50}]}),
        ("change the price of line 1 of QT202612-0001 to 99.5", {"details": [{"line_no": 1, "unit_price": 99.5}]}),
        ("QT202612-0001的税率改成9", {"tax_rate": 9}),
        ("修改QT202612-0001的交期为20天", {"delivery_days": 20}),
        ("QT202612-0001的M0004单价改成1300", {"details": [{"material_id": "M0004", "unit_price": 1300}]}),
        ("把QT202612-0001里的备注改成不要删除", {"remark": "不要删除"}),  # the value is not the command
        ("change QT202612-0001 delivery days to 30", {"delivery_days": 30}),
    ],
)
def test_update_reads_the_field_from_the_form_labels(request_: str, payload: dict[str, Any]) -> None:
    assert _args(request_) == {"form_id": "2001", "op": "update", "record_id": "QT202612-0001", "payload": payload}


@pytest.mark.parametrize(
    ("request_", "payload"),
    [
        (
            "帮我给恒达做个报价，M0004两台，1300一台",
            {"customer_id": "C0001", "details": [{"material_id": "M0004", "qty": 2, "unit_price": 1300}]},
        ),
        (
            "quote 恒达自动化 for 5 pcs of M0003 at 45 each",
            {"customer_id": "C0001", "details": [{"material_id": "M0003", "qty": 5, "unit_price": 45}]},
        ),
        (
            "给常州力拓做个报价：M0001 100个，单价18；M0013 20个，单价56",
            {
                "customer_id": "C0002",
                "details": [
                    {"material_id": "M0001", "qty": 100, "unit_price": 18},
                    {"material_id": "M0013", "qty": 20, "unit_price": 56},
                ],
            },
        ),
        ("给恒达出个报价，M0003 十个", {"customer_id": "C0001", "details": [{"material_id": "M0003", "qty": 10}]}),
    ],
)
def test_a_quote_with_its_lines_resolves_customer_and_materials(request_: str, payload: dict[str, Any]) -> None:
    assert _args(request_) == {"form_id": "2001", "op": "create", "payload": payload}


@pytest.mark.parametrize(
    "request_",
    [
        "QT202612-0001审核了吗？",
        "QT202612-0001是谁审核的",
        "QT202612-0003生成了哪些订单",
        "QT202612-0006被删除了吗",
        "QT202612-0001的交期是多少",
        "has QT202612-0001 been approved?",
        "QT202612-0001",
        "哪些报价单还没审核？",
    ],
)
def test_questions_about_a_bill_stay_reads(request_: str) -> None:
    assert read_change(request_, CATALOG) is None


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        ("QT202612-0001的颜色改成红色", "颜色"),  # no such field
        ("QT202612-0001交期改到下个月", "下个月"),  # not a number of days
        ("QT202612-0001的含税合计改成100", "含税合计"),  # computed
        ("XX202612-0001删掉", "XX202612-0001"),  # no form numbers bills like that
        ("QT202612-0003转成火箭", "火箭"),  # no such bill to generate
        ("QT202612-0001的备注改成${ctx.token}", "备注"),  # a template is never a value
        ("QT202612-0001单价改成1300", "哪一行"),  # a line's field without its line
        ("审核销售订单QT202612-0001", "是报价单"),  # the bill number says another form
        ("删除QT202612-0006和QT202612-0007", "一张"),  # one bill at a time
        ("撤销审核QT202612-0001", "不能"),  # the opposite of examine is not examine
        ("QT202612-0001的审核撤销", "不能"),
        ("先别删QT202612-0006", "不能"),
        ("don't delete QT202612-0006", "can't"),
    ],
)
def test_what_it_does_not_understand_is_said_not_guessed(request_: str, said: str) -> None:
    outcome = read_change(request_, CATALOG)
    assert isinstance(outcome, Refusal), outcome
    assert said in outcome.text


def test_a_bill_to_generate_named_by_a_word_of_several_forms_is_asked_then_taken() -> None:
    orders = next(f for f in CATALOG.forms if f.form_id == "2002")
    contracts = replace(orders, form_id="2009", name="框架合同", aliases=("订单", "contract"), bill_prefix="FC")
    catalog = Catalog([*CATALOG.forms, contracts], ROWS)  # 订单 now names two forms
    ask = read_change("QT202612-0003转成订单", catalog)
    assert isinstance(ask, Ask) and sorted(ask.options) == ["框架合同", "销售订单"]
    chosen = read_change("QT202612-0003转成订单", catalog, prefer="框架合同")
    assert isinstance(chosen, Proposal) and chosen.args["form_id"] == "2009"


def test_a_field_named_without_its_unit_is_taken_and_one_of_several_is_asked_then_taken() -> None:
    assert _args("把QT202612-0001的交期改成5")["payload"] == {"delivery_days": 5}  # 交期(天)
    assert _args("QT202612-0001的税率改成9")["payload"] == {"tax_rate": 9}  # 税率(%)
    quotations = next(f for f in CATALOG.forms if f.form_id == "2001")
    weeks = replace(quotations.fields[0], column="delivery_weeks", label="交期（周）", type="integer", read_only=False)
    catalog = Catalog([replace(quotations, fields=(*quotations.fields, weeks))], ROWS)  # 交期 now names two fields
    ask = read_change("把QT202612-0001的交期改成5", catalog)
    assert isinstance(ask, Ask) and sorted(ask.options) == ["交期(天)", "交期（周）"]
    chosen = read_change("把QT202612-0001的交期改成5", catalog, prefer="交期（周）")
    assert isinstance(chosen, Proposal) and chosen.args["payload"] == {"delivery_weeks": 5}


def test_a_customer_named_by_a_word_of_several_is_asked_then_taken() -> None:
    outcome = read_change("给自动化做个报价，M0004两台", CATALOG)  # 恒达, 力诺 and 金泰自动化
    assert isinstance(outcome, Ask)
    assert len(outcome.options) == 3
    chosen = read_change("给自动化做个报价，M0004两台", CATALOG, prefer=outcome.options[1])
    assert isinstance(chosen, Proposal)
    assert chosen.args["payload"]["customer_id"] == outcome.options[1].split()[0]


def test_a_form_the_user_lacks_is_never_proposed() -> None:
    outcome = read_change("SO202612-0001生成发货单", SALES)  # sales01's catalog here has no 发货单
    assert isinstance(outcome, Refusal)


def test_the_plan_is_one_proposal_and_its_answer() -> None:
    chosen = plans.plan_of(Proposal({"form_id": "2001", "op": "delete", "record_id": "QT202612-0006"}), "x")
    assert [s["tool"] for s in chosen["plan"]] == ["propose_write"]
    assert chosen["answer"] == "${prev.text}"


@pytest.mark.parametrize(
    "request_",
    [
        "QT202612-0006这张不要了，删掉吧",
        "帮我把QT202601-0005审一下",
        "QT202612-0003转成订单",
        "帮我给恒达做个报价，M0004两台，1300一台",
    ],
)
def test_the_planner_sends_colloquial_changes_to_the_reader(request_: str) -> None:
    assert extract(request_, {})["erp"] is READER


@pytest.mark.parametrize("request_", ["QT202612-0001", "QT202612-0001审核了吗？", "新建一张报价单给恒达自动化"])
def test_the_planner_keeps_reads_and_the_form_path(request_: str) -> None:
    assert extract(request_, {})["erp"] is not READER or "审核了吗" in request_


def test_materials_the_reader_cannot_see_go_to_the_proposal_by_code_only() -> None:
    """sales01 is not granted 物料档案: the code goes as said, propose_write resolves it (or asks)."""
    no_materials = Catalog(SALES.forms, [r for r in ROWS if r.form_id != "1003"])
    args = _args("quote 恒达自动化 for 5 pcs of M0003 at 45 each", no_materials)
    assert args["payload"]["details"] == [{"material_id": "M0003", "qty": 5, "unit_price": 45}]
    fallback = read_change("给恒达做个报价，深沟球轴承两个", no_materials)
    assert isinstance(fallback, FormFill) and fallback.prefill == {"customer_id": "C0001"}


@pytest.mark.parametrize(
    "request_", ["撤销审核报价单QT202612-0001", "反审核报价单QT202612-0001", "不要删除报价单QT202612-0006"]
)
def test_the_pinned_rules_never_take_an_undone_op(request_: str) -> None:
    assert extract(request_, {})["erp"] is READER  # the change reader refuses it
    assert isinstance(read_change(request_, CATALOG), Refusal)


@pytest.mark.parametrize(
    ("request_", "customer", "line"),
    [
        # the verb however it is said, the customer before or after it, with or without a colon
        ("帮嘉兴金泰开张报价单，深沟球轴承6205 50个，每个18块", "C0041", ("M0002", 50, 18)),
        ("嘉兴金泰要2000个圆锥滚子轴承30205，单价46，做张报价单", "C0041", ("M0003", 2000, 46)),
        ("给嘉兴金泰报价，深沟球轴承6205-2RS 50个，单价18元", "C0041", ("M0002", 50, 18)),
        ("来一张报价单：成都海川，M0010 12根，268元一根", "C0022", ("M0010", 12, 268)),
        ("开一张报价单给成都海川 标准气缸 20个 每个210", "C0022", ("M0011", 20, 210)),
        ("出个报价单给成都海川，单价165，接近开关 60个", "C0022", ("M0019", 60, 165)),  # the price first
        ("帮我给成都海川做张报价单：30205圆锥滚子轴承 80个 单价45块", "C0022", ("M0003", 80, 45)),  # the spec first
        ("成都海川要直线导轨HGR20 40根，每根385块，出个报价单", "C0022", ("M0009", 40, 385)),
        ("new quote for 成都海川, 10 pcs of M0013 at 55 each", "C0022", ("M0013", 10, 55)),
    ],
)
def test_a_quote_in_a_clerks_words_is_a_complete_proposal(
    request_: str, customer: str, line: tuple[str, int, int]
) -> None:
    material, qty, price = line
    details = [{"material_id": material, "qty": qty, "unit_price": price}]
    assert _args(request_) == {
        "form_id": "2001",
        "op": "create",
        "payload": {"customer_id": customer, "details": details},
    }


@pytest.mark.parametrize(
    ("request_", "prefill", "unclear"),
    [
        ("给恒达做个报价，M9999两台", {"customer_id": "C0001"}, "M9999"),  # no such material
        ("给大华做个报价，M0004两台", {"details": [{"material_id": "M0004", "qty": 2}]}, "大华"),  # no such customer
        ("给恒达做个报价，M0004", {"customer_id": "C0001"}, "M0004"),  # no quantity
        ("帮成都海川开张报价单，飞轮组件 3套", {"customer_id": "C0022"}, "飞轮组件"),
        ("给成都海川做个报价，深沟球轴承 5个", {"customer_id": "C0022"}, "M0001"),  # which of two 深沟球轴承
        ("开张报价单", {}, "客户"),
    ],
)
def test_a_quote_it_cannot_finish_is_the_form_prefilled_with_what_it_understood(
    request_: str, prefill: dict[str, Any], unclear: str
) -> None:
    outcome = read_change(request_, CATALOG)
    assert isinstance(outcome, FormFill), outcome
    assert (outcome.form_id, outcome.prefill) == ("2001", prefill)
    assert unclear in " ".join(outcome.unclear)
    plan = plans.plan_of(outcome, request_)["plan"]
    assert [s["tool"] for s in plan] == ["collect_form", "propose_write"]
    assert plan[0]["args"] == {"form_id": "2001", "prefill": prefill}


@pytest.mark.parametrize(
    ("request_", "payload"),
    [
        ("把QT202612-0006的那个交期改成30天", {"delivery_days": 30}),
        ("QT202612-0006这张单子的备注改一下，改成周五前发货", {"remark": "周五前发货"}),
        ("把QT202612-0006这张报价单的交期改为12天", {"delivery_days": 12}),
    ],
)
def test_words_between_the_bill_and_the_field_do_not_hide_the_field(request_: str, payload: dict[str, Any]) -> None:
    assert _args(request_) == {"form_id": "2001", "op": "update", "record_id": "QT202612-0006", "payload": payload}
