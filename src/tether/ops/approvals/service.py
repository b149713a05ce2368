"""``ApprovalService``: the approval gate between an op's confirm and its execution.

- ``hold``: the requester's confirm of a draft that a policy rule matches moves it to
  ``awaiting`` (state ``awaiting_approval``) instead of past the confirm gate — one conditional
  UPDATE with the request row and its audit row; nothing is executed or staged for execution.
- ``approve`` / ``reject``: one transaction each, which first locks the op's request row, so
  decisions on one op (from any replica) run one at a time. The requester never decides on their
  own op (403); an approver must hold one of the grants the rule names (403) and be of the op's
  tenant (404 otherwise, as for an unknown id). One person counts once per fingerprint. The
  approval that fills the last seat passes the op through the same gate a confirm does
  (``awaiting → confirmed``, auto: ``→ executing``), so it executes exactly once, as the requester.
- Binding: each approval signs the op's fingerprint (``fingerprint.py``). When the op or the
  matching rules changed since the request, the approvals given are void (kept, with the reason)
  and the op waits for approvals of what it is now.
- Expiry: a request past its time ends the op ``expired`` (on the next decision, or the sweep);
  a decision after expiry or rejection is 409.

The requester's identity (their ERP token) is kept in this process's memory from their confirm
until the op is decided, as an auto op's confirm keeps it while it executes; without it (another
replica, a restart) an approved op waits with its lease expired and runs on the requester's next
read or confirm of it (``OpService._drive_if_stranded`` / reconciliation).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

from tether.core.session import Identity
from tether.errors import Conflict, Forbidden, InvalidInput, NotFound
from tether.ops.approvals.facts import facts_of
from tether.ops.approvals.fingerprint import fingerprint
from tether.ops.approvals.policy import Policy, Requirement
from tether.ops.approvals.quorum import filled, missing
from tether.ops.approvals.reasons import reasons
from tether.ops.approvals.source import PolicySource
from tether.ops.approvals.store import ApprovalRequest, ApprovalStore
from tether.ops.model import Op
from tether.ops.service import OpService
from tether.ops.taint import acknowledgement, refuse_unacknowledged
from tether.store.writer import Write

log = logging.getLogger("tether.approvals")
EXPIRED = "the approval was not given in time; propose again"
STATUSES = ("pending", "approved", "rejected", "expired")
MAX_HELD = 10_000


def _who(user: str, tenant: str) -> str:
    return f"{user}@{tenant}"


class ApprovalService:
    def __init__(self, ops: OpService, policies: PolicySource) -> None:
        if ops.store.sessions is None or ops.audit.sessions is None:
            raise ValueError("approvals need the op store and the audit log on the session store's writer")
        self.ops = ops
        self.policies = policies
        self.store = ApprovalStore(ops.store.sessions)
        self._requesters: dict[str, Identity] = {}

    def close(self) -> None:
        self.store.close()

    # ---- the requester's confirm ---------------------------------------------------------------------

    async def hold(self, op_id: str, who: Identity, acknowledged: bool = False) -> dict[str, Any] | None:
        """The confirm's first step: a draft holding unacknowledged tainted values is refused when
        the policy says so (409); a draft a rule matches waits for approval (its view is the
        answer); None lets the confirm go on as it would without a policy."""
        now = time.time()
        op = await self.ops.store.get(op_id, who.owner)
        if op is not None and op.status == "awaiting" and self.ops._permits(op, who):
            waiting = await self.store.get(op_id)  # confirmed again: the same answer, with what it waits for
            if waiting is not None:
                return self._view(op, waiting, await self._counted(waiting))
        if op is None or op.status != "draft" or op.expire_at <= now or not self.ops._permits(op, who):
            return None
        policy = self.policies.current()
        if policy.acknowledge_tainted and not acknowledged:
            refuse_unacknowledged(op.diff)
        requirement = policy.requirement(facts_of(op))
        if requirement is None:
            return None
        request = ApprovalRequest(
            op.op_id,
            op.owner_tenant,
            list(requirement.rules),
            list(requirement.needs),
            policy.version,
            fingerprint(op, requirement),
            "pending",
            now,
            min(now + requirement.expires_in_s, op.expire_at),
        )
        awaiting = replace(op, status="awaiting", confirmed_at=now)
        details = {**request.view(), "requester": op.owner_user, **acknowledgement(op.diff, acknowledged)}
        move = self.ops.store.move_run(op.op_id, ("draft",), {"status": "awaiting", "updated_at": now}, live_at=now)
        append = self.ops.audit.append_run(self.ops._audit_row(awaiting, "approval_request", details))

        def run(cur: Any) -> bool:
            if not move(cur):
                return False
            self.store.insert_request(cur, request)
            append(cur)
            return True

        if not await self._submit(run):
            current = await self.ops.store.get(op_id, who.owner)
            if current is None or current.status != "awaiting":
                return None  # another confirm passed the plain gate, or the draft expired: the confirm answers it
            return self._view(current, await self.store.get(op_id), {})
        self._remember(op.op_id, who)
        return self._view(awaiting, request, {})

    # ---- the approvers' side -----------------------------------------------------------------------

    async def listed(self, who: Identity, status: str, limit: int) -> list[dict[str, Any]]:
        """The caller's tenant's requests in ``status`` that their grants cover and that are not
        their own, newest first. Where the approvers may edit the op (``approversMayEdit``), its
        proposed values ride along (``values``, the payload as staged): what the chat page's edit
        form starts from and sends back."""
        if status not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)}", field="status")
        out = []
        for request in await self.store.listed(who.owner.tenant, status, limit * 4):
            if not {n.grant for n in request.needs} & who.grants:
                continue
            op = await self.ops.store.get(request.op_id)
            if op is None or op.owner_user == who.owner.user_id:
                continue
            if status == "pending" and op.status != "awaiting":  # withdrawn by its requester
                continue
            view = self._view(op, request, await self._counted(request))
            if view["approval"]["approversMayEdit"] and op.op_type in ("create", "update"):
                view["values"] = op.payload
            out.append(view)
            if len(out) >= limit:
                break
        return out

    async def get(self, op_id: str, who: Identity) -> dict[str, Any]:
        """The op's approval as its requester or an approver of its tenant sees it."""
        op, request = await self._visible(op_id, who)
        mine = op.owner_user == who.owner.user_id
        if not mine and not {n.grant for n in request.needs} & who.grants:
            raise NotFound("no such op awaiting approval")  # neither its requester nor one of its approvers
        view = self._view(op, request, await self._counted(request))
        view["approval"]["given"] = await self.store.given(op_id)
        if mine and op.session_id:  # an approver may not open the requester's conversation (docs/approvals.md)
            view["approval"]["conversationUrl"] = f"/chat?c={op.session_id}"
        return view

    async def approve(self, op_id: str, who: Identity) -> dict[str, Any]:
        op, _ = await self._visible(op_id, who)
        self._check_duty(op, who)
        policy = self.policies.current()
        now = time.time()
        read = self.ops.store.get_run(op_id, None)
        outcome: dict[str, Any] = {}

        def run(cur: Any) -> None:
            outcome.clear()
            locked = self.store.lock_request(cur, op_id)
            current = read(cur)
            if locked is None or current is None:
                outcome["kind"] = "gone"
                return
            outcome["op"], outcome["request"] = current, locked
            if locked.status != "pending" or current.status != "awaiting":
                outcome["kind"] = "closed"
                return
            if locked.expire_at <= now:
                outcome["kind"] = "expired"
                outcome["op"] = self._expire_run(cur, current, locked, now)
                return
            locked = self._rebind_run(cur, current, locked, policy, now)
            outcome["request"] = locked
            usable = frozenset(n.grant for n in locked.needs) & who.grants
            if not usable:
                outcome["kind"] = "no_authority"
                return
            given = self.store.approvals(cur, op_id, locked.fingerprint)
            me = _who(who.owner.user_id, who.owner.tenant)
            if me not in given:
                self.store.add_approval(
                    cur, op_id, who.owner.user_id, who.owner.tenant, usable, locked.fingerprint, policy.version, now
                )
                given = {**given, me: usable}
                details = {
                    "approver": who.owner.user_id,
                    "grants": sorted(usable),
                    "fingerprint": locked.fingerprint,
                    "policyVersion": policy.version,
                }
                self.ops.audit.append_run(self.ops._audit_row(current, "approve", details))(cur)
            outcome["given"] = given
            if not filled(locked.needs, given):
                outcome["kind"] = "recorded"
                return
            outcome["kind"] = "approved"
            outcome["op"] = self._pass_gate_run(cur, current, locked, who, given, now)

        await self._submit(run)
        return await self._answer_approve(outcome, op_id)

    async def reject(self, op_id: str, who: Identity, comment: str) -> dict[str, Any]:
        op, _ = await self._visible(op_id, who)
        self._check_duty(op, who)
        comment = comment.strip()[:2000]
        now = time.time()
        read = self.ops.store.get_run(op_id, None)
        outcome: dict[str, Any] = {}

        def run(cur: Any) -> None:
            outcome.clear()
            locked, current = self.store.lock_request(cur, op_id), read(cur)
            if locked is None or current is None:
                outcome["kind"] = "gone"
                return
            outcome["op"], outcome["request"] = current, locked
            if locked.status != "pending" or current.status != "awaiting":
                outcome["kind"] = "closed"
                return
            if locked.expire_at <= now:
                outcome["kind"], outcome["op"] = "expired", self._expire_run(cur, current, locked, now)
                return
            if not frozenset(n.grant for n in locked.needs) & who.grants:
                outcome["kind"] = "no_authority"
                return
            error = f"审批未通过（{who.owner.user_id}）：{comment}" if comment else f"审批未通过（{who.owner.user_id}）"
            values = {"status": "rejected", "error": error, "updated_at": now}
            if not self.ops.store.move_run(op_id, ("awaiting",), values)(cur):
                outcome["kind"] = "closed"
                return
            decided: dict[str, Any] = {
                "status": "rejected",
                "decided_at": now,
                "decided_by": who.owner.user_id,
                "comment": comment,
            }
            self.store.update_request(cur, op_id, decided)
            rejected = replace(current, status="rejected", error=error)
            details = {"approver": who.owner.user_id, "comment": comment, "fingerprint": locked.fingerprint}
            self.ops.audit.append_run(self.ops._audit_row(rejected, "reject", details))(cur)
            outcome["kind"], outcome["op"] = "rejected", rejected
            outcome["request"] = replace(locked, **decided)

        await self._submit(run)
        kind = outcome.get("kind")
        if kind == "rejected":
            self._requesters.pop(op_id, None)
            self.ops._deliver(outcome["op"], None)  # the requester's session: the rejection and its comment
            return self._view(outcome["op"], outcome["request"], {})
        return await self._refuse(kind, outcome, op_id, rejecting=True)

    async def sweep(self) -> int:
        """End pending requests past their expiry (run by the services' sweep loop)."""
        count = 0
        now = time.time()
        for request in await self.store.due(now):
            read = self.ops.store.get_run(request.op_id, None)
            done: list[Op] = []

            def run(cur: Any, op_id: str = request.op_id, read: Any = read, done: list[Op] = done) -> None:
                locked, current = self.store.lock_request(cur, op_id), read(cur)
                pending = locked and current and locked.status == "pending" and current.status == "awaiting"
                if pending and locked is not None and current is not None and locked.expire_at <= now:
                    done.append(self._expire_run(cur, current, locked, now))

            await self._submit(run)
            for op in done:
                count += 1
                self._requesters.pop(op.op_id, None)
                self.ops._deliver(op, None)
        return count

    # ---- an approver's edit (ops/revision.py) ----------------------------------------------------------

    async def editable(self, op_id: str, who: Identity) -> Op:
        """The op awaiting approval that ``who`` — one of its approvers, not its requester — may
        edit. Another tenant, or no grant its request needs: 404, as for an unknown id (they are
        not its approver). A rule it matched that keeps approvers to approving, or its form not
        among theirs: 403. No longer pending: 409."""
        op = await self.ops.store.get(op_id)
        request = await self.store.get(op_id) if op is not None else None
        if op is None or request is None or op.owner_tenant != who.owner.tenant:
            raise NotFound("no such op")
        if op.owner_user == who.owner.user_id or not {n.grant for n in request.needs} & who.grants:
            raise NotFound("no such op")
        refusal = self.edit_refusal(op, request, who, time.time())
        if refusal is not None:
            raise refusal
        return op

    def edit_refusal(self, op: Op, request: ApprovalRequest, who: Identity, now: float) -> Exception | None:
        """Why ``who`` may not edit ``op`` as its approver (None: they may). Checked before the
        edit and again inside the transaction that voids the request, on the locked request row."""
        if not self.policies.current().approvers_may_edit(request.rules):
            rules = ", ".join(request.rules)
            return Forbidden(
                f"the approval policy does not let approvers edit this op (rule {rules}): approve it, "
                "or reject it with a comment saying what to change"
            )
        if not {n.grant for n in request.needs} & who.grants:
            return Forbidden("you hold none of the grants this op's approval needs")
        if not self.ops._permits(op, who):
            return Forbidden(f"editing needs form {op.form_id} among your grants")
        if request.status != "pending" or op.status != "awaiting":
            return Conflict(
                f"the op is {op.status} (approval {request.status}); an approver edits only an op awaiting approval"
            )
        if request.expire_at <= now:
            return Conflict("the approval request expired; the op can no longer be edited")
        return None

    # ---- statements inside a decision's transaction --------------------------------------------------

    def _expire_run(self, cur: Any, op: Op, request: ApprovalRequest, now: float) -> Op:
        values = {"status": "expired", "error": EXPIRED, "updated_at": now}
        if not self.ops.store.move_run(op.op_id, ("awaiting",), values)(cur):
            return op
        self.store.update_request(cur, op.op_id, {"status": "expired", "decided_at": now})
        expired = replace(op, status="expired", error=EXPIRED)
        self.ops.audit.append_run(self.ops._audit_row(expired, "approval_expire", {"expiredAt": request.expire_at}))(
            cur
        )
        return expired

    def _rebind_run(self, cur: Any, op: Op, request: ApprovalRequest, policy: Policy, now: float) -> ApprovalRequest:
        """Void the approvals given so far when the op or the rules it matches changed since they
        were given: the request then asks for approvals of the op as it is now."""
        requirement: Requirement | None = policy.requirement(facts_of(op))
        if requirement is None:  # no rule matches any more: never fewer approvals than were asked
            return request
        now_print = fingerprint(op, requirement)
        if now_print == request.fingerprint:
            return request
        changed_rules = list(requirement.rules) != request.rules or policy.version != request.policy_version
        reason = "the approval policy changed" if changed_rules else "the op changed since it was approved"
        voided = self.store.void_approvals(cur, op.op_id, reason)
        values: dict[str, Any] = {
            "fingerprint": now_print,
            "policy_version": policy.version,
            "rules": list(requirement.rules),
            "needs": list(requirement.needs),
            "void_reason": reason,
        }
        self.store.update_request(cur, op.op_id, values)
        details = {"reason": reason, "voided": voided, "fingerprint": now_print, "policyVersion": policy.version}
        self.ops.audit.append_run(self.ops._audit_row(op, "approval_void", details))(cur)
        return replace(request, **values)

    def _pass_gate_run(
        self, cur: Any, op: Op, request: ApprovalRequest, who: Identity, given: dict[str, frozenset[str]], now: float
    ) -> Op | None:
        """The confirm gate, passed by the last approval: ``awaiting → confirmed`` (auto: ``→
        executing``) with the ``op.confirm`` row, as a requester's confirm passes it."""
        gate, audit, then, confirmed = self.ops._gate_plan(op, now)
        audit_op, action, details = audit
        held = op.op_id in self._requesters
        if not held:  # no credential here: the requester's next read or confirm runs it — and counts
            del gate["attempts"]  # that attempt (one execution is one attempt, whichever replica approved)
            gate["lease_until"] = now
            confirmed = audit_op = replace(confirmed, lease_until=now, attempts=op.attempts)
            details = {**details, "attempt": op.attempts}
        if not self.ops.store.move_run(op.op_id, ("awaiting",), gate)(cur):
            return None
        decided = {"status": "approved", "decided_at": now, "decided_by": who.owner.user_id}
        self.store.update_request(cur, op.op_id, decided)
        details = {**details, "approvedBy": sorted(given), "fingerprint": request.fingerprint}
        self.ops.audit.append_run(self.ops._audit_row(audit_op, action, details))(cur)
        if held:
            for statuses, more in then:
                self.ops.store.move_run(op.op_id, statuses, more)(cur)
        return confirmed

    # ---- internals -----------------------------------------------------------------------------------

    async def _submit(self, run: Any) -> Any:
        sessions = self.ops.store.sessions
        assert sessions is not None
        return await sessions.submit(Write(run))

    def _remember(self, op_id: str, who: Identity) -> None:
        if len(self._requesters) >= MAX_HELD:
            self._requesters.pop(next(iter(self._requesters)))
        self._requesters[op_id] = who

    async def _visible(self, op_id: str, who: Identity) -> tuple[Op, ApprovalRequest]:
        """The op and its request when the caller's tenant is the op's (anyone else: 404)."""
        op = await self.ops.store.get(op_id)
        if op is None or op.owner_tenant != who.owner.tenant:
            raise NotFound("no such op awaiting approval")
        request = await self.store.get(op_id)
        if request is None:
            raise NotFound("no approval was asked for this op")
        return op, request

    @staticmethod
    def _check_duty(op: Op, who: Identity) -> None:
        if op.owner_user == who.owner.user_id and op.owner_tenant == who.owner.tenant:
            raise Forbidden("separation of duties: you proposed this op, so someone else must approve or reject it")

    async def _counted(self, request: ApprovalRequest) -> dict[str, frozenset[str]]:
        given = [g for g in await self.store.given(request.op_id) if not g["void"]]
        return {str(g["approver"]): frozenset(g["grants"]) for g in given if g["fingerprint"] == request.fingerprint}

    async def _answer_approve(self, outcome: dict[str, Any], op_id: str) -> dict[str, Any]:
        kind = outcome.get("kind")
        if kind == "approved":
            confirmed = outcome["op"]
            if confirmed is not None:
                requester = self._requesters.pop(op_id, None)
                if requester is not None:
                    view = await self.ops._confirmed(confirmed, requester)
                    approval = self._approval(confirmed, outcome["request"], outcome["given"], "approved")
                    return {**view, "approval": approval}
            current = await self.ops.store.get(op_id) or outcome["op"]
            return self._view(current, outcome["request"], outcome["given"], "approved")
        if kind == "recorded":
            return self._view(outcome["op"], outcome["request"], outcome["given"])
        return await self._refuse(kind, outcome, op_id)

    async def _refuse(self, kind: Any, outcome: dict[str, Any], op_id: str, rejecting: bool = False) -> dict[str, Any]:
        if kind == "gone":
            raise NotFound("no such op awaiting approval")
        if kind == "no_authority":
            grants = ", ".join(n.grant for n in outcome["request"].needs)
            raise Forbidden(f"you hold none of the grants this op's approval needs ({grants})")
        if kind == "expired":
            self._requesters.pop(op_id, None)
            self.ops._deliver(outcome["op"], None)
            raise Conflict("the approval request expired; the op cannot be approved or rejected (propose again)")
        request, op = outcome["request"], outcome["op"]
        approved = request.status == "approved" or op.status in ("confirmed", "executing", "executed", "failed")
        if approved and not rejecting:
            return self._view(op, request, await self._counted(request))  # approved already: nothing to add
        raise Conflict(f"the op is {op.status} (approval {request.status}); it can no longer be approved or rejected")

    def _approval(
        self, op: Op, request: ApprovalRequest, given: dict[str, frozenset[str]], status: str | None = None
    ) -> dict[str, Any]:
        """The request as clients see it: what it needs and waits for, why (``reasons``: each matched
        rule's conditions with the op's values, in words) and the approval's address on the chat page
        (``url``: its approvers open it there; the requester's conversation is the requester's only)."""
        view = request.view()
        view["reasons"] = reasons(self.policies.current(), request.rules, op)
        view["url"] = f"/chat?approval={op.op_id}"
        if status:
            view["status"] = status
        view["approvedBy"] = sorted(given)
        view["waitingFor"] = missing(request.needs, given) if view["status"] == "pending" else []
        view["approversMayEdit"] = self.policies.current().approvers_may_edit(request.rules)
        return view

    def _view(
        self,
        op: Op,
        request: ApprovalRequest | None,
        given: dict[str, frozenset[str]],
        status: str | None = None,
    ) -> dict[str, Any]:
        view = op.view()
        view["requester"] = op.owner_user
        if request is not None:
            view["approval"] = self._approval(op, request, given, status)
        return view
