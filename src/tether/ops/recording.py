"""How an op's changes are written and announced (``OpService``'s part): every move of the op row
is one conditional UPDATE with its audit row (``_change``), in one transaction with the session's
commit when the stores share the session store's writer; an outcome is written first (the truth),
then delivered to its session — riding the commit that announces it when the session waits on it
(``_record_delivered``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tether.core.events import EventType
from tether.core.session import Identity, Owner
from tether.errors import GuardRefused, NotFound
from tether.ops.executor_port import fingerprint_of
from tether.ops.model import Op, OpOutcome
from tether.store.audit import SqlAuditLog
from tether.store.writer import Write

if TYPE_CHECKING:
    from tether.core.runtime import Runtime
    from tether.ops.store import SqlOpStore

log = logging.getLogger("tether.ops")


class Recording:
    """The op row's moves, their audit rows and the outcome's delivery to the session."""

    if TYPE_CHECKING:
        store: SqlOpStore
        audit: SqlAuditLog
        runtime: Runtime

    async def _record(
        self,
        op: Op,
        outcome: OpOutcome,
        who: Identity | None,
        from_statuses: tuple[str, ...],
        announce: bool = False,
    ) -> Op:
        """Write the outcome to the op row (the truth), audit it, then tell the session.

        ``announce``: an auto op executed in the background right after its confirm, its session
        waiting on it — the outcome rides the session's commit that announces it (one commit,
        ``_record_delivered``). Outcomes recorded inside a request (a stranded op driven again, a
        manual op validated or reconciled) are written first and delivered in the background: the
        session may be running a turn, and the request must not wait for it."""
        now = time.time()
        values = {**outcome.values(), "lease_until": None, "updated_at": now}
        if outcome.status == "confirmed":
            values["status"] = "confirmed"
        elif outcome.status in ("executed", "failed"):
            values["executed_at"] = now
        if outcome.status == "draft":
            values["status"] = "failed"
            values["error"] = outcome.error or "the business system did not take the op; confirm again"
        done = replace(
            op,
            status=values["status"],
            result_bill_id=outcome.bill_id,
            result_bill_no=outcome.bill_no,
            link=outcome.link,
            message=outcome.message,
            error=values["error"],
            lease_until=None,
            executed_at=values.get("executed_at", op.executed_at),
        )
        action = "execute" if done.status in ("executed", "failed") else "validate"
        details: dict[str, Any] = {"result": outcome.values()}
        if action == "execute":  # what tether sent, and what the business system says it executed
            details["stagedFingerprint"] = fingerprint_of(op)
            if outcome.fingerprint:
                details["executedFingerprint"] = outcome.fingerprint
        audit = (done, action, details)
        if announce and op.session_id and self._shared():
            recorded = await self._record_delivered(op, done, from_statuses, values, audit, who)
            if recorded is not None:
                return recorded
        if not await self._change(op.op_id, from_statuses, values, audit):
            return (await self.store.get(op.op_id)) or op
        self._deliver(done, who)
        return done

    async def _record_delivered(
        self,
        op: Op,
        done: Op,
        from_statuses: tuple[str, ...],
        values: dict[str, Any],
        audit: tuple[Op, str, dict[str, Any]],
        who: Identity | None,
    ) -> Op | None:
        """The outcome on the op row (with its audit row) as the guard of the session's next
        commit — the one that shows OP_RESULT and resumes the turn: one transaction, one fsync,
        the truth never behind its announcement. Returns once that commit landed (the model's
        round goes on in the background); the op as stored when another writer recorded the
        outcome first; None when the session took no commit (gone, or moved on under retries):
        the caller then records the outcome alone."""
        landed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def mark(_: Any) -> None:
            if not landed.done():
                landed.set_result(True)

        guard = Write(self._change_run(op.op_id, from_statuses, values, audit), after_commit=mark)
        task = self._deliver(done, who, guard)
        assert task is not None
        await asyncio.wait((landed, task), return_when=asyncio.FIRST_COMPLETED)
        if landed.done():
            return done
        if not task.cancelled() and task.exception() is None and task.result() == "refused":
            return (await self.store.get(op.op_id)) or op
        return None  # nothing landed (the session is gone, or the delivery failed): record it alone

    async def _change(
        self,
        op_id: str,
        from_statuses: tuple[str, ...],
        values: dict[str, Any],
        audit: tuple[Op, str, dict[str, Any]],
        then: list[tuple[tuple[str, ...], dict[str, Any]]] | None = None,
        **where: Any,
    ) -> bool:
        """Move the op (a conditional UPDATE: True when this call made it), and only then append
        ``audit`` (the op as moved, the action, its details) and run the ``then`` moves — all in
        one transaction when the stores share the session store's writer."""
        sessions = self.store.sessions
        if sessions is None or not self._shared():
            if not await self.store.move(op_id, from_statuses, values, **where):
                return False
            await self._audit(*audit)
            for statuses, more in then or []:
                await self.store.move(op_id, statuses, more)
            return True
        return bool(await sessions.submit(Write(self._change_run(op_id, from_statuses, values, audit, then, **where))))

    def _shared(self) -> bool:
        """The op store and the audit log write through the session store's group writer."""
        return self.store.sessions is not None and self.audit.sessions is not None

    def _change_run(
        self,
        op_id: str,
        from_statuses: tuple[str, ...],
        values: dict[str, Any],
        audit: tuple[Op, str, dict[str, Any]],
        then: list[tuple[tuple[str, ...], dict[str, Any]]] | None = None,
        **where: Any,
    ) -> Callable[[Any], bool]:
        """``_change`` as statements on the session store writer's cursor."""
        gate = self.store.move_run(op_id, from_statuses, values, **where)
        steps: list[Callable[[Any], Any]] = [self.audit.append_run(self._audit_row(*audit))]
        steps += [self.store.move_run(op_id, statuses, more) for statuses, more in then or []]

        def run(cur: Any) -> bool:
            if not gate(cur):
                return False
            for step in steps:
                step(cur)
            return True

        return run

    @staticmethod
    def _audit_body(op: Op, details: dict[str, Any]) -> dict[str, Any]:
        body = {"brand": op.brand, "subsidiary": op.subsidiary, "form": op.form_id, "op": op.op_type, **details}
        if op.target_id:
            body["target"] = op.target_id
        return body

    def _audit_row(self, op: Op, action: str, details: dict[str, Any]) -> dict[str, Any]:
        owner, body = Owner(op.owner_user, op.owner_tenant), self._audit_body(op, details)
        return SqlAuditLog.action_row(owner, op.session_id, action, op.op_id, body, op.status)

    async def _audit(self, op: Op, action: str, details: dict[str, Any]) -> None:
        owner, body = Owner(op.owner_user, op.owner_tenant), self._audit_body(op, details)
        await self.audit.record_action(owner, op.session_id, action, op.op_id, body, op.status)

    def _deliver(self, op: Op, who: Identity | None, guard: Write | None = None) -> asyncio.Task[str] | None:
        """Start delivering ``op``'s outcome to its session (``guard``: see ``_record_delivered``)."""
        if not op.session_id:
            return None
        view = op.view()
        result = {
            k: view[k] for k in ("opId", "status", "state", "text", "link", "billId", "billNo", "message", "error")
        }
        events: list[tuple[str, dict[str, Any]]] = [(EventType.OP_RESULT, {"interactionId": op.interaction_id, **view})]
        if op.link:
            events.append((EventType.LINK, {"opId": op.op_id, "url": op.link, "state": op.state}))
        owner = Owner(op.owner_user, op.owner_tenant)
        # a fresh task: the model's round must not run inside the caller's request or its lock
        return self.runtime.spawn(self._deliver_now(op, result, events, who or owner, guard))

    async def _deliver_now(
        self,
        op: Op,
        result: dict[str, Any],
        events: list[tuple[str, dict[str, Any]]],
        who: Owner | Identity,
        guard: Write | None,
    ) -> str:
        """How it went: ``delivered``; ``refused`` (the guard matched nothing: another writer
        recorded the outcome); ``gone`` (the session no longer exists)."""
        try:
            await self.runtime.deliver_outcome(str(op.session_id), op.interaction_id, result, events, who, guard)
        except GuardRefused:
            return "refused"
        except NotFound:
            log.warning("op %s: its session %s is gone", op.op_id, op.session_id)
            return "gone"
        return "delivered"
