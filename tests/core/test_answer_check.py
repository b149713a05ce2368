"""Answers to questions and forms are checked against what the interaction declared."""

from __future__ import annotations

from typing import Any

import pytest

from tether.core.answer_check import check_answer

FORM: dict[str, Any] = {
    "kind": "form",
    "payload": {
        "formId": "2001",
        "formName": "报价单",
        "fields": [
            {"column": "customer_id", "label": "客户", "type": "ref", "required": True, "maxLength": 8},
            {"column": "bill_date", "label": "单据日期", "type": "date", "required": True},
            {"column": "currency", "label": "币种", "type": "select", "options": [{"value": "CNY", "label": "人民币"}]},
            {"column": "urgent", "label": "加急", "type": "bool"},
            {"column": "remark", "label": "备注", "type": "textarea", "maxLength": 5},
            {"column": "status", "label": "状态", "type": "text", "readOnly": True, "default": "draft"},
        ],
        "detail": {"fields": [{"column": "qty", "label": "数量", "type": "integer", "required": True}]},
        "prefill": {},
    },
}


def fields(pending: dict[str, Any], result: dict[str, Any]) -> dict[str, str]:
    return {p["field"]: p["code"] for p in check_answer(pending, result)}


def test_a_good_form_answer_passes() -> None:
    values = {"customer_id": "C001", "bill_date": "2026-03-01", "currency": "CNY", "urgent": False, "status": "draft"}
    assert fields(FORM, {"values": {**values, "details": [{"qty": 3}, {"qty": "4"}]}}) == {}


def test_every_field_problem_is_named() -> None:
    values = {
        "customer_id": "C0000000001",
        "bill_date": "2026-02-30",
        "currency": "USD",
        "urgent": "yes",
        "remark": "too long",
        "status": "examined",
        "nope": 1,
        "details": [{"qty": 1.5}, {"qty": None}],
    }
    assert fields(FORM, {"values": values}) == {
        "customer_id": "max_length",
        "bill_date": "date",
        "currency": "option",
        "urgent": "type",
        "remark": "max_length",
        "status": "read_only",
        "nope": "unknown",
        "details.0.qty": "type",
        "details.1.qty": "required",
    }


def test_required_fields_and_the_shape_of_a_form_answer() -> None:
    assert fields(FORM, {"values": {}}) == {"customer_id": "required", "bill_date": "required"}
    assert fields(FORM, {"answer": "hi"}) == {"values": "required"}


@pytest.mark.parametrize(
    ("payload", "answer", "expected"),
    [
        ({"options": ["A", "B"], "allowFreeText": False}, "C", {"answer": "option"}),
        ({"options": ["A", "B"], "allowFreeText": False}, "A", {}),
        ({"options": ["A", "B"], "allowFreeText": True}, "C", {}),
        ({"options": []}, "  ", {"answer": "required"}),
    ],
)
def test_question_answers(payload: dict[str, Any], answer: str, expected: dict[str, str]) -> None:
    assert fields({"kind": "question", "payload": payload}, {"answer": answer}) == expected
