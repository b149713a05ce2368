"""``OpService``: proposing, confirming, cancelling, expiring and reconciling ops — the
deterministic path no model can call.

- The confirm gate is one conditional UPDATE (``draft | failed → confirmed``): of any number of
  concurrent confirms one wins; the others answer the op's state and execute nothing.
- Auto ops then execute in the background as the confirming user (``executing``); manual ops are
  validated and end ``confirmed`` with a prefill link (待处理) until reconciliation sees them done.
- What runs is what was shown (``binding``): right before it executes or validates, the op's
  staged values are re-read from the business system and compared by fingerprint, and the
  business system compares again; on a difference the op is voided, never executed.
- Every outcome is written to the op row first (the truth), audited, then delivered to the
  session (OP_RESULT + LINK, and the proposal's tool message replaced before the model's round).
- When the op store and the audit log share the session store's database (its group writer), an
  op's change and its audit row are one transaction (``_change``), and a proposal's op row and
  audit row are committed in the transaction of the session step that shows the proposal.
- An op left ``confirmed``/``executing`` by a dead process (lease expired) is driven again through
  the executor's idempotent execute on the owner's next confirm or read: there is no credential
  without the user.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tether.core.runtime import Runtime
from tether.core.session import Identity, Owner
from tether.core.telemetry import OP_CONFIRM, OP_EXECUTE, NoTelemetry, Telemetry
from tether.errors import AwaitingApproval, Conflict, NotFound, ToolError
from tether.ops import binding
from tether.ops.executor_port import OpExecutor, StagedDiffers, fingerprint_of
from tether.ops.model import CLOSED, CONFIRMABLE, Op, OpOutcome
from tether.ops.recording import Recording
from tether.ops.store import SqlOpStore
from tether.ops.taint import acknowledgement
from tether.store.audit import SqlAuditLog
from tether.store.writer import Write

log = logging.getLogger("tether.ops")
EXPIRED = "the proposal expired before it was confirmed; propose again"


# called with a point's name where a crash would leave the op half-recorded ("op-after-execute":
# the business system executed it, tether has not recorded the outcome); a crash-safety test
# passes one that kills the process there
Failpoint = Callable[[str], None]


def no_failpoint(_name: str) -> None:
    """Production: nothing happens at a failpoint."""


CANCELLABLE = ("draft", "awaiting")  # a draft, or one waiting for its approvers (the requester withdraws it)


def _not_cancellable(op: Op) -> Conflict:
    if op.status == "executed":
        return Conflict(f"the op was already carried out ({op.message or 'executed'}); it cannot be cancelled")
    return Conflict(f"the op is {op.status}; only a draft or an op awaiting approval can be cancelled")


RECONCILE_IN_LIST = 20  # manual ops a list call asks the business system about (one call each)


class OpService(Recording):
    def __init__(
        self,
        store: SqlOpStore,
        runtime: Runtime,
        audit: SqlAuditLog,
        executors: dict[str, OpExecutor],
        ttl_s: float = 86_400.0,
        lease_s: float = 30.0,
        telemetry: Telemetry | None = None,
        failpoint: Failpoint = no_failpoint,
    ) -> None:
        self.telemetry: Telemetry = telemetry or NoTelemetry()
        self.failpoint = failpoint
        self.store = store
        self.runtime = runtime
        self.audit = audit
        self.executors = executors
        self.ttl_s = ttl_s
        self.lease_s = lease_s
        # the approval gate (tether.ops.approvals), when a policy is configured: set by the wiring
        self.approvals: Any = None

    # ---- proposing (called by a pack's propose tool through ``tether.pack.propose_op``) ------------

    async def propose(self, op: Op) -> Op:
        if op.executor not in self.executors:
            raise ToolError(f"no op executor {op.executor!r} is installed")
        details = {"payload": op.payload, "diff": op.diff, "sourceRef": op.source_ref}
        sessions = self.store.sessions
        if sessions is None or self.audit.sessions is None:
            await self.store.insert(op)
            await self._audit(op, "propose", details)
            return op
        insert, append = self.store.insert_run(op), self.audit.append_run(self._audit_row(op, "propose", details))

        def run(cur: Any) -> None:
            insert(cur)
            append(cur)

        if op.session_id:  # in the transaction of the step that shows the proposal
            sessions.attach(op.session_id, Write(run))
        else:
            await sessions.submit(Write(run))
        return op

    # ---- the user's actions ----------------------------------------------------------------------

    async def get(self, op_id: str, who: Identity) -> dict[str, Any]:
        op = await self._owned(op_id, who.owner)
        op = await self._drive_if_stranded(op, who)
        if op.status == "confirmed" and not op.auto_execute:
            op = await self._reconcile(op, who)
        return op.view()

    async def list_ops(
        self, who: Identity, status: str | None, session_id: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """The caller's ops, newest first. Manual ops waiting in the business system (confirmed)
        are reconciled first — the newest ``RECONCILE_IN_LIST``, concurrently — so "my AI todos"
        (``status=confirmed``) does not list one the user already saved there."""
        ops = await self.store.list_ops(who.owner, status, session_id, limit)
        waiting = [op for op in ops if op.status == "confirmed" and not op.auto_execute][:RECONCILE_IN_LIST]
        if waiting:
            fresh = {op.op_id: op for op in await asyncio.gather(*(self._reconcile(op, who) for op in waiting))}
            ops = [fresh.get(op.op_id, op) for op in ops]
            ops = [op for op in ops if status is None or op.status == status]
        return [op.view() for op in ops]

    async def confirm(self, op_id: str, who: Identity, *, acknowledged: bool = False) -> dict[str, Any]:
        """``acknowledged``: the person ticked off the values marked tainted in the diff (asked for
        when the approval policy says ``acknowledge_tainted``)."""
        attributes = {"tether.op.id": op_id, "enduser.id": who.owner.user_id, "tether.tenant": who.owner.tenant}
        with self.telemetry.span(OP_CONFIRM, attributes) as span:
            view = await self._confirm(op_id, who, acknowledged)
            span.set("tether.op.status", str(view.get("status")))
            if view.get("sessionId"):
                span.set("tether.session.id", str(view["sessionId"]))
            return view

    async def _confirm(self, op_id: str, who: Identity, acknowledged: bool) -> dict[str, Any]:
        if self.approvals is not None:  # a draft a policy rule matches waits for its approvers instead
            held: dict[str, Any] | None = await self.approvals.hold(op_id, who, acknowledged)
            if held is not None:
                return held
        now = time.time()
        if self.store.sessions is not None and self.audit.sessions is not None:
            found, won = await self._read_and_gate(op_id, who, now, acknowledged)
            if found is None:
                raise NotFound("no such op")
            if won:
                return await self._confirmed(found, who)
            op = found  # not confirmable as read: the cases below answer it
        else:
            op = await self._owned(op_id, who.owner)
        if not self._permits(op, who):
            raise NotFound(f"no access to form {op.form_id!r} any more: the op cannot be confirmed")
        if op.status == "draft" and op.expire_at <= now:
            op = await self._expire(op)
        if op.status in CLOSED:
            raise Conflict(f"the op is {op.status}; it cannot be confirmed (propose again)")
        if op.status == "failed" and op.expire_at <= now:
            raise Conflict("the op failed and its proposal has expired since; it cannot be retried (propose again)")
        if op.status not in CONFIRMABLE:
            return (await self._drive_if_stranded(op, who)).view()
        gate, audit, then, confirmed = self._gate_plan(op, now, acknowledged)
        if not await self._change(op.op_id, CONFIRMABLE, gate, audit, then, live_at=now):
            current = await self._owned(op_id, who.owner)
            if current.status in CLOSED:
                raise Conflict(f"the op is {current.status}; it cannot be confirmed (propose again)")
            return current.view()  # another confirm won the gate
        return await self._confirmed(confirmed, who)

    def _gate_plan(
        self, op: Op, now: float, acknowledged: bool | None = None
    ) -> tuple[dict[str, Any], tuple[Op, str, dict[str, Any]], list[tuple[tuple[str, ...], dict[str, Any]]], Op]:
        """The gate's values, its audit row, the moves after it (auto: on to executing) and the op
        as the gate leaves it. ``acknowledged``: the confirming person's tick of the values marked
        tainted, recorded on the audit row with the marked fields (None: not the person's confirm —
        an approval passing the gate; their tick is on the ``op.approval_request`` row)."""
        values = {"status": "confirmed", "confirmed_at": now, "lease_until": now + self.lease_s, "error": None}
        gate = {**values, "attempts": "+1", "updated_at": now}
        confirmed = replace(
            op, status="confirmed", confirmed_at=now, lease_until=now + self.lease_s, attempts=op.attempts + 1
        )
        details = {"auto": op.auto_execute, "attempt": confirmed.attempts, "stagedFingerprint": fingerprint_of(op)}
        if acknowledged is not None:
            details.update(acknowledgement(op.diff, acknowledged))
        audit = (confirmed, "confirm", details)
        then: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        if op.auto_execute:  # straight on to executing, in the gate's transaction
            then.append((("confirmed",), {"status": "executing", "updated_at": now}))
        return gate, audit, then, confirmed

    async def _read_and_gate(self, op_id: str, who: Identity, now: float, acknowledged: bool) -> tuple[Op | None, bool]:
        """One transaction on the session store's writer: read the caller's op and, when it is
        confirmable (draft or failed, not past its expiry, its form still the caller's), pass the
        gate with its audit row and moves. Returns the op (as the gate left it when this call won)
        and whether it won."""
        read = self.store.get_run(op_id, who.owner)

        def run(cur: Any) -> tuple[Op | None, bool]:
            op = read(cur)
            if op is None or op.status not in CONFIRMABLE or op.expire_at <= now or not self._permits(op, who):
                return op, False
            gate, audit, then, confirmed = self._gate_plan(op, now, acknowledged)
            if not self.store.move_run(op.op_id, CONFIRMABLE, gate, live_at=now)(cur):
                return op, False
            self.audit.append_run(self._audit_row(*audit))(cur)
            for statuses, more in then:
                self.store.move_run(op.op_id, statuses, more)(cur)
            return confirmed, True

        assert self.store.sessions is not None
        found: tuple[Op | None, bool] = await self.store.sessions.submit(Write(run))
        return found

    async def _confirmed(self, op: Op, who: Identity) -> dict[str, Any]:
        """After this call won the gate: an auto op executes in the background, a manual one is
        validated."""
        if op.auto_execute:
            op = replace(op, status="executing")
            self.runtime.spawn(self._execute(op, who, announce=True))
            return op.view()
        return (await self._validate(op, who)).view()

    async def check_cancel(self, session_id: str, owner: Owner, withdraw: bool = False) -> None:
        """Refuse (409) to cancel a session while a confirmed automatic write of it is being carried
        out: its outcome ends the turn (the stored states only: no business-system call); and,
        unless ``withdraw``, while a confirmed write of it awaits approval (``AwaitingApproval``):
        stopping a turn is not withdrawing a request the person confirmed."""
        for stored in await self.store.list_ops(owner, None, session_id, 100):
            if stored.status == "awaiting" and not withdraw:
                raise AwaitingApproval(
                    f"the confirmed write ({stored.form_name or stored.form_id}, op {stored.op_id}) awaits approval: "
                    'stopping the session would withdraw it; send {"withdraw": true} to withdraw the request'
                )
            if stored.state == "processing":
                raise Conflict(
                    f"a confirmed write ({stored.form_name or stored.form_id}, op {stored.op_id}) is being carried "
                    "out and cannot be stopped; its outcome ends the turn — wait for it"
                )

    async def cancel_drafts(self, session_id: str, who: Identity) -> None:
        """A cancelled session's draft proposals, and those awaiting approval (withdrawn: the
        caller said so, ``check_cancel``), go with it; one the business system already carried out
        keeps that outcome."""
        waiting = [*await self.list_ops(who, "draft", session_id, 100)]
        waiting += await self.list_ops(who, "awaiting", session_id, 100)
        for op in waiting:
            with contextlib.suppress(Conflict):
                await self.cancel(str(op["opId"]), who)

    async def cancel(self, op_id: str, who: Identity) -> dict[str, Any]:
        """Cancel a draft — in the business system first: what it already carried out is recorded
        as done and the cancel refused (409), so no caller, however many cancel at once, is told
        ``cancelled`` about an op that ends executed."""
        op = await self._owned(op_id, who.owner)
        if op.status == "draft" and op.expire_at <= time.time():
            op = await self._expire(op)
        if op.status == "cancelled":
            return op.view()
        if op.status not in CANCELLABLE:
            raise _not_cancellable(op)
        try:
            there = await self._executor(op).cancel(op, who.credential)
        except ToolError as exc:  # the business system's draft expires by itself
            log.warning("cancelling op %s in the business system failed: %s", op.op_id, exc.message)
        else:
            if there.status == "executed":  # carried out there (by its own executor): that is the truth
                done = await self._record(op, there, who, ("draft",))
                raise Conflict(f"the op was already carried out in the business system ({done.message or 'executed'})")
        now = time.time()
        cancelled = replace(op, status="cancelled", message="已取消")
        values = {"status": "cancelled", "message": "已取消", "updated_at": now}
        if not await self._change(op.op_id, CANCELLABLE, values, (cancelled, "cancel", {})):
            current = await self._owned(op_id, who.owner)
            if current.status == "cancelled":
                return current.view()
            raise _not_cancellable(current)
        self._deliver(cancelled, who)
        return cancelled.view()

    # ---- the sweeper ------------------------------------------------------------------------------

    async def sweep(self) -> int:
        """Expire drafts past their time (run by the services' sweep loop)."""
        count = 0
        for op in await self.store.due_drafts(time.time()):
            if (await self._expire(op)).status == "expired":
                count += 1
        if self.approvals is not None:
            count += await self.approvals.sweep()
        return count

    # ---- internals --------------------------------------------------------------------------------

    async def _owned(self, op_id: str, owner: Owner) -> Op:
        op = await self.store.get(op_id, owner)
        if op is None:
            raise NotFound("no such op")
        return op

    def _permits(self, op: Op, who: Identity) -> bool:
        """The executor's own check that the caller may still act on the op, when it has one (the
        ERP's: the op's form is still among the caller's grants)."""
        executor = self.executors.get(op.executor)
        return executor is None or executor.permits(op, who)

    def _executor(self, op: Op) -> OpExecutor:
        executor = self.executors.get(op.executor)
        if executor is None:
            raise ToolError(f"no op executor {op.executor!r} is installed")
        return executor

    async def _expire(self, op: Op) -> Op:
        now = time.time()
        values = {"status": "expired", "error": EXPIRED, "updated_at": now}
        expired = replace(op, status="expired", error=EXPIRED)
        if not await self._change(op.op_id, ("draft",), values, (expired, "expire", {})):
            return (await self.store.get(op.op_id)) or op
        op = expired
        self._deliver(op, None)
        return op

    async def _drive_if_stranded(self, op: Op, who: Identity) -> Op:
        """An auto op whose runner died (lease expired) is executed again, idempotently, as its owner."""
        if op.status not in ("confirmed", "executing") or not op.auto_execute:
            return op
        now = time.time()
        if op.lease_until is not None and op.lease_until > now:
            return op
        values = {"status": "executing", "lease_until": now + self.lease_s, "attempts": "+1", "updated_at": now}
        if not await self.store.move(op.op_id, ("confirmed", "executing"), values, lease_before=now):
            return (await self.store.get(op.op_id)) or op
        log.warning("op %s was left %s by a stopped process; executing it again", op.op_id, op.status)
        stranded = replace(op, status="executing", lease_until=now + self.lease_s, attempts=op.attempts + 1)
        return await self._execute(stranded, who)

    async def _execute(self, op: Op, who: Identity, announce: bool = False) -> Op:
        """Run the op in the business system and record its outcome (``announce``: see ``_record``)."""
        attributes = {
            "tether.op.id": op.op_id,
            "tether.op.type": op.op_type,
            "tether.op.form": op.form_id,
            "tether.op.attempt": op.attempts,
            "tether.session.id": op.session_id or "",
            "enduser.id": op.owner_user,
            "tether.tenant": op.owner_tenant,
        }
        with self.telemetry.span(OP_EXECUTE, attributes) as span:
            span.content("tether.op.payload", lambda: op.payload)  # business data: only when captured
            try:  # bound to what was approved: re-read, then the business system compares again
                await binding.check_staged(self._executor(op), op, who.credential)
                outcome = await self._executor(op).execute(op, who.credential)
            except StagedDiffers as exc:
                span.fail(exc.message)
                return await binding.void(self, op, who, exc, ("executing",))
            except ToolError as exc:
                outcome = OpOutcome("failed", error=f"{exc.message}; confirm again to retry")
            self.failpoint("op-after-execute")
            span.set("tether.op.status", outcome.status)
            if outcome.status == "failed":
                span.fail(outcome.error or "the op failed")
            return await self._record(op, outcome, who, ("executing",), announce)

    async def _validate(self, op: Op, who: Identity) -> Op:
        try:
            await binding.check_staged(self._executor(op), op, who.credential)
            outcome = await self._executor(op).validate(op, who.credential)
        except StagedDiffers as exc:
            return await binding.void(self, op, who, exc, ("confirmed",))
        except ToolError as exc:
            outcome = OpOutcome("failed", error=f"{exc.message}; confirm again to retry")
        return await self._record(op, outcome, who, ("confirmed",))

    async def _reconcile(self, op: Op, who: Identity) -> Op:
        """A manual op's fate in the business system (the user saved, or it expired there)."""
        try:
            outcome = await self._executor(op).status(op, who.credential)
        except ToolError:
            return op
        if outcome.status == "draft":  # its validation never ran there (the process died): run it now
            return await self._validate(op, who)
        if outcome.status == "confirmed" and op.link:
            return op
        return await self._record(op, outcome, who, ("confirmed",))
