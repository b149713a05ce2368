"""Translation between core objects and stored rows, shared by ``SqlStore`` and ``MemoryStore``.

Everything is stored as compact JSON text (``ensure_ascii=False``: Chinese stays 3 bytes a
character, not 6). ``snapshot_commit`` turns a ``Commit`` into plain parameter tuples on the
caller's thread, so the writer thread never reads a live, mutable session; ``apply_committed``
does the persistence bookkeeping once the transaction is durable. Pure functions: this module
never touches a database, a thread or a clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.core.events import RuntimeEvent
from tether.core.ports import AsyncJob, Commit, DslSnapshot, DslStep
from tether.core.session import AgentSession, Owner, Status, Step


def _not_json(o: object) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


# The C encoder built once (json.dumps builds one per call): half the cost on the hot path.
_fallback = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode = (
    None
    if _c_make_encoder is None
    else _c_make_encoder(None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, True)
)


def dumps(value: Any) -> str:
    """Compact JSON text, non-ASCII kept as is; ``TypeError`` for what JSON cannot hold."""
    if _encode is None:  # pragma: no cover - CPython always has the C encoder
        return _fallback.encode(value)
    return "".join(_encode(value, 0))


Row = Mapping[Any, Any]  # a stored row: SQLAlchemy RowMapping or a plain dict
loads = json.loads

# Positional parameter order of the writer's INSERT statements (see writes.py).
SESSION_COLUMNS = (
    "id", "owner_user", "owner_tenant", "title", "query", "status", "version", "lease_until",
    "last_seq", "state", "steps", "created_at", "updated_at",
)  # fmt: skip
EVENT_COLUMNS = ("session_id", "seq", "turn_id", "type", "ts", "data")
JOB_COLUMNS = (
    "job_id", "session_id", "tool_call_id", "tool_id", "token_hash", "status", "result", "error",
    "created_at", "deadline", "applied", "kind",
)  # fmt: skip


@dataclass(slots=True)
class CommitRows:
    """One commit as SQL parameters, captured on the caller's thread."""

    session_id: str
    expected_version: int  # the row must still be at this version
    header: tuple[Any, ...]  # SESSION_COLUMNS order, version already bumped
    max_seq: int  # the session's last event seq after this commit
    new_messages: list[tuple[str, int, str]]  # (session_id, idx, body)
    replaced_messages: list[tuple[str, str, int]]  # (body, session_id, idx)
    events: list[tuple[Any, ...]]
    new_jobs: list[tuple[Any, ...]]
    applied_jobs: list[tuple[bool, str]]  # (True, job_id)
    persisted_count: int
    replaced: frozenset[int]
    now: float


def session_state(s: AgentSession) -> str:
    return dumps(
        {
            "globalContext": s.global_context,
            "selectedSkillIds": s.selected_skill_ids,
            "pendingInteraction": s.pending_interaction,
            "waitingJobIds": s.waiting_job_ids,
            "currentTurnId": s.current_turn_id,
            "lastError": s.last_error,
            "lastDslId": s.last_dsl_id,
            "summary": s.summary,
            "summaryUpto": s.summary_upto,
            "answered": s.answered_interactions,
        }
    )


def _step_json(st: Step) -> dict[str, Any]:
    """A step without its result: the result is its tool message's data, stored once, in the transcript."""
    body = st.to_json()
    del body["result"]
    return body


def _results_by_call(transcript: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for m in transcript:
        if m.get("role") == "tool":
            try:
                framed = loads(m.get("content") or "null")
            except ValueError:
                continue
            if isinstance(framed, dict):
                results[str(m.get("tool_call_id"))] = framed.get("data")
    return results


def event_row(e: RuntimeEvent) -> tuple[Any, ...]:
    return (e.session_id, e.seq, e.turn_id, str(e.type), e.ts, dumps(e.data))


def job_row(j: AsyncJob) -> tuple[Any, ...]:
    result = None if j.result is None else dumps(j.result)
    return (
        j.job_id, j.session_id, j.tool_call_id, j.tool_id, j.token_hash, j.status, result, j.error,
        j.created_at, j.deadline, bool(j.applied), j.kind,
    )  # fmt: skip


def snapshot_commit(commit: Commit, now: float, lease_seconds: float) -> CommitRows:
    """Capture everything ``commit`` writes; raises ``TypeError`` for data that is not JSON."""
    s = commit.session
    lease = now + lease_seconds if s.status == Status.RUNNING else None
    # the session's own counter, or its events' highest seq if the caller numbered them itself
    max_seq = max([s.last_seq, *(e.seq for e in commit.events if e.session_id == s.session_id)])
    header = (
        s.session_id, s.owner.user_id, s.owner.tenant, s.title, s.query, str(s.status),
        s.version + 1, lease, max_seq, session_state(s),
        dumps([_step_json(st) for st in s.executed_steps]), s.created_at, now,
    )  # fmt: skip
    sid = s.session_id
    transcript = s.transcript
    start = s.persisted_count
    replaced = frozenset(i for i in s.replaced if i < start)
    return CommitRows(
        session_id=sid,
        expected_version=s.version,
        header=header,
        max_seq=max_seq,
        new_messages=[(sid, i, dumps(transcript[i])) for i in range(start, len(transcript))],
        replaced_messages=[(dumps(transcript[i]), sid, i) for i in sorted(replaced)],
        events=[event_row(e) for e in commit.events],
        new_jobs=[job_row(j) for j in commit.new_jobs],
        applied_jobs=[(True, jid) for jid in commit.applied_job_ids],
        persisted_count=len(transcript),
        replaced=replaced,
        now=now,
    )


def apply_committed(s: AgentSession, rows: CommitRows) -> None:
    """The commit is durable: bring the in-memory session's bookkeeping in line with the row."""
    s.version = rows.expected_version + 1
    s.persisted_count = rows.persisted_count
    s.replaced.difference_update(rows.replaced)
    s.updated_at = rows.now


def _steps(stored: list[dict[str, Any]], transcript: Sequence[Mapping[str, Any]]) -> list[Step]:
    results = _results_by_call(transcript)
    steps = [Step.from_json(d) for d in stored]
    for st in steps:
        st.result = results.get(st.tool_call_id)
    return steps


def session_from_row(row: Row, bodies: list[str]) -> AgentSession:
    """Rebuild a session from its row and its message bodies in idx order."""
    state = loads(row["state"])
    transcript = [loads(b) for b in bodies]
    return AgentSession(
        session_id=row["id"],
        owner=Owner(row["owner_user"], row["owner_tenant"]),
        title=row["title"],
        query=row["query"],
        global_context=state.get("globalContext") or {},
        status=Status(row["status"]),
        transcript=transcript,
        executed_steps=_steps(loads(row["steps"]), transcript),
        selected_skill_ids=state.get("selectedSkillIds") or [],
        pending_interaction=state.get("pendingInteraction"),
        waiting_job_ids=state.get("waitingJobIds") or [],
        current_turn_id=state.get("currentTurnId"),
        last_error=state.get("lastError"),
        last_dsl_id=state.get("lastDslId"),
        summary=state.get("summary"),
        summary_upto=int(state.get("summaryUpto") or 0),
        answered_interactions=list(state.get("answered") or []),
        version=row["version"],
        last_seq=int(row["last_seq"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        persisted_count=len(transcript),
    )


def event_from_row(row: Row) -> RuntimeEvent:
    return RuntimeEvent(
        seq=int(row["seq"]),
        session_id=row["session_id"],
        turn_id=row["turn_id"],
        type=row["type"],
        ts=row["ts"],
        data=loads(row["data"]),
    )


def job_from_row(row: Row) -> AsyncJob:
    return AsyncJob(
        job_id=row["job_id"],
        session_id=row["session_id"],
        tool_call_id=row["tool_call_id"],
        tool_id=row["tool_id"],
        token_hash=row["token_hash"],
        status=row["status"],
        result=None if row["result"] is None else loads(row["result"]),
        error=row["error"],
        created_at=row["created_at"],
        deadline=row["deadline"],
        applied=bool(row["applied"]),
        kind=row["kind"],
    )


def dsl_rows(d: DslSnapshot) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """(dsl_instance row, dsl_step rows) in the writer's column order."""
    head = (
        d.dsl_id, d.owner.user_id, d.owner.tenant, d.source_session_id, d.title, dumps(d.params),
        d.created_at,
    )  # fmt: skip
    steps = [(d.dsl_id, i, st.step_id, st.tool_id, dumps(st.args), st.schema_hash) for i, st in enumerate(d.steps)]
    return head, steps


def dsl_from_rows(head: Row, steps: Sequence[Row]) -> DslSnapshot:
    return DslSnapshot(
        dsl_id=head["dsl_id"],
        owner=Owner(head["owner_user"], head["owner_tenant"]),
        source_session_id=head["source_session_id"],
        title=head["title"],
        params=loads(head["params"]),
        steps=[DslStep(s["step_id"], s["tool_id"], loads(s["args"]), s["schema_hash"]) for s in steps],
        created_at=head["created_at"],
    )


def execution_from_row(row: Row) -> dict[str, Any]:
    return {
        "executionId": row["execution_id"],
        "dslId": row["dsl_id"],
        "params": loads(row["params"]),
        "status": row["status"],
        "steps": loads(row["steps"]),
        "error": row["error"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def owns(owner: Owner | None, user_id: str, tenant: str) -> bool:
    """``None`` is the runtime itself (recovery, callbacks): it may touch any session."""
    return owner is None or (owner.user_id == user_id and owner.tenant == tenant)
