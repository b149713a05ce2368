"""Migration 0003 on a database that holds data: a store at 0002 with sessions is upgraded and every
session, step and event reads back as it was written (on SQLite, PostgreSQL and MariaDB)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from tether.core.events import RuntimeEvent
from tether.core.ports import Commit
from tether.core.session import AgentSession, Status, Step
from tether.store import SqlStore, upgrade
from tether.store.database import create_read_engine, normalize_url
from tether.store.migrate import VERSION_TABLE
from tether.store.tables import metadata

from .builders import OTHER, OWNER, events, new_session, tool_round

pytestmark = pytest.mark.anyio

# The 0002 schema's session tables, as 0001 created them (what the old store wrote).
_old = sa.MetaData()
OLD_SESSION = sa.Table(
    "agent_session",
    _old,
    *(sa.Column(c) for c in ("id", "owner_user", "owner_tenant", "title", "query", "status", "version")),
    *(sa.Column(c) for c in ("lease_until", "last_seq", "state", "steps", "created_at", "updated_at")),
)
OLD_MESSAGE = sa.Table("agent_message", _old, sa.Column("session_id"), sa.Column("idx"), sa.Column("body"))
OLD_EVENT = sa.Table(
    "agent_event", _old, *(sa.Column(c) for c in ("session_id", "seq", "turn_id", "type", "ts", "data"))
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _old_rows(
    s: AgentSession, evs: list[RuntimeEvent]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows the 0002 store wrote for ``s``: steps as one JSON list without results."""
    state = {
        "globalContext": s.global_context,
        "selectedSkillIds": s.selected_skill_ids,
        "pendingInteraction": s.pending_interaction,
        "waitingJobIds": s.waiting_job_ids,
        "currentTurnId": s.current_turn_id,
        "lastError": s.last_error,
        "lastDslId": s.last_dsl_id,
        "summary": s.summary,
    }
    steps = [{k: v for k, v in st.to_json().items() if k != "result"} for st in s.executed_steps]
    head = {
        "id": s.session_id, "owner_user": s.owner.user_id, "owner_tenant": s.owner.tenant, "title": s.title,
        "query": s.query, "status": s.status.value, "version": s.version, "lease_until": None,
        "last_seq": s.last_seq, "state": _dumps(state), "steps": _dumps(steps), "created_at": s.created_at,
        "updated_at": s.updated_at,
    }  # fmt: skip
    messages = [{"session_id": s.session_id, "idx": i, "body": _dumps(m)} for i, m in enumerate(s.transcript)]
    rows = [
        {
            "session_id": e.session_id,
            "seq": e.seq,
            "turn_id": e.turn_id,
            "type": e.type,
            "ts": e.ts,
            "data": _dumps(e.data),
        }
        for e in evs
    ]
    return head, messages, rows


def _sessions() -> list[tuple[AgentSession, list[RuntimeEvent]]]:
    """Sessions as the old store held them, with what 0003 must carry over exactly."""
    made = []
    plain = new_session(query='带引号的 "问题" \\ 与反斜杠\n第二行')
    evs = events(plain, 1, "SESSION_STARTED", "TURN_STARTED")
    for n in range(3):
        evs += tool_round(plain, n, plain.last_seq + 1).events
    plain.transition(Status.SUCCEEDED)
    plain.version, plain.summary, plain.last_dsl_id = 5, "摘要", "dsl-1"
    made.append((plain, evs))

    waiting = new_session(OTHER, query="waiting for a job")
    evs = events(waiting, 1, "SESSION_STARTED", *["TOKEN"] * 140, "CUSTOM_PACK_EVENT")  # more than one batch
    evs[5].turn_id = None  # an event outside the turn
    evs[6].turn_id = "turn-2"
    waiting.executed_steps.append(Step("turn-1", "call-a", "analyze", {"k": ["金"]}, "PENDING", None, 1.5, 1.75))
    waiting.append({"role": "tool", "tool_call_id": "call-a", "content": "pending"})
    waiting.waiting_job_ids = ["job-1"]
    waiting.transition(Status.WAITING_ASYNC_CALLBACK)
    waiting.version = 2
    made.append((waiting, evs))

    empty = new_session(query="no events, no steps")
    empty.version = 1
    made.append((empty, []))
    return made


def _write_0002(url: str, sessions: list[tuple[AgentSession, list[RuntimeEvent]]]) -> None:
    upgrade(url, "0002")
    engine = create_read_engine(normalize_url(url))
    try:
        with engine.begin() as conn:
            for s, evs in sessions:
                head, messages, rows = _old_rows(s, evs)
                conn.execute(OLD_SESSION.insert(), [head])
                conn.execute(OLD_MESSAGE.insert(), messages)
                if rows:
                    conn.execute(OLD_EVENT.insert(), rows)
    finally:
        engine.dispose()


def _expected(s: AgentSession) -> dict[str, Any]:
    steps = [st.to_json() for st in s.executed_steps]
    for st in steps:  # a step's result is read back from its tool message
        st["result"] = st["result"] if st["status"] != "PENDING" else None
    return {
        "transcript": s.transcript, "steps": steps, "status": s.status, "version": s.version,
        "last_seq": s.last_seq, "title": s.title, "query": s.query, "context": s.global_context,
        "waiting": s.waiting_job_ids, "summary": s.summary, "dsl": s.last_dsl_id,
    }  # fmt: skip


def _actual(s: AgentSession) -> dict[str, Any]:
    return {
        "transcript": s.transcript, "steps": [st.to_json() for st in s.executed_steps], "status": s.status,
        "version": s.version, "last_seq": s.last_seq, "title": s.title, "query": s.query,
        "context": s.global_context, "waiting": s.waiting_job_ids, "summary": s.summary, "dsl": s.last_dsl_id,
    }  # fmt: skip


async def test_upgrade_from_0002_keeps_every_session_step_and_event(db_url: str) -> None:
    sessions = _sessions()
    _write_0002(db_url, sessions)
    upgrade(db_url)
    engine = create_read_engine(normalize_url(db_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE, "compare_type": True})
            assert compare_metadata(context, metadata) == []
    finally:
        engine.dispose()

    async with SqlStore(db_url) as store:
        for s, evs in sessions:
            loaded = await store.load(s.session_id)
            assert _actual(loaded) == _expected(s)
            stored = await store.events_after(s.session_id, 0, limit=1000)
            assert [e.to_json() for e in stored] == [e.to_json() for e in evs]
            if len(evs) > 70:  # a page that starts and ends inside migrated batches
                page = await store.events_after(s.session_id, 60, limit=10)
                assert [e.seq for e in page] == list(range(61, 71))
            summary = await store.get_summary(s.session_id, s.owner)
            assert (summary.title, summary.archived, summary.status) == (s.title, False, s.status)

        # migrated sessions go on: new rows next to migrated ones, new sessions get new keys
        plain = await store.load(sessions[0][0].session_id)
        plain.append({"role": "user", "content": "继续"})
        await store.commit(tool_round(plain, 9, plain.last_seq + 1))
        again = await store.load(plain.session_id)
        assert again.transcript == plain.transcript and len(again.executed_steps) == 4
        assert len(await store.events_after(plain.session_id, 0)) == len(sessions[0][1]) + 3

        waiting = await store.load(sessions[1][0].session_id)
        step = waiting.executed_steps[0]
        step.status, step.finished_at = "SUCCEEDED", 2.5
        waiting.transition(Status.RUNNING)
        await store.commit(Commit(waiting, events(waiting, waiting.last_seq + 1, "TOOL_CALLBACK_RECEIVED")))
        assert (await store.load(waiting.session_id)).executed_steps[0].status == "SUCCEEDED"

        fresh = new_session()
        await store.create(Commit(fresh, events(fresh, 1, "SESSION_STARTED")))
        assert (await store.load(fresh.session_id, OWNER)).transcript == fresh.transcript
        listed = await store.list_sessions(OWNER, 10, 0)
        assert {x.session_id for x in listed} == {
            fresh.session_id,
            sessions[0][0].session_id,
            sessions[2][0].session_id,
        }
