"""Every write the store makes, as pre-built SQL strings and ``Write`` units for the group writer.

The SQL is written once in qmark style and rendered per DBAPI paramstyle (``?`` for sqlite3,
``%s`` for psycopg and pymysql), so the hot path does no SQL compilation at all. Each unit only
executes statements on the cursor it is given; it must never commit, roll back, or touch a
session object (bookkeeping happens in ``after_commit`` on the caller's loop).
"""

from __future__ import annotations

from typing import Any

from tether.core.ports import Commit, DslSnapshot
from tether.errors import Conflict, NotFound
from tether.store import codec
from tether.store.writer import Write

_SQL = {
    "insert_session": "INSERT INTO agent_session (" + ", ".join(codec.SESSION_COLUMNS) + ") VALUES ("
    + ", ".join("?" * len(codec.SESSION_COLUMNS)) + ")",
    "update_session": "UPDATE agent_session SET title = ?, status = ?, version = ?, lease_until = ?,"
    " last_seq = CASE WHEN last_seq > ? THEN last_seq ELSE ? END, state = ?, steps = ?,"
    " updated_at = ? WHERE id = ? AND version = ?",
    "session_version": "SELECT version FROM agent_session WHERE id = ?",
    "insert_message": "INSERT INTO agent_message (session_id, idx, body) VALUES (?, ?, ?)",
    "update_message": "UPDATE agent_message SET body = ? WHERE session_id = ? AND idx = ?",
    "insert_event": "INSERT INTO agent_event (" + ", ".join(codec.EVENT_COLUMNS) + ") VALUES ("
    + ", ".join("?" * len(codec.EVENT_COLUMNS)) + ")",
    "insert_job": "INSERT INTO async_job (" + ", ".join(codec.JOB_COLUMNS) + ") VALUES ("
    + ", ".join("?" * len(codec.JOB_COLUMNS)) + ")",
    "apply_job": "UPDATE async_job SET applied = ? WHERE job_id = ?",
    "finish_job": "UPDATE async_job SET status = ?, result = ?, error = ?"
    " WHERE job_id = ? AND status = 'PENDING'",
    "renew_lease": "UPDATE agent_session SET lease_until = ?"
    " WHERE id = ? AND version = ? AND status = 'RUNNING'",
    "insert_dsl": "INSERT INTO dsl_instance (dsl_id, owner_user, owner_tenant, source_session_id,"
    " title, params, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    "insert_dsl_step": "INSERT INTO dsl_step (dsl_id, idx, step_id, tool_id, args, schema_hash)"
    " VALUES (?, ?, ?, ?, ?, ?)",
    "update_execution": "UPDATE dsl_execution_log SET params = ?, status = ?, steps = ?, error = ?,"
    " updated_at = ? WHERE execution_id = ? AND dsl_id = ?",
    "insert_execution": "INSERT INTO dsl_execution_log (execution_id, dsl_id, params, status, steps,"
    " error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
}  # fmt: skip


class Statements:
    """The store's SQL rendered for one DBAPI paramstyle ("qmark" or "format"/"pyformat")."""

    def __init__(self, paramstyle: str) -> None:
        if paramstyle not in ("qmark", "format", "pyformat"):
            raise ValueError(f"unsupported DBAPI paramstyle {paramstyle!r}")
        mark = "?" if paramstyle == "qmark" else "%s"
        for name, sql in _SQL.items():
            setattr(self, name, sql.replace("?", mark))

    insert_session: str
    update_session: str
    session_version: str
    insert_message: str
    update_message: str
    insert_event: str
    insert_job: str
    apply_job: str
    finish_job: str
    renew_lease: str
    insert_dsl: str
    insert_dsl_step: str
    update_execution: str
    insert_execution: str


def commit_write(sql: Statements, commit: Commit, rows: codec.CommitRows, create: bool) -> Write:
    """The session row (inserted, or updated only if still at ``rows.expected_version``), then its
    new and replaced message rows, events, new jobs and applied jobs."""

    def run(cur: Any) -> None:
        h = rows.header  # codec.SESSION_COLUMNS order
        if create:
            cur.execute(sql.insert_session, h)
        else:
            cur.execute(
                sql.update_session,
                # title, status, version, lease_until, last_seq (x2), state, steps, updated_at
                (h[3], h[5], h[6], h[7], rows.max_seq, rows.max_seq, h[9], h[10], h[12],
                 rows.session_id, rows.expected_version),
            )  # fmt: skip
            if cur.rowcount != 1:
                _raise_stale(cur, sql, rows)
        if rows.replaced_messages:
            cur.executemany(sql.update_message, rows.replaced_messages)
        if rows.new_messages:
            cur.executemany(sql.insert_message, rows.new_messages)
        if rows.events:
            cur.executemany(sql.insert_event, rows.events)
        if rows.new_jobs:
            cur.executemany(sql.insert_job, rows.new_jobs)
        if rows.applied_jobs:
            cur.executemany(sql.apply_job, rows.applied_jobs)

    def after_commit(_: Any) -> None:
        codec.apply_committed(commit.session, rows)

    return Write(run, after_commit)


def _raise_stale(cur: Any, sql: Statements, rows: codec.CommitRows) -> None:
    cur.execute(sql.session_version, (rows.session_id,))
    found = cur.fetchone()
    if found is None:
        raise NotFound(f"session {rows.session_id} not found")
    raise Conflict(
        f"session {rows.session_id} is at version {found[0]}, not {rows.expected_version}: "
        "another writer committed first"
    )


def finish_job_write(sql: Statements, job_id: str, status: str, result: Any, error: str | None) -> Write:
    body = None if result is None else codec.dumps(result)

    def run(cur: Any) -> bool:
        cur.execute(sql.finish_job, (status, body, error, job_id))
        return bool(cur.rowcount == 1)

    return Write(run)


def renew_lease_write(sql: Statements, session_id: str, version: int, lease_until: float) -> Write:
    def run(cur: Any) -> bool:
        cur.execute(sql.renew_lease, (lease_until, session_id, version))
        return bool(cur.rowcount == 1)

    return Write(run)


def save_dsl_write(sql: Statements, dsl: DslSnapshot) -> Write:
    head, steps = codec.dsl_rows(dsl)

    def run(cur: Any) -> None:
        cur.execute(sql.insert_dsl, head)
        if steps:
            cur.executemany(sql.insert_dsl_step, steps)

    return Write(run)


def log_execution_write(
    sql: Statements,
    dsl_id: str,
    execution_id: str,
    params: dict[str, Any],
    status: str,
    steps: list[dict[str, Any]],
    error: str | None,
    now: float,
) -> Write:
    """Insert the execution's log row, or update it when the same execution logs again."""
    p, s = codec.dumps(params), codec.dumps(steps)

    def run(cur: Any) -> None:
        cur.execute(sql.update_execution, (p, status, s, error, now, execution_id, dsl_id))
        if cur.rowcount == 0:
            cur.execute(sql.insert_execution, (execution_id, dsl_id, p, status, s, error, now, now))

    return Write(run)
