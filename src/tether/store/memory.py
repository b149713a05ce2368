"""``MemoryStore``: the ``SessionStore`` and ``DslStore`` ports in process memory.

For quick tests and the no-persistence benchmark variant. Semantics match ``SqlStore`` exactly:
the same codec (so the same JSON snapshot is taken at commit time, and non-JSON data fails the
same way), the version check, the job compare-and-set, owner checks and unique keys. Each call
validates everything before changing anything, with no await in between, so a failed commit
writes nothing. Nothing survives the process; this module must never be used as a real store.
"""

from __future__ import annotations

import bisect
from typing import Any

from tether.core.events import RuntimeEvent
from tether.core.ports import AsyncJob, Clock, Commit, DslSnapshot, SessionSummary, SystemClock
from tether.core.session import AgentSession, Owner, Status
from tether.errors import Conflict, NotFound
from tether.store import codec
from tether.store.writer import WriterStats

_DSL_HEAD = ("dsl_id", "owner_user", "owner_tenant", "source_session_id", "title", "params", "created_at")
_DSL_STEP = ("dsl_id", "idx", "step_id", "tool_id", "args", "schema_hash")
_UPDATED = ("status", "version", "lease_until", "updated_at")  # what a commit changes, and the state


def _keep(text: str) -> str:
    return text  # bodies stay JSON text: nothing to save in memory by compressing


class MemoryStore:
    """Sessions, events, jobs and DSL snapshots as stored rows in dicts."""

    def __init__(self, lease_seconds: float = 30.0, clock: Clock | None = None) -> None:
        self.lease_seconds = lease_seconds
        self._clock = clock or SystemClock()
        self._sessions: dict[str, dict[str, Any]] = {}
        self._messages: dict[str, list[codec.Body]] = {}
        self._steps: dict[str, list[codec.Body]] = {}
        self._events: dict[str, list[tuple[int, codec.Body]]] = {}  # (last seq, batch), sorted
        self._jobs: dict[str, dict[str, Any]] = {}
        self._dsl: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        self._executions: dict[str, dict[str, Any]] = {}
        self._ledger = codec.Ledger()
        self.writer_stats = WriterStats()

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    # -- SessionStore: writes ------------------------------------------------------------------

    async def create(self, commit: Commit) -> None:
        rows = self._snapshot(commit, create=True)
        if rows.session_id in self._sessions:
            raise Conflict(f"session {rows.session_id} already exists")
        self._check_children(rows, messages=0, steps=0)
        self._sessions[rows.session_id] = dict(zip(codec.SESSION_COLUMNS, rows.header, strict=True))
        self._messages[rows.session_id] = []
        self._steps[rows.session_id] = []
        self._events[rows.session_id] = []
        self._apply(rows)
        codec.apply_committed(commit.session, rows, self._ledger)

    async def commit(self, commit: Commit) -> None:
        rows = self._snapshot(commit, create=False)
        sid = rows.session_id
        row = self._sessions.get(sid)
        if row is None:
            raise NotFound(f"session {sid} not found")
        if row["version"] != rows.expected_version:
            raise Conflict(
                f"session {sid} is at version {row['version']}, not "
                f"{rows.expected_version}: another writer committed first"
            )
        if rows.first_seq <= row["last_seq"]:
            raise Conflict(
                f"session {sid}: event {rows.first_seq} is not above the last stored one ({row['last_seq']})"
            )
        self._check_children(rows, len(self._messages[sid]), 0 if rows.rewrite_steps else len(self._steps[sid]))
        h = dict(zip(codec.SESSION_COLUMNS, rows.header, strict=True))
        for key in _UPDATED:
            row[key] = h[key]
        if not rows.keep_state:
            row["state"] = h["state"]
        row["last_seq"] = max(row["last_seq"], rows.max_seq)
        self._apply(rows)
        codec.apply_committed(commit.session, rows, self._ledger)

    def _snapshot(self, commit: Commit, create: bool) -> codec.CommitRows:
        if commit.guard is not None:  # only a SqlStore makes them (an op store sharing its writer)
            raise TypeError("MemoryStore cannot run a commit guard")
        return codec.snapshot_commit(commit, self._clock.now(), self.lease_seconds, self._ledger, _keep, create)

    def _check_children(self, rows: codec.CommitRows, messages: int, steps: int) -> None:
        """The unique keys the SQL schema enforces: message and step idx, event seq, job id."""
        if rows.new_messages and rows.new_messages[0][1] < messages:
            raise Conflict(f"session {rows.session_id}: message {rows.new_messages[0][1]} already stored")
        if rows.new_steps and rows.new_steps[0][1] < steps:
            raise Conflict(f"session {rows.session_id}: step {rows.new_steps[0][1]} already stored")
        job_ids = [j[0] for j in rows.new_jobs]
        if len(set(job_ids)) != len(job_ids):
            raise Conflict("duplicate job id in one commit")
        if any(j in self._jobs for j in job_ids):
            raise Conflict("job already exists")

    def _apply(self, rows: codec.CommitRows) -> None:
        sid = rows.session_id
        messages, steps = self._messages[sid], self._steps[sid]
        for body, _, idx in rows.replaced_messages:
            if idx < len(messages):
                messages[idx] = body
        messages.extend(m[2] for m in rows.new_messages)
        if rows.rewrite_steps:
            steps.clear()
        for body, _, idx in rows.replaced_steps:
            if idx < len(steps):
                steps[idx] = body
        steps.extend(st[2] for st in rows.new_steps)
        self._events[sid].extend((last, body) for _, last, body in rows.events)
        for j in rows.new_jobs:
            self._jobs[j[0]] = dict(zip(codec.JOB_COLUMNS, j, strict=True))
        for _, job_id in rows.applied_jobs:
            if job_id in self._jobs:
                self._jobs[job_id]["applied"] = True

    async def renew_lease(self, session_id: str, version: int) -> bool:
        row = self._sessions.get(session_id)
        if row is None or row["version"] != version or row["status"] != Status.RUNNING.value:
            return False
        row["lease_until"] = self._clock.now() + self.lease_seconds
        return True

    async def finish_job(self, job_id: str, status: str, result: Any, error: str | None) -> bool:
        """Record a job's outcome once: True if this call moved it out of PENDING."""
        job = self._jobs.get(job_id)
        if job is None or job["status"] != "PENDING":
            return False
        body = None if result is None else codec.dumps(result)
        job.update(status=status, result=body, error=error)
        return True

    async def rename(self, session_id: str, owner: Owner, title: str) -> SessionSummary:
        row = self._owned(session_id, owner)
        row["title"] = title
        return codec.summary_from_row(row)

    async def set_archived(self, session_id: str, owner: Owner, archived: bool) -> SessionSummary:
        row = self._owned(session_id, owner)
        row["archived"] = bool(archived)
        return codec.summary_from_row(row)

    def _owned(self, session_id: str, owner: Owner | None) -> dict[str, Any]:
        row = self._sessions.get(session_id)
        if row is None or not codec.owns(owner, row["owner_user"], row["owner_tenant"]):
            raise NotFound(f"session {session_id} not found")
        return row

    # -- SessionStore: reads -------------------------------------------------------------------

    async def load(self, session_id: str, owner: Owner | None = None) -> AgentSession:
        row = self._owned(session_id, owner)
        s = codec.session_from_row(row, self._messages[session_id], self._steps[session_id])
        self._ledger.loaded(s)
        return s

    async def last_seq(self, session_id: str) -> int:
        row = self._sessions.get(session_id)
        if row is None:
            raise NotFound(f"session {session_id} not found")
        return int(row["last_seq"])

    async def get_summary(self, session_id: str, owner: Owner) -> SessionSummary:
        return codec.summary_from_row(self._owned(session_id, owner))

    async def list_sessions(
        self, owner: Owner, limit: int, offset: int, query: str | None = None, archived: bool | None = False
    ) -> list[SessionSummary]:
        mine = [
            r
            for r in self._sessions.values()
            if r["owner_user"] == owner.user_id
            and r["owner_tenant"] == owner.tenant
            and (archived is None or r["archived"] == archived)
            and (not query or codec.title_matches(r["title"], query))
        ]
        order = {sid: i for i, sid in enumerate(self._sessions)}  # creation order, as the SQL key
        mine.sort(key=lambda r: (r["updated_at"], order[r["id"]]), reverse=True)
        return [codec.summary_from_row(r) for r in mine[offset : offset + limit]]

    async def expired_running(self) -> list[str]:
        now = self._clock.now()
        return [
            sid
            for sid, r in self._sessions.items()
            if r["status"] == Status.RUNNING.value and r["lease_until"] is not None and r["lease_until"] < now
        ]

    # -- leases: one process holds them all, so a claim is a check and a set ----------------------

    async def claim_expired(self, limit: int = 100) -> list[str]:
        taken = (await self.expired_running())[:limit]
        for sid in taken:
            self._sessions[sid]["lease_until"] = self._clock.now() + self.lease_seconds
        return taken

    async def claim_session(self, session_id: str) -> bool:
        row = self._sessions.get(session_id)
        now = self._clock.now()
        if row is None or row["status"] == Status.RUNNING.value or (row["lease_until"] or 0) >= now:
            return False
        row["lease_until"] = now + self.lease_seconds
        return True

    async def release_session(self, session_id: str) -> bool:
        row = self._sessions.get(session_id)
        if row is None or row["status"] == Status.RUNNING.value or row["lease_until"] is None:
            return False
        row["lease_until"] = None
        return True

    async def hand_back_leases(self) -> int:
        return 0  # nothing outlives this process's memory

    async def claim_overdue_jobs(self, reason: str, limit: int = 100) -> list[AsyncJob]:
        taken = []
        for job in self._overdue_jobs(self._clock.now())[:limit]:
            if await self.finish_job(job.job_id, "FAILED", None, reason):
                job.status, job.error = "FAILED", reason
                taken.append(job)
        return taken

    async def ping(self) -> None:
        return None

    async def events_after(self, session_id: str, after: int, limit: int = 500) -> list[RuntimeEvent]:
        batches = self._events.get(session_id, [])
        start = bisect.bisect_right(batches, after, key=lambda r: r[0])
        return codec.events_from_batches(session_id, (b for _, b in batches[start:]), after, limit)

    async def get_job(self, job_id: str) -> AsyncJob | None:
        job = self._jobs.get(job_id)
        return None if job is None else codec.job_from_row(job)

    async def unapplied_jobs(self, session_id: str) -> list[AsyncJob]:
        """Finished jobs of the session whose result is not yet in its transcript."""
        found = [
            j
            for j in self._jobs.values()
            if j["session_id"] == session_id and j["status"] != "PENDING" and not j["applied"]
        ]
        found.sort(key=lambda j: (j["created_at"], j["job_id"]))
        return [codec.job_from_row(j) for j in found]

    async def sessions_with_unapplied_jobs(self) -> list[str]:
        return sorted(
            {
                j["session_id"]
                for j in self._jobs.values()
                if j["status"] != "PENDING" and not j["applied"] and j["kind"] == "session"
            }
        )

    async def count_pending_jobs(self) -> int:
        return sum(1 for j in self._jobs.values() if j["status"] == "PENDING")

    def _overdue_jobs(self, now: float) -> list[AsyncJob]:
        found = [j for j in self._jobs.values() if j["status"] == "PENDING" and 0 < j["deadline"] < now]
        found.sort(key=lambda j: j["deadline"])
        return [codec.job_from_row(j) for j in found]

    # -- DslStore ------------------------------------------------------------------------------

    async def save_dsl(self, dsl: DslSnapshot) -> None:
        self.stage_dsl("", dsl)

    def stage_dsl(self, session_id: str, dsl: DslSnapshot) -> None:
        """Saved at once: nothing here is lost between this and the session's next commit."""
        if dsl.dsl_id in self._dsl:
            raise Conflict(f"DSL {dsl.dsl_id} already exists")
        head, steps = codec.dsl_rows(dsl)
        self._dsl[dsl.dsl_id] = (
            dict(zip(_DSL_HEAD, head, strict=True)),
            [dict(zip(_DSL_STEP, s, strict=True)) for s in steps],
        )

    async def get_dsl(self, dsl_id: str, owner: Owner | None = None) -> DslSnapshot:
        found = self._dsl.get(dsl_id)
        if found is None or not codec.owns(owner, found[0]["owner_user"], found[0]["owner_tenant"]):
            raise NotFound(f"DSL {dsl_id} not found")
        return codec.dsl_from_rows(*found)

    async def log_execution(
        self,
        dsl_id: str,
        execution_id: str,
        params: dict[str, Any],
        status: str,
        steps: list[dict[str, Any]],
        error: str | None,
    ) -> None:
        now = self._clock.now()
        row = self._executions.get(execution_id)
        if row is not None and row["dsl_id"] != dsl_id:
            raise Conflict(f"execution {execution_id} belongs to another DSL")
        fresh = {"execution_id": execution_id, "dsl_id": dsl_id, "created_at": now}
        self._executions[execution_id] = {
            **(row or fresh),
            "params": codec.dumps(params),
            "status": status,
            "steps": codec.dumps(steps),
            "error": error,
            "updated_at": now,
        }

    async def executions(self, dsl_id: str) -> list[dict[str, Any]]:
        rows = [r for r in self._executions.values() if r["dsl_id"] == dsl_id]
        rows.sort(key=lambda r: (r["created_at"], r["execution_id"]))
        return [codec.execution_from_row(r) for r in rows]
