"""The proposal's diff and the schema check, as pure functions over ERP-shaped answers."""

from __future__ import annotations

from typing import Any

from tether.packs.erp.diff import field_changes, merge_lines
from tether.packs.erp.schema import check_form_values

CONFIG: dict[str, Any] = {
    "formId": "2001",
    "master": [
        {"column": "bill_no", "label": "单号", "type": "text", "readOnly": True},
        {"column": "customer_id", "label": "客户", "type": "ref", "ref": "1001", "required": True},
        {"column": "bill_date", "label": "单据日期", "type": "date", "required": True, "default": "today"},
        {"column": "delivery_days", "label": "交期(天)", "type": "integer"},
        {"column": "remark", "label": "备注", "type": "textarea", "maxLength": 10},
        {"column": "status", "label": "状态", "type": "select", "readOnly": True, "options": []},
        {"column": "terms", "label": "账期", "type": "select", "options": [{"value": "30", "label": "30天"}]},
    ],
    "detail": {
        "fields": [
            {"column": "material_id", "label": "物料", "type": "ref", "ref": "1003", "required": True},
            {"column": "qty", "label": "数量", "type": "number", "required": True},
            {"column": "unit_price", "label": "单价", "type": "number"},
            {"column": "amount", "label": "金额", "type": "number", "readOnly": True},
        ]
    },
}
LINES = [
    {"line_no": 1, "material_id": "m1", "material_code": "M0001", "qty": 5, "unit_price": 18.5, "amount": 92.5},
    {"line_no": 2, "material_id": "m2", "material_code": "M0002", "qty": 3, "unit_price": 22, "amount": 66},
]


def test_a_label_is_also_named_without_its_bracketed_unit_unless_that_names_several() -> None:
    fields = [
        {"column": "delivery_days", "label": "交期(天)", "type": "integer"},
        {"column": "tax_rate", "label": "税率（%）", "type": "number"},  # full-width brackets
        {"column": "lead_weeks", "label": "周期(周)", "type": "integer"},
        {"column": "lead_days", "label": "周期(天)", "type": "integer"},
        {"column": "remark", "label": "备注", "type": "text"},
        {"column": "remark_x", "label": "备注(内部)", "type": "text"},
    ]
    config = {"formId": "9", "master": fields}
    clean, problems = check_form_values(config, {"交期": "5", "税率": "9", "备注": "x"}, creating=False)
    assert problems == [] and clean == {"delivery_days": 5, "tax_rate": 9, "remark": "x"}  # 备注: the exact label
    clean, problems = check_form_values(config, {"周期": "3", "周期(周)": "2"}, creating=False)
    assert clean == {"lead_weeks": 2}  # the full label still names its field
    assert [(p["field"], p["code"]) for p in problems] == [("周期", "ambiguous_field")]
    assert "周期(周), 周期(天)" in problems[0]["message"]


def test_values_by_label_or_column_typed_and_checked() -> None:
    clean, problems = check_form_values(
        CONFIG,
        {"客户": "C0001", "交期(天)": "7", "账期": "30天", "details": [{"物料": "M1", "数量": "2"}]},
        creating=True,
    )
    assert problems == []
    assert clean == {
        "customer_id": "C0001",
        "delivery_days": 7,
        "terms": "30",
        "details": [{"material_id": "M1", "qty": 2}],
    }
    _, problems = check_form_values(
        CONFIG, {"单号": "x", "备注": "太长了太长了太长了太长了", "foo": 1, "details": [{"数量": "x"}]}, creating=True
    )
    codes = {p["field"]: p["code"] for p in problems}  # the chat page shows each code in the UI's language
    assert codes == {
        "单号": "read_only",
        "remark": "max_length",
        "foo": "unknown",
        "details.0.qty": "type",
        "details.0.material_id": "required",
        "customer_id": "required",
    }
    assert len(problems) == len(codes)  # one problem per field: a wrong value is not also reported missing
    _, problems = check_form_values(CONFIG, {"客户": "C1", "bill_date": "3月", "terms": "60"}, creating=True)
    assert {p["field"]: p["code"] for p in problems} == {"bill_date": "date", "terms": "option"}


def test_master_diff_names_the_current_reference() -> None:
    before = {"customer_id": "c1", "customer_code": "C0001", "customer_name": "恒达", "remark": "a", "delivery_days": 7}
    changes = field_changes(
        CONFIG, before, {"customer_id": "c2", "remark": "b", "delivery_days": 7}, {"customer_id": "C0002 力拓"}
    )
    assert changes == [
        {"field": "customer_id", "label": "客户", "before": "C0001 恒达", "after": "C0002 力拓"},
        {"field": "remark", "label": "备注", "before": "a", "after": "b"},
    ]


def test_lines_are_matched_by_line_number_or_material() -> None:
    wanted: list[dict[str, Any]] = [
        {"line_no": 2, "qty": 4},
        {"material_id": "m1", "unit_price": 17},
        {"material_id": "m3", "qty": 1},
    ]
    merged, changes, problems = merge_lines(CONFIG, LINES, wanted, {})
    assert problems == []
    assert merged == [
        {"material_id": "m1", "qty": 5, "unit_price": 17},
        {"material_id": "m2", "qty": 4, "unit_price": 22},
        {"material_id": "m3", "qty": 1},
    ]
    assert [(c["lineNo"], c["change"]) for c in changes] == [(2, "update"), (1, "update"), (3, "add")]
    assert changes[0]["fields"] == [{"field": "qty", "label": "数量", "before": 3, "after": 4}]
    merged, changes, _ = merge_lines(CONFIG, LINES, [{"line_no": 1, "_delete": True}], {})
    assert merged == [{"material_id": "m2", "qty": 3, "unit_price": 22}] and changes[0]["change"] == "delete"
    _, _, missing = merge_lines(CONFIG, LINES, [{"line_no": 9, "qty": 1}], {})
    assert missing == [9]


def test_each_changed_line_says_where_it_is_in_the_whole_bill() -> None:
    """An update's payload holds every line of the bill (the kept ones in order, then the new
    ones); the edit form finds a changed line there by its change's ``detailIndex`` — after a
    deleted line, one place earlier. Sent back whole (``whole``), the bill diffs as the lines
    retyped, and a line it leaves out stays deleted."""
    three = [*LINES, {"line_no": 3, "material_id": "m3", "material_code": "M0003", "qty": 1, "unit_price": 9}]
    wanted: list[dict[str, Any]] = [
        {"line_no": 3, "qty": 2},
        {"line_no": 1, "_delete": True},
        {"material_id": "m4", "qty": 7},
    ]
    merged, changes, missing = merge_lines(CONFIG, three, wanted, {})
    assert missing == []
    placed = {(c["lineNo"], c["change"]): c.get("detailIndex") for c in changes}
    assert placed == {(3, "update"): 1, (1, "delete"): None, (4, "add"): 2}, placed
    assert [merged[c["detailIndex"]]["material_id"] for c in changes if "detailIndex" in c] == ["m3", "m4"]
    assert merged[1]["qty"] == 2 and changes[0]["material"] == "M0003"
    # the whole bill sent back (an edit's payload) with line 3's quantity retyped: line 1 stays deleted
    edited = [dict(line) for line in merged]
    edited[1]["qty"] = 5
    again, changes, missing = merge_lines(CONFIG, three, edited, {}, whole=True)
    assert missing == [] and again == edited
    assert [(c["lineNo"], c["change"], c.get("detailIndex")) for c in changes] == [
        (3, "update", 1),
        (4, "add", 2),
        (1, "delete", None),
    ]
    # read as changes (a proposal's), the same lines would keep line 1
    assert len(merge_lines(CONFIG, three, edited, {})[0]) == 4
