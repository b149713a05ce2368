"""Why an op needs approval, in words (``reasons.py``): each condition that holds, with the rule's
threshold and the op's own value — from the rule as written, whatever its name."""

from __future__ import annotations

from tests.ops.approvals.test_policy import DEMO, _op, quotation
from tether.ops.approvals.facts import facts_of
from tether.ops.approvals.policy import parse_policy
from tether.ops.approvals.reasons import number, reasons


def why(policy_text: bytes | None, op: object) -> list[dict[str, object]]:
    policy = DEMO if policy_text is None else parse_policy(policy_text)
    found = policy.requirement(facts_of(op))  # type: ignore[arg-type]
    assert found is not None
    return reasons(policy, found.rules, op)  # type: ignore[arg-type]


def test_a_big_and_discounted_quotation_says_both_with_its_values() -> None:
    (total, discount) = why(None, quotation(("M0003", 2000, 40, 46)))
    assert total["condition"] == "total_above" and total["threshold"] == 50000 and total["value"] == 80000
    assert total["text"] == "合计金额 80,000，超过 50,000" and total["textEn"] == "total amount 80,000 is over 50,000"
    assert discount["condition"] == "line_below_list_pct" and discount["value"] == 13.0435
    assert discount["text"] == "一行单价低于标价 13.04%，超过 10%", discount
    (only,) = why(None, quotation(("M0005", 40, 2680, 2680)))
    assert only["text"] == "合计金额 107,200，超过 50,000" and only["rule"] == "big-or-discounted-quotation"


def test_the_words_follow_the_rule_as_written_not_its_name() -> None:
    renamed = b"rules:\n  - name: r1\n    forms: ['2001']\n    when: [{total_above: 1000.5, line_amount_above: 300}]\n    approvers: [{grant: g}]\n"
    (total, line) = why(renamed, quotation(("M0003", 10, 46, 46), ("M0001", 40, 18.5, 18.5)))
    assert total["text"] == "合计金额 1,200，超过 1,000.5" and total["rule"] == "r1"
    assert line["text"] == "2 行金额超过 300（最高 740）" and line["value"] == 740
    credit = {"fields": [{"field": "credit_limit", "label": "信用额度", "before": 500000, "after": 880000}]}
    (changed,) = why(None, _op("1001", "update", {"credit_limit": 880000}, credit))
    assert changed["text"] == "改动了信用额度" and changed["value"] == ["credit_limit"]
    delete = _op("2002", "delete", {}, {"fields": []})
    (every,) = why(None, delete)
    assert every["condition"] is None and every["text"] == "2002的每次删除都需审批", every
    examined = b"rules:\n  - name: e\n    when: [{target_status: [examined]}]\n    approvers: [{grant: g}]\n"
    (status,) = why(examined, _op("2001", "update", {}, {"fields": [], "targetStatus": "examined"}))
    assert status["textEn"] == "the record's status is examined"


def test_a_rule_gone_from_the_policy_is_named_as_such() -> None:
    (gone,) = reasons(DEMO, ["retired-rule"], quotation(("M0003", 10, 46, 46)))
    assert gone["condition"] is None and "retired-rule" in str(gone["text"])
    assert number(92000) == "92,000" and number(18.5) == "18.5" and number(0.004) == "0"
