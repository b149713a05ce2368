"""Approval requests and approvals in tether's database (``op_approval_request``, ``op_approval``,
migration 0008), written as statements on the session store's group writer so that a decision,
the op's move and its audit row are one transaction. Each decision starts by locking the op's
request row (an UPDATE of it), so concurrent decisions on one op — other replicas' included —
run one after another and each sees the approvals committed before it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from tether.ops.approvals.policy import Need
from tether.store.database import create_read_engine
from tether.store.tables import op_approval, op_approval_request

if TYPE_CHECKING:
    from tether.store.sql_store import SqlStore

_REQUEST = tuple(c.name for c in op_approval_request.columns)


@dataclass(slots=True)
class ApprovalRequest:
    op_id: str
    tenant: str
    rules: list[str]
    needs: list[Need]
    policy_version: str
    fingerprint: str
    status: str  # pending | approved | rejected | expired
    requested_at: float
    expire_at: float
    decided_at: float | None = None
    decided_by: str | None = None
    comment: str | None = None
    void_reason: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "rules": self.rules,
            "needs": [{"grant": n.grant, "count": n.count} for n in self.needs],
            "policyVersion": self.policy_version,
            "fingerprint": self.fingerprint,
            "requestedAt": self.requested_at,
            "expiresAt": self.expire_at,
            "decidedAt": self.decided_at,
            "decidedBy": self.decided_by,
            "comment": self.comment,
            "voidReason": self.void_reason,
        }


def _request(values: dict[str, Any]) -> ApprovalRequest:
    values["rules"] = json.loads(values["rules"])
    values["needs"] = [Need(str(n["grant"]), int(n["count"])) for n in json.loads(values["needs"])]
    return ApprovalRequest(**values)


def _needs_text(needs: list[Need]) -> str:
    return json.dumps([{"grant": n.grant, "count": n.count} for n in needs])


class ApprovalStore:
    def __init__(self, sessions: SqlStore) -> None:
        self.sessions = sessions
        self.engine = create_read_engine(sessions.url)
        m = self.m = sessions.placeholder
        self._insert_request = (
            f"INSERT INTO op_approval_request ({', '.join(_REQUEST)}) VALUES ({', '.join([m] * len(_REQUEST))})"
        )

        self._get_request = f"SELECT {', '.join(_REQUEST)} FROM op_approval_request WHERE op_id = {m}"

    def close(self) -> None:
        self.engine.dispose()

    # ---- statements on the writer's cursor ----------------------------------------------------------

    def insert_request(self, cur: Any, request: ApprovalRequest) -> None:
        values = {name: getattr(request, name) for name in _REQUEST}
        values["rules"] = json.dumps(request.rules, ensure_ascii=False)
        values["needs"] = _needs_text(request.needs)
        cur.execute(f"DELETE FROM op_approval_request WHERE op_id = {self.m}", (request.op_id,))
        cur.execute(self._insert_request, tuple(values[n] for n in _REQUEST))

    def lock_request(self, cur: Any, op_id: str) -> ApprovalRequest | None:
        """Take the request row's write lock (held to the end of the transaction), then read it."""
        m = self.m
        cur.execute(f"UPDATE op_approval_request SET status = status WHERE op_id = {m}", (op_id,))
        cur.execute(self._get_request, (op_id,))
        row = cur.fetchone()
        return None if row is None else _request(dict(zip(_REQUEST, row, strict=True)))

    def update_request(self, cur: Any, op_id: str, values: dict[str, Any]) -> None:
        m = self.m
        if "needs" in values:
            values = {**values, "needs": _needs_text(values["needs"])}
        if "rules" in values:
            values = {**values, "rules": json.dumps(list(values["rules"]), ensure_ascii=False)}
        sets = ", ".join(f"{k} = {m}" for k in values)
        cur.execute(f"UPDATE op_approval_request SET {sets} WHERE op_id = {m}", (*values.values(), op_id))

    def approvals(self, cur: Any, op_id: str, fingerprint: str) -> dict[str, frozenset[str]]:
        """The approvals that count for ``fingerprint``: ``user@tenant`` → the grants they approved with."""
        m = self.m
        cur.execute(
            f"SELECT approver_user, approver_tenant, grants FROM op_approval"
            f" WHERE op_id = {m} AND fingerprint = {m} AND void_reason IS NULL ORDER BY id",
            (op_id, fingerprint),
        )
        return {f"{u}@{t}": frozenset(json.loads(g)) for u, t, g in cur.fetchall()}

    def add_approval(
        self,
        cur: Any,
        op_id: str,
        user: str,
        tenant: str,
        grants: frozenset[str],
        fingerprint: str,
        version: str,
        at: float,
    ) -> None:
        m = self.m
        cur.execute(
            "INSERT INTO op_approval (op_id, approver_user, approver_tenant, grants, fingerprint, policy_version, at)"
            f" VALUES ({', '.join([m] * 7)})",
            (op_id, user, tenant, json.dumps(sorted(grants)), fingerprint, version, at),
        )

    def void_approvals(self, cur: Any, op_id: str, reason: str) -> int:
        m = self.m
        cur.execute(
            f"UPDATE op_approval SET void_reason = {m} WHERE op_id = {m} AND void_reason IS NULL",
            (reason[:2000], op_id),
        )
        return int(cur.rowcount or 0)

    # ---- reads ----------------------------------------------------------------------------------------

    async def _read(self, fn: Callable[[sa.Connection], Any]) -> Any:
        def work() -> Any:
            with self.engine.connect() as conn:
                return fn(conn)

        return await asyncio.to_thread(work)

    async def get(self, op_id: str) -> ApprovalRequest | None:
        """The op's request (an approve's first read: raw SQL on the store's hot reader)."""
        statement, params = self._get_request, (op_id[:64],)

        def run(cur: Any) -> ApprovalRequest | None:
            cur.execute(statement, params)
            row = cur.fetchone()
            return None if row is None else _request(dict(zip(_REQUEST, row, strict=True)))

        request: ApprovalRequest | None = await self.sessions.read_rows(run)
        return request

    async def listed(self, tenant: str, status: str, limit: int) -> list[ApprovalRequest]:
        query = (
            sa.select(op_approval_request)
            .where(op_approval_request.c.tenant == tenant, op_approval_request.c.status == status)
            .order_by(op_approval_request.c.requested_at.desc(), op_approval_request.c.op_id.desc())
            .limit(limit)
        )
        rows = await self._read(lambda conn: conn.execute(query).all())
        return [_request(dict(r._mapping)) for r in rows]

    async def due(self, now: float, limit: int = 200) -> list[ApprovalRequest]:
        query = (
            sa.select(op_approval_request)
            .where(op_approval_request.c.status == "pending", op_approval_request.c.expire_at <= now)
            .limit(limit)
        )
        rows = await self._read(lambda conn: conn.execute(query).all())
        return [_request(dict(r._mapping)) for r in rows]

    async def given(self, op_id: str) -> list[dict[str, Any]]:
        """Every approval of the op, voided ones included (with why), oldest first."""
        query = sa.select(op_approval).where(op_approval.c.op_id == op_id[:64]).order_by(op_approval.c.id)
        rows = await self._read(lambda conn: conn.execute(query).all())
        return [
            {
                "approver": r.approver_user,
                "grants": json.loads(r.grants),
                "at": r.at,
                "fingerprint": r.fingerprint,
                "policyVersion": r.policy_version,
                "void": r.void_reason,
            }
            for r in rows
        ]
