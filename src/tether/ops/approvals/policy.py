"""The approval policy: a YAML file the operator owns (``TETHER_APPROVAL_POLICIES``).

A rule matches an op by form, op type and conditions on the proposal, and says which grants its
approvers must hold, how many distinct approvers of each (M of N), and within how long. The
requester never counts (separation of duties). Every rule that matches applies: the op needs, for
each grant, the largest count any of them asks, within the shortest expiry.

    rules:
      - name: big-quotation
        forms: ["2001"]
        ops: [create, update]
        when:                       # any item matches; within an item every key must hold
          - total_above: 50000
          - line_below_list_pct: 10
        approvers:
          - {grant: approve.sales, count: 1}
        expires_in_s: 86400

``forms`` names a form by its id or by its table in the business system (``target_table``: on
Tryton the model, ``sale.sale``, whose form id is the database's own).

Conditions: ``total_above`` (the sum of the lines' qty × unit price), ``line_amount_above``,
``line_below_list_pct`` (a line's unit price more than P % under its material's list price, where
the proposal knows the list price), ``fields_changed`` (any of these master fields), and
``target_status`` (the record's status when proposed, one of these). A rule without ``when``
matches every op of its forms and types.

``approvers_may_edit: true`` (a rule's): an approver of an op awaiting approval may edit its values
(``PATCH /api/ops/{opId}``) instead of only approving or rejecting it — when every rule the op
matched says so. Their edit voids the approvals given and returns the op to its requester as a
draft to confirm again (``ops/revision.py``). It binds nothing: it is not part of the rule's hash.

``acknowledge_tainted: true`` (top level): a confirm of a proposal holding a value the model copied
from free text it read (``tainted`` in the diff, ``ops/taint.py``) must say the person checked it
(``acknowledgeTainted``); without it the confirm is refused (409) naming the values.

The policy's version is the SHA-256 of the file's bytes; a rule's own hash (its canonical JSON)
goes into an op's fingerprint, so editing another rule voids nothing. This module is pure: it
parses and matches, it reads no database and no business system.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import yaml

from tether.errors import ConfigError
from tether.ops.approvals.facts import ProposalFacts
from tether.ops.model import OP_TYPES

CONDITIONS = ("total_above", "line_amount_above", "line_below_list_pct", "fields_changed", "target_status")
DEFAULT_EXPIRY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class Need:
    """``count`` distinct approvers holding ``grant``."""

    grant: str
    count: int


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    forms: tuple[str, ...]  # empty: every form
    ops: tuple[str, ...]  # empty: every op type
    when: tuple[dict[str, Any], ...]  # empty: always
    needs: tuple[Need, ...]
    expires_in_s: float
    digest: str  # the rule's own hash: part of an op's fingerprint
    approvers_may_edit: bool = False  # its approvers may edit an op awaiting approval (ops/revision.py)

    def matches(self, facts: ProposalFacts) -> bool:
        if self.forms and facts.form_id not in self.forms and (facts.table or "") not in self.forms:
            return False
        if self.ops and facts.op_type not in self.ops:
            return False
        return not self.when or any(holds(item, facts) for item in self.when)


@dataclass(frozen=True, slots=True)
class Requirement:
    """What an op matched: the rules, the approvers it needs, by when, and the hash that binds it."""

    rules: tuple[str, ...]
    needs: tuple[Need, ...]
    expires_in_s: float
    digest: str

    def view(self) -> dict[str, Any]:
        return {
            "rules": list(self.rules),
            "needs": [{"grant": n.grant, "count": n.count} for n in self.needs],
            "expiresInS": self.expires_in_s,
        }


@dataclass(frozen=True, slots=True)
class Policy:
    version: str
    rules: tuple[Rule, ...]
    acknowledge_tainted: bool = False  # the confirmer must tick off values copied from free text (ops/taint.py)

    def requirement(self, facts: ProposalFacts) -> Requirement | None:
        """What ``facts`` needs, or None when no rule matches."""
        matched = [r for r in self.rules if r.matches(facts)]
        if not matched:
            return None
        counts: dict[str, int] = {}
        for rule in matched:
            for need in rule.needs:
                counts[need.grant] = max(counts.get(need.grant, 0), need.count)
        needs = tuple(Need(g, c) for g, c in counts.items())
        digest = hashlib.sha256("|".join(r.digest for r in matched).encode()).hexdigest()
        return Requirement(tuple(r.name for r in matched), needs, min(r.expires_in_s for r in matched), digest)

    def approvers_may_edit(self, rules: list[str] | tuple[str, ...]) -> bool:
        """Every one of ``rules`` (those an op matched) is in force and lets its approvers edit: a
        rule that does not — or one no longer in the policy — keeps its approvers to approve or reject."""
        by_name = {r.name: r for r in self.rules}
        return bool(rules) and all(name in by_name and by_name[name].approvers_may_edit for name in rules)


def holds(item: dict[str, Any], facts: ProposalFacts) -> bool:
    """Whether every condition of one ``when`` item holds for ``facts``."""
    for key, wanted in item.items():
        if key == "total_above" and not (facts.total is not None and facts.total > float(wanted)):
            return False
        if key == "line_amount_above" and not any(a > float(wanted) for a in facts.line_amounts):
            return False
        if key == "line_below_list_pct" and not any(d > float(wanted) for d in facts.discounts_pct):
            return False
        if key == "fields_changed" and not set(wanted) & facts.changed:
            return False
        if key == "target_status" and facts.target_status not in wanted:
            return False
    return True


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str | int):
        return (str(value),)
    if not isinstance(value, list) or not all(isinstance(v, str | int) for v in value):
        raise ConfigError(f"{where}: must be a list of names")
    return tuple(str(v) for v in value)


def _condition(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict) or not item:
        raise ConfigError(f"{where}: each condition is a mapping such as {{total_above: 50000}}")
    out: dict[str, Any] = {}
    for key, value in item.items():
        if key not in CONDITIONS:
            raise ConfigError(f"{where}: unknown condition {key!r} (known: {', '.join(CONDITIONS)})")
        if key in ("fields_changed", "target_status"):
            out[key] = _strings(value, f"{where}.{key}")
        elif isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"{where}.{key}: must be a number ≥ 0")
        else:
            out[key] = float(value)
    return out


def _needs(value: Any, where: str) -> tuple[Need, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: at least one approver entry {{grant: ..., count: N}} is required")
    needs = []
    for n, entry in enumerate(value):
        if not isinstance(entry, dict) or not isinstance(entry.get("grant"), str) or not entry["grant"].strip():
            raise ConfigError(f"{where}[{n}]: needs a grant (the ERP grant an approver must hold)")
        count = entry.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 20:
            raise ConfigError(f"{where}[{n}].count: must be an integer from 1 to 20")
        needs.append(Need(entry["grant"].strip(), count))
    return tuple(needs)


def _rule(raw: Any, n: int) -> Rule:
    where = f"rules[{n}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a mapping")
    unknown = set(raw) - {"name", "forms", "ops", "when", "approvers", "expires_in_s", "approvers_may_edit"}
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: needs a name")
    ops = _strings(raw.get("ops"), f"{where}.ops")
    bad = [o for o in ops if o not in OP_TYPES]
    if bad:
        raise ConfigError(f"{where}.ops: unknown op type(s) {', '.join(bad)} (known: {', '.join(OP_TYPES)})")
    when = raw.get("when") or []
    if isinstance(when, dict):
        when = [when]
    if not isinstance(when, list):
        raise ConfigError(f"{where}.when: must be a list of conditions")
    expires = raw.get("expires_in_s", DEFAULT_EXPIRY_S)
    if isinstance(expires, bool) or not isinstance(expires, int | float) or expires < 60:
        raise ConfigError(f"{where}.expires_in_s: must be a number of seconds ≥ 60")
    may_edit = raw.get("approvers_may_edit", False)
    if not isinstance(may_edit, bool):
        raise ConfigError(f"{where}.approvers_may_edit: must be true or false")
    conditions = tuple(_condition(c, f"{where}.when[{i}]") for i, c in enumerate(when))
    needs = _needs(raw.get("approvers"), f"{where}.approvers")
    forms = _strings(raw.get("forms"), f"{where}.forms")
    canonical = json.dumps([name, forms, ops, conditions, [(x.grant, x.count) for x in needs]], sort_keys=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return Rule(name.strip(), forms, ops, conditions, needs, float(expires), digest, may_edit)


def parse_policy(text: bytes) -> Policy:
    """The policy in ``text``; ``ConfigError`` naming what is wrong (never an empty policy by accident)."""
    try:
        raw = yaml.safe_load(text.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the approval policy file does not parse: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("rules"), list):
        raise ConfigError("the approval policy file must be a mapping with a list under 'rules'")
    unknown = set(raw) - {"rules", "acknowledge_tainted"}
    if unknown:
        raise ConfigError(f"the approval policy file: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    acknowledge = raw.get("acknowledge_tainted", False)
    if not isinstance(acknowledge, bool):
        raise ConfigError("acknowledge_tainted: must be true or false")
    rules = tuple(_rule(r, n) for n, r in enumerate(raw["rules"]))
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise ConfigError("the approval policy's rule names must be distinct")
    return Policy(hashlib.sha256(text).hexdigest(), rules, acknowledge)
