"""Translation between core objects and stored rows, shared by ``SqlStore`` and ``MemoryStore``.

Bodies are compact JSON text (``ensure_ascii=False``: Chinese stays 3 bytes a character, not 6)
in ``compact.py``'s encodings; ``SqlStore`` stores them packed (compressed), ``MemoryStore`` as is.
``snapshot_commit`` turns a ``Commit`` into plain parameter tuples on the caller's thread, so the
writer thread never reads a live, mutable session; ``apply_committed`` does the persistence
bookkeeping once the transaction is durable. ``Ledger`` remembers what is stored of a session
(its steps, its state), so that a commit writes only what changed. Pure functions otherwise:
this module never touches a database or a clock.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.core.events import RuntimeEvent
from tether.core.ports import AsyncJob, Commit, DslSnapshot, DslStep, SessionSummary
from tether.core.session import AgentSession, Owner, Status
from tether.errors import Conflict
from tether.store import compact

dumps = compact.dumps
loads = compact.loads
unpack = compact.unpack

Row = Mapping[Any, Any]  # a stored row: SQLAlchemy RowMapping or a plain dict
Body = bytes | str  # a stored body: packed bytes (SqlStore) or JSON text (MemoryStore)
Pack = Callable[[str], Body]

# Positional parameter order of the writer's INSERT statements (see writes.py).
SESSION_COLUMNS = (
    "id", "owner_user", "owner_tenant", "title", "archived", "query", "status", "version",
    "lease_until", "last_seq", "state", "created_at", "updated_at", "lease_owner",
)  # fmt: skip
SUMMARY_COLUMNS = ("id", "title", "status", "archived", "created_at", "updated_at")
JOB_COLUMNS = (
    "job_id", "session_id", "tool_call_id", "tool_id", "token_hash", "status", "result", "error",
    "created_at", "deadline", "applied", "kind",
)  # fmt: skip
FINAL_STEP = frozenset({"SUCCEEDED", "FAILED"})  # a step in these states never changes again
NO_EVENTS = 2**62  # the first seq of a commit without events: above every stored seq


@dataclass(slots=True)
class Stored:
    """What the store holds of one session at one version, beyond its messages."""

    version: int
    steps: int  # step rows 0 .. steps-1 are stored
    open: dict[int, str]  # index -> stored record of a step that was not final (it may change)
    state: bytes  # the digest of the stored state (``state_digest``)


class Ledger:
    """What is stored of the sessions this store recently wrote or read, by session id.

    What is stored at a version is the same for every copy of a session, so a commit of any copy
    at that version writes only new steps, open steps whose record changed, and the state if it
    changed. A session it does not know at the commit's version (evicted, or written by another
    process since) has all its step rows and its state rewritten once."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, Stored] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str, version: int) -> Stored | None:
        with self._lock:
            entry = self._entries.get(session_id)
            if entry is None or entry.version != version:
                return None
            self._entries.move_to_end(session_id)
            return entry

    def put(self, session_id: str, entry: Stored) -> None:
        with self._lock:
            self._entries[session_id] = entry
            self._entries.move_to_end(session_id)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def loaded(self, s: AgentSession, state: str | None = None) -> None:
        """``s`` was just read from the store: it is what is stored at its version (``state``: the
        stored state's JSON text, when the caller has it)."""
        opened = {i: compact.step_record(st) for i, st in enumerate(s.executed_steps) if st.status not in FINAL_STEP}
        digest = state_digest(session_state(s) if state is None else state)
        self.put(s.session_id, Stored(s.version, len(s.executed_steps), opened, digest))


@dataclass(slots=True)
class CommitRows:
    """One commit as SQL parameters, captured on the caller's thread."""

    session_id: str
    expected_version: int  # the row must still be at this version
    header: tuple[Any, ...]  # SESSION_COLUMNS order, version already bumped (for an insert)
    update: tuple[Any, ...]  # writes.update_session's parameters (without the state when kept)
    keep_state: bool  # the stored state is this one: the update leaves it
    first_seq: int  # the lowest event seq of this commit (NO_EVENTS when none)
    max_seq: int  # the session's last event seq after this commit
    new_messages: list[tuple[str, int, Body]]  # (session_id, idx, body)
    replaced_messages: list[tuple[Body, str, int]]  # (body, session_id, idx)
    events: list[tuple[str, int, Body]]  # (session_id, last seq, batch body): one row or none
    new_steps: list[tuple[str, int, Body]]  # (session_id, idx, body)
    replaced_steps: list[tuple[Body, str, int]]  # (body, session_id, idx)
    rewrite_steps: bool  # the ledger did not know what is stored: delete the rows, insert them all
    stored_after: Stored
    new_jobs: list[tuple[Any, ...]]
    applied_jobs: list[tuple[bool, str]]  # (True, job_id)
    persisted_count: int
    replaced: frozenset[int]
    now: float


def session_state(s: AgentSession) -> str:
    """The state column's JSON: only what differs from a new session's (``session_from_row``
    reads a missing key as its default), so a typical state is small enough to store as is."""
    fields: tuple[tuple[str, Any, Any], ...] = (  # key, value, a new session's value
        ("globalContext", s.global_context, {}),
        ("selectedSkillIds", s.selected_skill_ids, []),
        ("pendingInteraction", s.pending_interaction, None),
        ("waitingJobIds", s.waiting_job_ids, []),
        ("currentTurnId", s.current_turn_id, None),
        ("lastError", s.last_error, None),
        ("lastErrorCode", s.last_error_code, None),
        ("lastDslId", s.last_dsl_id, None),
        ("outcome", s.outcome, None),
        ("summary", s.summary, None),
        ("summaryUpto", s.summary_upto, 0),
        ("answered", s.answered_interactions, []),
    )
    state = {key: value for key, value, default in fields if value != default}
    return dumps(state)


def state_digest(state: str) -> bytes:
    """What the ledger keeps of a state: a digest (a context can be large; 10,000 of them add up)."""
    return hashlib.blake2b(state.encode(), digest_size=16).digest()


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


def job_row(j: AsyncJob) -> tuple[Any, ...]:
    result = None if j.result is None else dumps(j.result)
    return (
        j.job_id, j.session_id, j.tool_call_id, j.tool_id, j.token_hash, j.status, result, j.error,
        j.created_at, j.deadline, bool(j.applied), j.kind,
    )  # fmt: skip


def _event_rows(s: AgentSession, events: list[RuntimeEvent], pack: Pack) -> list[tuple[str, int, Body]]:
    if not events:
        return []
    if any(e.session_id != s.session_id for e in events):
        raise ValueError(f"a commit of session {s.session_id} holds another session's event")
    try:
        last, text = compact.event_batch(sorted(events, key=lambda e: e.seq))
    except ValueError as e:
        raise Conflict(f"session {s.session_id}: {e}") from e
    return [(s.session_id, last, pack(text))]


def _step_rows(
    s: AgentSession, known: Stored | None, pack: Pack
) -> tuple[list[tuple[str, int, Body]], list[tuple[Body, str, int]], bool, dict[int, str]]:
    """(new rows, replaced rows, rewrite all, the open steps stored after the commit)."""
    sid, steps = s.session_id, s.executed_steps
    rewrite = known is None or len(steps) < known.steps
    start = 0 if rewrite or known is None else known.steps
    opened: dict[int, str] = {}
    replaced: list[tuple[Body, str, int]] = []
    if known is not None and not rewrite:
        for i, stored in known.open.items():
            record = compact.step_record(steps[i])
            if record != stored:
                replaced.append((pack(record), sid, i))
            if steps[i].status not in FINAL_STEP:
                opened[i] = record
    new: list[tuple[str, int, Body]] = []
    for i in range(start, len(steps)):
        record = compact.step_record(steps[i])
        new.append((sid, i, pack(record)))
        if steps[i].status not in FINAL_STEP:
            opened[i] = record
    return new, replaced, rewrite, opened


# The stored bodies of recent system prompts: every session of one user (and every user with the
# same grants) starts with the same prompt, so it is encoded and compressed once, not per session.
_SYSTEM_BODIES: dict[tuple[Pack, str], Body] = {}
_SYSTEM_BODIES_MAX = 256


def message_body(message: Mapping[str, Any], pack: Pack) -> Body:
    """The stored body of a transcript message."""
    content = message.get("content")
    if message.get("role") != "system" or len(message) != 2 or not isinstance(content, str):
        return pack(dumps(message))
    key = (pack, content)
    body = _SYSTEM_BODIES.get(key)
    if body is None:
        if len(_SYSTEM_BODIES) >= _SYSTEM_BODIES_MAX:
            _SYSTEM_BODIES.clear()
        body = _SYSTEM_BODIES[key] = pack(dumps(message))
    return body


def snapshot_commit(
    commit: Commit,
    now: float,
    lease_seconds: float,
    ledger: Ledger,
    pack: Pack,
    create: bool,
    lease_owner: str | None = None,
) -> CommitRows:
    """Capture everything ``commit`` writes; raises ``TypeError`` for data that is not JSON. A
    RUNNING session's lease goes to ``lease_owner`` (the committing replica); any other status
    holds no lease."""
    s = commit.session
    sid = s.session_id
    running = s.status == Status.RUNNING
    lease = now + lease_seconds if running else None
    owner = lease_owner if running else None
    events = _event_rows(s, commit.events, pack)
    first_seq = min(e.seq for e in commit.events) if commit.events else NO_EVENTS
    # the session's own counter, or its events' highest seq if the caller numbered them itself
    max_seq = max(s.last_seq, events[0][1]) if events else s.last_seq
    known = None if create else ledger.get(sid, s.version)
    status, version, state = str(s.status), s.version + 1, session_state(s)
    digest = state_digest(state)
    keep_state = known is not None and known.state == digest
    packed = None if keep_state else pack(state)
    header = (
        sid, s.owner.user_id, s.owner.tenant, s.title, False, s.query, status, version, lease, max_seq,
        packed, s.created_at, now, owner,
    )  # fmt: skip
    tail = (now, sid, s.version, first_seq)
    update = (status, version, lease, owner, max_seq, max_seq, *(() if keep_state else (packed,)), *tail)
    new_steps, replaced_steps, rewrite, opened = _step_rows(s, known, pack)
    transcript = s.transcript
    start = s.persisted_count
    replaced = frozenset(i for i in s.replaced if i < start)
    return CommitRows(
        session_id=sid,
        expected_version=s.version,
        header=header,
        update=update,
        keep_state=keep_state,
        first_seq=first_seq,
        max_seq=max_seq,
        new_messages=[(sid, i, message_body(transcript[i], pack)) for i in range(start, len(transcript))],
        replaced_messages=[(message_body(transcript[i], pack), sid, i) for i in sorted(replaced)],
        events=events,
        new_steps=new_steps,
        replaced_steps=replaced_steps,
        rewrite_steps=rewrite and not create,
        stored_after=Stored(version, len(s.executed_steps), opened, digest),
        new_jobs=[job_row(j) for j in commit.new_jobs],
        applied_jobs=[(True, jid) for jid in commit.applied_job_ids],
        persisted_count=len(transcript),
        replaced=replaced,
        now=now,
    )


def apply_committed(s: AgentSession, rows: CommitRows, ledger: Ledger) -> None:
    """The commit is durable: bring the in-memory session's bookkeeping in line with the row."""
    s.version = rows.expected_version + 1
    s.persisted_count = rows.persisted_count
    s.replaced.difference_update(rows.replaced)
    s.updated_at = rows.now
    ledger.put(rows.session_id, rows.stored_after)


def session_from_row(row: Row, bodies: Iterable[Body], step_bodies: Iterable[Body]) -> AgentSession:
    """Rebuild a session from its row, its message bodies and its step bodies, each in idx order."""
    state = loads(unpack(row["state"]))
    transcript = [loads(unpack(b)) for b in bodies]
    results = _results_by_call(transcript)
    steps = [compact.record_step(unpack(b)) for b in step_bodies]
    for st in steps:
        st.result = results.get(st.tool_call_id)
    return AgentSession(
        session_id=row["id"],
        owner=Owner(row["owner_user"], row["owner_tenant"]),
        title=row["title"],
        query=row["query"],
        global_context=state.get("globalContext") or {},
        status=Status(row["status"]),
        transcript=transcript,
        executed_steps=steps,
        selected_skill_ids=state.get("selectedSkillIds") or [],
        pending_interaction=state.get("pendingInteraction"),
        waiting_job_ids=state.get("waitingJobIds") or [],
        current_turn_id=state.get("currentTurnId"),
        last_error=state.get("lastError"),
        last_error_code=state.get("lastErrorCode"),
        last_dsl_id=state.get("lastDslId"),
        outcome=state.get("outcome"),
        summary=state.get("summary"),
        summary_upto=int(state.get("summaryUpto") or 0),
        answered_interactions=list(state.get("answered") or []),
        version=row["version"],
        last_seq=int(row["last_seq"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        persisted_count=len(transcript),
    )


def summary_from_row(row: Row) -> SessionSummary:
    return SessionSummary(
        session_id=row["id"],
        title=row["title"],
        status=Status(row["status"]),
        archived=bool(row["archived"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def events_from_batches(session_id: str, bodies: Iterable[Body], after: int, limit: int) -> list[RuntimeEvent]:
    """The events above ``after`` (at most ``limit``) of stored batches in seq order."""
    found: list[RuntimeEvent] = []
    for body in bodies:
        for e in compact.batch_events(session_id, unpack(body)):
            if e.seq > after:
                found.append(e)
                if len(found) >= limit:
                    return found
    return found


def title_matches(title: str, query: str) -> bool:
    """The store's title search: a case-insensitive substring, nothing is a wildcard."""
    return query.lower() in title.lower()


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
