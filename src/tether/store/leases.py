"""Session leases and sweep claims across replicas, as ``Write`` units for the group writer.

A RUNNING session's lease (``lease_until``, ``lease_owner``) is set by each of its commits and by
its heartbeat; a replica that dies stops renewing, and another *claims* the session once the lease
has passed. Sweeps claim their rows the same way, so every replica may sweep and none sweeps a row
twice: on PostgreSQL and MariaDB the candidates are selected ``FOR UPDATE SKIP LOCKED`` (a row
another replica's sweep is claiming is skipped, not waited for), then moved by a conditional
UPDATE; on SQLite every write transaction is ``BEGIN IMMEDIATE`` (one writer at a time), so the
conditional UPDATE alone decides. The UPDATE's own condition is the guarantee on every backend:
it moves a row only from the state the claim expects, and ``rowcount`` says whether it did.

This module only builds SQL; it must never commit, and never touch a session object.
"""

from __future__ import annotations

from typing import Any

from tether.core.ports import AsyncJob
from tether.store import codec
from tether.store.writer import Write

_SQL = {
    "renew": "UPDATE agent_session SET lease_until = ?, lease_owner = ?"
    " WHERE id = ? AND version = ? AND status = 'RUNNING' AND (lease_owner = ? OR lease_owner IS NULL)",
    "lapsed": "SELECT id FROM agent_session WHERE status = 'RUNNING' AND lease_until < ?"
    " ORDER BY lease_until LIMIT ?",
    "take_running": "UPDATE agent_session SET lease_until = ?, lease_owner = ?"
    " WHERE id = ? AND status = 'RUNNING' AND lease_until < ?",
    "free": "SELECT id FROM agent_session WHERE id = ? AND status <> 'RUNNING'"
    " AND (lease_until IS NULL OR lease_until < ?)",
    "take_free": "UPDATE agent_session SET lease_until = ?, lease_owner = ?"
    " WHERE id = ? AND status <> 'RUNNING' AND (lease_until IS NULL OR lease_until < ?)",
    "release": "UPDATE agent_session SET lease_until = NULL, lease_owner = NULL"
    " WHERE id = ? AND lease_owner = ? AND status <> 'RUNNING'",
    "hand_back_running": "UPDATE agent_session SET lease_until = 0 WHERE lease_owner = ? AND status = 'RUNNING'",
    "hand_back_free": "UPDATE agent_session SET lease_until = NULL, lease_owner = NULL"
    " WHERE lease_owner = ? AND status <> 'RUNNING'",
    "overdue": "SELECT " + ", ".join(codec.JOB_COLUMNS) + " FROM async_job"
    " WHERE status = 'PENDING' AND deadline > 0 AND deadline < ? ORDER BY deadline LIMIT ?",
    "fail_job": "UPDATE async_job SET status = 'FAILED', error = ? WHERE job_id = ? AND status = 'PENDING'",
}  # fmt: skip
_LOCKED = ("lapsed", "free", "overdue")  # the selects a claim locks (PostgreSQL, MariaDB)


class LeaseStatements:
    """The lease SQL rendered for one DBAPI paramstyle; ``skip_locked`` on server databases."""

    def __init__(self, paramstyle: str, skip_locked: bool) -> None:
        mark = "?" if paramstyle == "qmark" else "%s"
        for name, sql in _SQL.items():
            if skip_locked and name in _LOCKED:
                sql += " FOR UPDATE SKIP LOCKED"
            setattr(self, name, sql.replace("?", mark))

    renew: str
    lapsed: str
    take_running: str
    free: str
    take_free: str
    release: str
    hand_back_running: str
    hand_back_free: str
    overdue: str
    fail_job: str


def renew(sql: LeaseStatements, session_id: str, version: int, owner: str, until: float) -> Write:
    """Extend the lease of a RUNNING session at ``version`` held by ``owner`` (or by no one)."""

    def run(cur: Any) -> bool:
        cur.execute(sql.renew, (until, owner, session_id, version, owner))
        return bool(cur.rowcount == 1)

    return Write(run)


def claim_lapsed(sql: LeaseStatements, owner: str, now: float, until: float, limit: int) -> Write:
    """RUNNING sessions whose lease has passed, now leased to ``owner``: their ids."""

    def run(cur: Any) -> list[str]:
        cur.execute(sql.lapsed, (now, limit))
        taken: list[str] = []
        for (session_id,) in cur.fetchall():
            cur.execute(sql.take_running, (until, owner, session_id, now))
            if cur.rowcount == 1:
                taken.append(str(session_id))
        return taken

    return Write(run)


def claim_free(sql: LeaseStatements, session_id: str, owner: str, now: float, until: float) -> Write:
    """Lease a session that is not RUNNING and that no replica holds (True), e.g. to apply a
    callback's result; False when it runs, or another replica holds it."""

    def run(cur: Any) -> bool:
        cur.execute(sql.free, (session_id, now))
        if cur.fetchone() is None:
            return False
        cur.execute(sql.take_free, (until, owner, session_id, now))
        return bool(cur.rowcount == 1)

    return Write(run)


def release(sql: LeaseStatements, session_id: str, owner: str) -> Write:
    """Give up ``owner``'s claim on a session that is not RUNNING (a claim that found nothing to do)."""

    def run(cur: Any) -> bool:
        cur.execute(sql.release, (session_id, owner))
        return bool(cur.rowcount == 1)

    return Write(run)


def hand_back(sql: LeaseStatements, owner: str) -> Write:
    """Every lease ``owner`` holds lapses now (a replica shutting down): another replica's next
    sweep recovers its RUNNING sessions at once instead of after the lease. -> leases handed back."""

    def run(cur: Any) -> int:
        cur.execute(sql.hand_back_running, (owner,))
        running = int(cur.rowcount)
        cur.execute(sql.hand_back_free, (owner,))
        return running + int(cur.rowcount)

    return Write(run)


def claim_overdue_jobs(sql: LeaseStatements, now: float, limit: int, reason: str) -> Write:
    """PENDING jobs past their deadline, each moved to FAILED by this claim alone: the jobs moved."""

    def run(cur: Any) -> list[AsyncJob]:
        cur.execute(sql.overdue, (now, limit))
        rows = [dict(zip(codec.JOB_COLUMNS, r, strict=True)) for r in cur.fetchall()]
        taken: list[AsyncJob] = []
        for row in rows:
            cur.execute(sql.fail_job, (reason, row["job_id"]))
            if cur.rowcount == 1:
                row.update(status="FAILED", error=reason)
                taken.append(codec.job_from_row(row))
        return taken

    return Write(run)
