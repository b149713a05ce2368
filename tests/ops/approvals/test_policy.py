"""The approval policy: the demo policy's rules on op shapes the ERP pack proposes, the quorum's
one-person-one-seat rule, the fingerprint's binding, and a policy file that does not parse
(refused at start, the previous version kept and reported afterwards)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tether.errors import ConfigError
from tether.ops.approvals.facts import facts_of
from tether.ops.approvals.fingerprint import fingerprint
from tether.ops.approvals.policy import Need, parse_policy
from tether.ops.approvals.quorum import filled
from tether.ops.approvals.source import DEMO_POLICY, PolicySource
from tether.ops.model import Op

DEMO = parse_policy(DEMO_POLICY.read_bytes())


def _line(n: int, material: str, qty: float, price: float, listed: float | None) -> dict[str, Any]:
    fields = [
        {"field": "material_id", "label": "物料", "before": None, "after": material},
        {"field": "qty", "label": "数量", "before": None, "after": qty},
        {"field": "unit_price", "label": "单价", "before": None, "after": price},
        {"field": "amount", "label": "金额", "before": None, "after": round(qty * price, 2)},
    ]
    line: dict[str, Any] = {"lineNo": n, "change": "add", "fields": fields}
    if listed is not None:
        line["listPrice"] = listed
    return line


def quotation(*lines: tuple[str, float, float, float | None], op_type: str = "create") -> Op:
    """A quotation create as ``propose_write`` stages it: payload lines and the diff's lines."""
    details = [{"material_id": m, "qty": q, "unit_price": p} for m, q, p, _ in lines]
    diff_lines = [_line(n + 1, m, q, p, listed) for n, (m, q, p, listed) in enumerate(lines)]
    fields = [{"field": "customer_id", "label": "客户", "before": None, "after": "C0001 恒达"}]
    return _op("2001", op_type, {"customer_id": "C0001", "details": details}, {"fields": fields, "lines": diff_lines})


def _op(form: str, op_type: str, payload: dict[str, Any], diff: dict[str, Any]) -> Op:
    now = time.time()
    return Op("op1", "sales01", "erp-1-1", "erp", op_type, form, payload, now + 3600, now, diff=diff, base_version="3")


def needs(op: Op) -> list[tuple[str, int]] | None:
    found = DEMO.requirement(facts_of(op))
    return None if found is None else [(n.grant, n.count) for n in found.needs]


def test_the_demo_policy_on_quotations() -> None:
    assert needs(quotation(("M0005", 40, 2680, 2680))) == [("approve.sales", 1)]  # 107,200 元
    assert needs(quotation(("M0003", 10, 46, 46))) is None  # 460 元 at list price
    assert needs(quotation(("M0003", 10, 41.5, 46))) is None  # 9.8 % under: not more than 10 %
    assert needs(quotation(("M0003", 10, 41, 46))) == [("approve.sales", 1)]  # 10.9 % under
    assert needs(quotation(("M0003", 10, 46, 46), ("M0001", 4, 10, 18.5))) == [("approve.sales", 1)]
    assert needs(quotation(("M0003", 10, 10, None))) is None  # no list price known: the total decides
    assert needs(quotation(("M0005", 18, 2680, 2680))) is None  # 48,240 元


def test_an_update_that_lowers_a_line_price_is_judged_by_the_discount_rule() -> None:
    """An update's changed lines as ``merge_lines`` diffs them (with the list price the pack adds):
    a price lowered more than 10 % under list matches, as a new line would; so does a line whose
    quantity changes while it keeps a price that far under; a price at list does not."""
    from tether.packs.erp.diff import merge_lines

    config = {
        "detail": {
            "fields": [
                {"column": "material_id", "label": "物料", "type": "ref", "ref": "1003"},
                {"column": "qty", "label": "数量", "type": "number"},
                {"column": "unit_price", "label": "单价", "type": "number"},
            ]
        }
    }
    current = [{"line_no": 1, "material_id": "m1", "qty": 5, "unit_price": 18.5}]

    def update(wanted: dict[str, Any], current: list[dict[str, Any]] = current) -> Op:
        merged, lines, problems = merge_lines(config, current, [wanted], {})
        assert problems == [] and lines
        for line in lines:
            assert line["materialId"] == "m1"
            line["listPrice"] = 18.5  # what list_prices_of_changed reads from the material
        return _op("2001", "update", {"details": merged}, {"fields": [], "lines": lines})

    assert needs(update({"line_no": 1, "unit_price": 15})) == [("approve.sales", 1)]  # 18.9 % under
    assert needs(update({"line_no": 1, "unit_price": 17})) is None  # 8.1 % under
    assert needs(update({"line_no": 1, "qty": 6})) is None  # the price stays at list
    under = [{**current[0], "unit_price": 12}]
    assert needs(update({"line_no": 1, "qty": 6}, under)) == [("approve.sales", 1)]  # keeps 35 % under


def test_the_tainted_values_switch_parses_strictly() -> None:
    assert DEMO.acknowledge_tainted is True
    assert parse_policy(b"rules: []").acknowledge_tainted is False
    for bad in (b"acknowledge_tainted: yes please\nrules: []", b"acknowlege_tainted: true\nrules: []"):
        with pytest.raises(ConfigError):
            parse_policy(bad)


def test_the_approvers_edit_switch_parses_strictly_and_needs_every_matched_rule() -> None:
    """The demo lets a sales manager edit a big or discounted quotation, not a delete or a credit
    limit; an op matching a rule that does not allow it is not editable by its approvers, nor one
    whose rule left the policy. Toggling the switch binds nothing: the rule's hash is unchanged."""
    assert DEMO.approvers_may_edit(["big-or-discounted-quotation"])
    assert not DEMO.approvers_may_edit(["big-or-discounted-quotation", "customer-credit-limit"])
    assert not DEMO.approvers_may_edit(["customer-credit-limit"]) and not DEMO.approvers_may_edit(["delete-bill"])
    assert not DEMO.approvers_may_edit(["no-such-rule"]) and not DEMO.approvers_may_edit([])
    off = parse_policy(DEMO_POLICY.read_bytes().replace(b"approvers_may_edit: true", b"approvers_may_edit: false"))
    assert not off.approvers_may_edit(["big-or-discounted-quotation"])
    assert [r.digest for r in off.rules] == [r.digest for r in DEMO.rules]
    rule = b"rules:\n  - name: r\n    approvers: [{grant: g}]\n    approvers_may_edit: %s\n"
    assert parse_policy(rule % b"true").approvers_may_edit(["r"])
    for bad in (b'"yes"', b"1", b"[true]"):
        with pytest.raises(ConfigError, match="approvers_may_edit"):
            parse_policy(rule % bad)


def test_the_demo_policy_on_deletes_and_credit_limits() -> None:
    delete = _op("2002", "delete", {}, {"fields": [{"field": "record", "before": "SO1", "after": None}]})
    assert needs(delete) == [("approve.sales", 1)]
    assert needs(_op("1001", "delete", {}, {"fields": []})) is None  # a customer is not a bill
    credit = {"fields": [{"field": "credit_limit", "label": "信用额度", "before": 500000, "after": 880000}]}
    assert needs(_op("1001", "update", {"credit_limit": 880000}, credit)) == [
        ("approve.sales", 1),
        ("approve.finance", 1),
    ]
    remark = {"fields": [{"field": "remark", "label": "备注", "before": "a", "after": "b"}]}
    assert needs(_op("1001", "update", {"remark": "b"}, remark)) is None


def test_target_status_and_line_amount_conditions() -> None:
    policy = parse_policy(
        b"rules:\n  - name: examined\n    ops: [update]\n    when: [{target_status: [examined]}]\n"
        b"    approvers: [{grant: g}]\n  - name: big-line\n    when: [{line_amount_above: 1000}]\n"
        b"    approvers: [{grant: h, count: 2}]\n"
    )
    examined = _op("2001", "update", {"remark": "x"}, {"fields": [], "targetStatus": "examined"})
    assert policy.requirement(facts_of(examined)) is not None
    assert policy.requirement(facts_of(_op("2001", "update", {}, {"fields": [], "targetStatus": "draft"}))) is None
    found = policy.requirement(facts_of(quotation(("M0004", 1, 1350, 1350))))
    assert found is not None and found.needs == (Need("h", 2),)


def test_one_person_takes_one_seat_however_many_grants_they_hold() -> None:
    both = (Need("approve.sales", 1), Need("approve.finance", 1))
    assert not filled(both, {"boss@t": frozenset({"approve.sales", "approve.finance"})})
    assert filled(
        both, {"boss@t": frozenset({"approve.sales", "approve.finance"}), "fin@t": frozenset({"approve.finance"})}
    )
    # the matching moves the two-grant holder to the seat only they can fill
    assert filled(
        both, {"fin@t": frozenset({"approve.finance"}), "boss@t": frozenset({"approve.sales", "approve.finance"})}
    )
    assert not filled((Need("g", 2),), {"a@t": frozenset({"g"})})


def test_the_fingerprint_binds_the_diff_the_record_version_and_the_matched_rules() -> None:
    op = quotation(("M0005", 40, 2680, 2680))
    found = DEMO.requirement(facts_of(op))
    assert found is not None
    base = fingerprint(op, found)
    edited = quotation(("M0005", 41, 2680, 2680))
    assert fingerprint(edited, found) != base
    op.base_version = "4"
    assert fingerprint(op, found) != base
    op.base_version = "3"
    assert fingerprint(op, found) == base
    other = parse_policy(DEMO_POLICY.read_bytes().replace(b"total_above: 50000", b"total_above: 60000"))
    changed = other.requirement(facts_of(op))
    assert changed is not None and fingerprint(op, changed) != base
    commented = parse_policy(DEMO_POLICY.read_bytes() + b"\n# a comment\n")
    assert commented.version != DEMO.version  # the version records the file as it was
    same = commented.requirement(facts_of(op))
    assert same is not None and fingerprint(op, same) == base  # an edit that does not matter voids nothing


@pytest.mark.parametrize(
    "text",
    [
        b"rules: [",
        b"{}",
        b"rules:\n  - name: x\n    approvers: []\n",
        b"rules:\n  - name: x\n    ops: [destroy]\n    approvers: [{grant: g}]\n",
        b"rules:\n  - name: x\n    when: [{total_over: 5}]\n    approvers: [{grant: g}]\n",
        b"rules:\n  - name: x\n    approvers: [{grant: g, count: 0}]\n",
    ],
)
def test_a_policy_that_does_not_parse_is_refused(text: bytes) -> None:
    with pytest.raises(ConfigError):
        parse_policy(text)


def test_a_broken_file_stops_the_start_and_a_broken_edit_keeps_the_policy_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"rules: [")
    with pytest.raises(ConfigError, match="does not parse"):
        PolicySource(path)
    with pytest.raises(ConfigError, match="cannot read"):
        PolicySource(tmp_path / "missing.yaml")
    path.write_bytes(DEMO_POLICY.read_bytes())
    source = PolicySource(path)
    assert source.current().version == DEMO.version
    path.write_bytes(b"rules: [oops")
    os.utime(path, (time.time() + 5, time.time() + 5))
    with caplog.at_level(logging.ERROR, logger="tether.approvals"):
        assert source.current().version == DEMO.version  # still in force
        assert source.current().version == DEMO.version
    assert source.problem and sum("still using version" in r.message for r in caplog.records) == 2
    path.write_bytes(DEMO_POLICY.read_bytes().replace(b"50000", b"60000"))
    os.utime(path, (time.time() + 10, time.time() + 10))
    assert source.current().version != DEMO.version and source.problem is None
