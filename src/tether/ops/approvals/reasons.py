"""Why an op needs approval, in words: for each rule it matched, each condition that holds, with
the threshold the rule names and the op's own value — what an approver reads beside the diff
(``approval.reasons``, docs/approvals.md). Derived from the policy in force and the op as it is,
never written per rule name. Pure: it reads the policy and the op, never the business system.

Each reason: ``rule``, ``condition`` (``total_above``… or ``None`` for a rule without ``when``, or
one no longer in the policy), ``threshold``, ``value`` (the op's), ``text`` (Chinese) and
``textEn``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.ops.approvals.facts import ProposalFacts, facts_of
from tether.ops.approvals.policy import Policy, Rule, holds
from tether.ops.model import Op

OP_WORDS = {
    "create": ("新建", "new record"),
    "update": ("修改", "change"),
    "delete": ("删除", "deletion"),
    "examine": ("审核", "examination"),
    "generate": ("生成", "generation"),
}


def number(value: float) -> str:
    """``92000.0`` → ``92,000``; ``13.0435`` → ``13.04``: grouped, at most two decimals."""
    return f"{round(value, 2):,.2f}".rstrip("0").rstrip(".")


def _reason(rule: str, condition: str | None, threshold: Any, value: Any, zh: str, en: str) -> dict[str, Any]:
    return {"rule": rule, "condition": condition, "threshold": threshold, "value": value, "text": zh, "textEn": en}


def _labels(op: Op, names: Sequence[str]) -> list[str]:
    labels = {str(f.get("field")): str(f.get("label") or f.get("field")) for f in op.diff.get("fields") or []}
    return [labels.get(n, n) for n in names]


def _explain(rule: str, key: str, wanted: Any, facts: ProposalFacts, op: Op) -> dict[str, Any]:
    if key == "total_above":
        total = facts.total or 0.0
        return _reason(
            rule,
            key,
            wanted,
            total,
            f"合计金额 {number(total)}，超过 {number(wanted)}",
            f"total amount {number(total)} is over {number(wanted)}",
        )
    if key in ("line_amount_above", "line_below_list_pct"):
        values = facts.line_amounts if key == "line_amount_above" else facts.discounts_pct
        over = sorted((v for v in values if v > wanted), reverse=True)
        top, n = over[0], len(over)
        if key == "line_amount_above":
            zh = f"{'一行' if n == 1 else f'{n} 行'}金额超过 {number(wanted)}（{'' if n == 1 else '最高 '}{number(top)}）"
            en = f"{'a line' if n == 1 else f'{n} lines'} over {number(wanted)} ({'' if n == 1 else 'up to '}{number(top)})"
        else:
            zh = f"{'一行' if n == 1 else f'{n} 行'}单价低于标价 {number(top)}%，超过 {number(wanted)}%"
            en = f"{'a line' if n == 1 else f'{n} lines'} priced {number(top)}% under list, more than {number(wanted)}%"
        return _reason(rule, key, wanted, top, zh, en)
    if key == "fields_changed":
        changed = [f for f in wanted if f in facts.changed]
        shown = "、".join(_labels(op, changed))
        return _reason(rule, key, list(wanted), changed, f"改动了{shown}", f"changes {', '.join(_labels(op, changed))}")
    status = facts.target_status
    return _reason(rule, key, list(wanted), status, f"单据状态为 {status}", f"the record's status is {status}")


def _every(rule: Rule, op: Op) -> dict[str, Any]:
    zh, en = OP_WORDS.get(op.op_type, (op.op_type, op.op_type))
    form = op.form_name or op.form_id
    return _reason(rule.name, None, None, None, f"{form}的每次{zh}都需审批", f"every {en} of {form} needs approval")


def reasons(policy: Policy, rules: Sequence[str], op: Op) -> list[dict[str, Any]]:
    """Why ``op`` matched ``rules`` (the request's), by the policy in force."""
    facts = facts_of(op)
    by_name = {r.name: r for r in policy.rules}
    out = []
    for name in rules:
        rule = by_name.get(name)
        if rule is None:
            out.append(
                _reason(
                    name,
                    None,
                    None,
                    None,
                    f"规则 {name} 已不在当前的审批策略中",
                    f"rule {name} is no longer in the approval policy",
                )
            )
            continue
        if not rule.when:
            out.append(_every(rule, op))
            continue
        held = [item for item in rule.when if holds(item, facts)]
        for item in held:
            out.extend(_explain(name, key, wanted, facts, op) for key, wanted in item.items())
        if not held:  # the rule was edited since the request: it still asks, as the request does
            zh, en = (
                f"规则 {name} 的条件已修改，按提交时的规则审批",
                f"rule {name} changed since; approved as requested",
            )
            out.append(_reason(name, None, None, None, zh, en))
    return out
