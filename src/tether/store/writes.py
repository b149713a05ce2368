"""Every write the store makes, as pre-built SQL strings and ``Write`` units for the group writer.

The SQL is written once in qmark style and rendered per DBAPI paramstyle (``?`` for sqlite3,
``%s`` for psycopg and pymysql), so the hot path does no SQL compilation at all. Each unit only
executes statements on the cursor it is given; it must never commit, roll back, or touch a
session object (bookkeeping happens in ``after_commit`` on the caller's loop).
"""

from __future__ import annotations

from typing import Any

from tether.core.ports import Commit, DslSnapshot, SessionSummary
from tether.core.session import Owner
from tether.errors import Conflict, GuardRefused, NotFound
from tether.store import codec
from tether.store.writer import Write

_KEY = "(SELECT session_key FROM agent_session WHERE id = ?)"  # a session's key, by its id
_META = (
    "SELECT " + ", ".join(("owner_user", "owner_tenant", *codec.SUMMARY_COLUMNS)) + " FROM agent_session WHERE id = ?"
)

_SQL = {
    "insert_session": "INSERT INTO agent_session (" + ", ".join(codec.SESSION_COLUMNS) + ") VALUES ("
    + ", ".join("?" * len(codec.SESSION_COLUMNS)) + ")",
    # only at its version, and only when the commit's events are numbered above the stored ones
    "update_session": "UPDATE agent_session SET status = ?, version = ?, lease_until = ?, lease_owner = ?,"
    " last_seq = CASE WHEN last_seq > ? THEN last_seq ELSE ? END, state = ?, updated_at = ?"
    " WHERE id = ? AND version = ? AND last_seq < ?",
    "update_session_keep_state": "UPDATE agent_session SET status = ?, version = ?, lease_until = ?, lease_owner = ?,"
    " last_seq = CASE WHEN last_seq > ? THEN last_seq ELSE ? END, updated_at = ?"
    " WHERE id = ? AND version = ? AND last_seq < ?",
    "session_version": "SELECT version, last_seq FROM agent_session WHERE id = ?",
    "session_meta": _META,
    "rename_session": "UPDATE agent_session SET title = ? WHERE id = ?",
    "archive_session": "UPDATE agent_session SET archived = ? WHERE id = ?",
    "insert_message": f"INSERT INTO agent_message (session_key, idx, body) VALUES ({_KEY}, ?, ?)",
    "update_message": f"UPDATE agent_message SET body = ? WHERE session_key = {_KEY} AND idx = ?",
    "insert_step": f"INSERT INTO agent_step (session_key, idx, body) VALUES ({_KEY}, ?, ?)",
    "update_step": f"UPDATE agent_step SET body = ? WHERE session_key = {_KEY} AND idx = ?",
    "delete_steps": f"DELETE FROM agent_step WHERE session_key = {_KEY}",
    "insert_events": f"INSERT INTO agent_event (session_key, last_seq, body) VALUES ({_KEY}, ?, ?)",
    "insert_job": "INSERT INTO async_job (" + ", ".join(codec.JOB_COLUMNS) + ") VALUES ("
    + ", ".join("?" * len(codec.JOB_COLUMNS)) + ")",
    "apply_job": "UPDATE async_job SET applied = ? WHERE job_id = ?",
    "finish_job": "UPDATE async_job SET status = ?, result = ?, error = ?"
    " WHERE job_id = ? AND status = 'PENDING'",
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
        self.mark = mark
        for name, sql in _SQL.items():
            setattr(self, name, sql.replace("?", mark))

    mark: str
    insert_session: str
    update_session: str
    update_session_keep_state: str
    session_version: str
    session_meta: str
    rename_session: str
    archive_session: str
    insert_message: str
    update_message: str
    insert_step: str
    update_step: str
    delete_steps: str
    insert_events: str
    insert_job: str
    apply_job: str
    finish_job: str
    insert_dsl: str
    insert_dsl_step: str
    update_execution: str
    insert_execution: str


def commit_write(sql: Statements, commit: Commit, rows: codec.CommitRows, create: bool, ledger: codec.Ledger) -> Write:
    """The session row (inserted, or updated only if still at ``rows.expected_version``), then its
    new and replaced message rows, step rows, its events' row, new jobs and applied jobs — after
    the commit's guard (a ``Write``), which must return true or nothing lands (``GuardRefused``)."""
    guard = _own_guard(commit)

    def run(cur: Any) -> None:
        _check_guard(cur, guard)
        if create:
            cur.execute(sql.insert_session, rows.header)
        else:
            cur.execute(sql.update_session_keep_state if rows.keep_state else sql.update_session, rows.update)
            if cur.rowcount != 1:
                _raise_stale(cur, sql, rows)
        if rows.replaced_messages:
            cur.executemany(sql.update_message, rows.replaced_messages)
        if rows.new_messages:
            cur.executemany(sql.insert_message, rows.new_messages)
        if rows.rewrite_steps:
            cur.execute(sql.delete_steps, (rows.session_id,))
        if rows.replaced_steps:
            cur.executemany(sql.update_step, rows.replaced_steps)
        if rows.new_steps:
            cur.executemany(sql.insert_step, rows.new_steps)
        if rows.events:
            cur.executemany(sql.insert_events, rows.events)
        if rows.new_jobs:
            cur.executemany(sql.insert_job, rows.new_jobs)
        if rows.applied_jobs:
            cur.executemany(sql.apply_job, rows.applied_jobs)

    def after_commit(_: Any) -> None:
        codec.apply_committed(commit.session, rows, ledger)
        if guard is not None and guard.after_commit is not None:
            guard.after_commit(True)

    return Write(run, after_commit)


def _own_guard(commit: Commit) -> Write | None:
    if commit.guard is not None and not isinstance(commit.guard, Write):
        raise TypeError("a commit guard is a Write this store made")
    return commit.guard


def _check_guard(cur: Any, guard: Write | None) -> None:
    if guard is not None and not guard.run(cur):
        raise GuardRefused("the commit's guard matched nothing: another writer recorded it first")


def _raise_stale(cur: Any, sql: Statements, rows: codec.CommitRows) -> None:
    cur.execute(sql.session_version, (rows.session_id,))
    found = cur.fetchone()
    if found is None:
        raise NotFound(f"session {rows.session_id} not found")
    if found[0] != rows.expected_version:
        raise Conflict(
            f"session {rows.session_id} is at version {found[0]}, not {rows.expected_version}: "
            "another writer committed first"
        )
    raise Conflict(f"session {rows.session_id}: event {rows.first_seq} is not above the last stored one ({found[1]})")


def set_meta_write(sql: Statements, session_id: str, owner: Owner, column: str, value: Any) -> Write:
    """Set an owner-held column (``title`` or ``archived``) and return the session's summary;
    ``NotFound`` unless ``owner`` owns it. The version and ``updated_at`` stay as they are."""
    statement = {"title": sql.rename_session, "archived": sql.archive_session}[column]

    def run(cur: Any) -> SessionSummary:
        cur.execute(sql.session_meta, (session_id,))
        found = cur.fetchone()
        if found is None or not codec.owns(owner, found[0], found[1]):
            raise NotFound(f"session {session_id} not found")
        cur.execute(statement, (value, session_id))
        row = dict(zip(codec.SUMMARY_COLUMNS, found[2:], strict=True))
        row[column] = value
        return codec.summary_from_row(row)

    return Write(run)


def finish_job_write(sql: Statements, job_id: str, status: str, result: Any, error: str | None) -> Write:
    body = None if result is None else codec.dumps(result)

    def run(cur: Any) -> bool:
        cur.execute(sql.finish_job, (status, body, error, job_id))
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
