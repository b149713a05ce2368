"""What only the SQL store can show: what is stored, how much, and that it survives a reopen."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from tether.core.ports import Commit
from tether.core.session import Step
from tether.errors import ConfigError
from tether.store import SqlStore, codec, compact, upgrade
from tether.store.database import create_read_engine, normalize_url
from tether.store.migrate import HEAD, VERSION_TABLE
from tether.store.tables import agent_event, agent_message, agent_session, agent_step, metadata
from tether.store.writer import StoreError

from .builders import events, new_session, tool_round

pytestmark = pytest.mark.anyio


def _compact(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _stored_bytes(engine: sa.Engine, session_id: str) -> int:
    """Sum of the stored column lengths of the session's rows (8 bytes per number)."""
    total = 0
    with engine.connect() as conn:
        key = conn.execute(sa.select(agent_session.c.session_key).where(agent_session.c.id == session_id)).scalar()
        for table, column, value in (
            (agent_session, "id", session_id),
            (agent_message, "session_key", key),
            (agent_event, "session_key", key),
            (agent_step, "session_key", key),
        ):
            for row in conn.execute(sa.select(table).where(table.c[column] == value)):
                for cell in row:
                    if isinstance(cell, str):
                        total += len(cell.encode())
                    elif isinstance(cell, bytes):
                        total += len(cell)
                    elif cell is not None:
                        total += 8
    return total


async def test_stored_bytes_grow_linearly_with_the_transcript(db_url: str) -> None:
    async with SqlStore(db_url) as store:
        s = new_session()
        s.executed_steps.clear()
        await store.create(Commit(s))
        all_events = []
        engine = create_read_engine(normalize_url(db_url))
        try:
            for n in range(200):
                commit = tool_round(s, n, 1 + 3 * n)
                s.executed_steps.clear()  # the budget below is transcript + events only
                all_events += commit.events
                await store.commit(commit)
                if n % 50 == 49:
                    stored = _stored_bytes(engine, s.session_id)
                    reference = _compact(s.transcript) + _compact([e.to_json() for e in all_events])
                    assert stored <= 1.5 * reference, (n, stored, reference)
        finally:
            engine.dispose()
        loaded = await store.load(s.session_id)
        assert loaded.transcript == s.transcript and loaded.version == 201


def _rows(engine: sa.Engine, table: sa.Table, session_id: str) -> list[tuple[int, Any]]:
    key = sa.select(agent_session.c.session_key).where(agent_session.c.id == session_id).scalar_subquery()
    with engine.connect() as conn:
        query = sa.select(table.c.idx, table.c.body).where(table.c.session_key == key).order_by(table.c.idx)
        return [(i, compact.unpack(body)) for i, body in conn.execute(query)]


def _overwrite(engine: sa.Engine, table: sa.Table, session_id: str, idx: int, text: str) -> None:
    key = sa.select(agent_session.c.session_key).where(agent_session.c.id == session_id).scalar_subquery()
    with engine.begin() as conn:
        conn.execute(sa.update(table).where(table.c.session_key == key, table.c.idx == idx).values(body=text.encode()))


async def test_a_commit_writes_only_new_and_replaced_rows(db_url: str) -> None:
    async with SqlStore(db_url) as store:
        s = new_session()
        await store.create(Commit(s))
        await store.commit(tool_round(s, 1, 1))
        s.executed_steps.append(Step("turn-1", "call-async", "analyze", {"k": 1}, "PENDING", None, 5.0, 5.5))
        await store.commit(Commit(s))
        engine = create_read_engine(normalize_url(db_url))
        try:
            # rows the next commit must not touch: a message and a final step
            marker = json.dumps({"role": "system", "content": "written behind the store's back"})
            _overwrite(engine, agent_message, s.session_id, 0, marker)
            step_marker = compact.step_record(Step("turn-x", "call-x", "marker", {}, "SUCCEEDED"))
            _overwrite(engine, agent_step, s.session_id, 0, step_marker)
            s.set_message(3, {"role": "tool", "tool_call_id": "call-1", "content": "替换"})
            s.append({"role": "assistant", "content": "好"})
            pending = s.executed_steps[1]
            pending.status, pending.finished_at = "SUCCEEDED", 9.25  # an async job's result came in
            s.executed_steps.append(Step("turn-1", "call-3", "lookup", {}, "FAILED", None, 10.0, 10.5))
            await store.commit(Commit(s))
            messages = _rows(engine, agent_message, s.session_id)
            steps = _rows(engine, agent_step, s.session_id)
        finally:
            engine.dispose()
        assert [i for i, _ in messages] == [0, 1, 2, 3, 4]
        assert messages[0][1] == marker  # untouched: no full rewrite
        assert json.loads(messages[3][1])["content"] == "替换"
        assert json.loads(messages[4][1]) == {"role": "assistant", "content": "好"}
        assert [i for i, _ in steps] == [0, 1, 2]
        assert steps[0][1] == step_marker  # a final step is never written again
        assert compact.record_step(steps[1][1]).to_json() == {**pending.to_json(), "result": None}
        assert compact.record_step(steps[2][1]).status == "FAILED"


async def test_the_state_is_written_only_when_it_changed(db_url: str) -> None:
    async with SqlStore(db_url) as store:
        s = new_session()
        await store.create(Commit(s))
        engine = create_read_engine(normalize_url(db_url))
        marker = compact.dumps({"globalContext": {"written": "behind the store's back"}})

        def state() -> str:
            with engine.connect() as conn:
                query = sa.select(agent_session.c.state).where(agent_session.c.id == s.session_id)
                return compact.unpack(conn.execute(query).scalar_one())

        try:
            with engine.begin() as conn:
                conn.execute(
                    sa.update(agent_session).where(agent_session.c.id == s.session_id).values(state=marker.encode())
                )
            await store.commit(tool_round(s, 1, 1))  # same state: the row keeps it
            assert state() == marker
            s.summary = "摘要"
            await store.commit(Commit(s))
            assert json.loads(state())["summary"] == "摘要"
        finally:
            engine.dispose()


async def test_the_state_holds_only_what_differs_from_a_new_session(db_url: str) -> None:
    """Defaults are left out of the stored state and read back as defaults; a state written whole
    (as earlier versions did) still reads."""
    async with SqlStore(db_url) as store:
        s = new_session()
        s.global_context, s.current_turn_id = {}, "turn-1"
        await store.create(Commit(s))
        engine = create_read_engine(normalize_url(db_url))
        row = sa.select(agent_session.c.state).where(agent_session.c.id == s.session_id)
        try:
            with engine.connect() as conn:
                stored = json.loads(compact.unpack(conn.execute(row).scalar_one()))
            assert stored == {"currentTurnId": "turn-1"}
            back = await store.load(s.session_id)
            assert (back.global_context, back.selected_skill_ids, back.waiting_job_ids) == ({}, [], [])
            assert (back.pending_interaction, back.last_error, back.summary, back.summary_upto) == (None, None, None, 0)

            s.selected_skill_ids, s.summary, s.summary_upto = ["prices"], "摘要", 3
            s.pending_interaction = {"interactionId": "int-1", "kind": "question"}
            s.answered_interactions = ["int-0"]
            await store.commit(Commit(s))
            back = await store.load(s.session_id)
            assert (back.selected_skill_ids, back.summary, back.summary_upto) == (["prices"], "摘要", 3)
            assert back.pending_interaction == s.pending_interaction and back.answered_interactions == ["int-0"]

            whole: dict[str, Any] = {
                "globalContext": {"k": 1}, "selectedSkillIds": [], "pendingInteraction": None, "waitingJobIds": [],
                "currentTurnId": "turn-9", "lastError": None, "lastDslId": None, "summary": None, "summaryUpto": 0,
                "answered": [],
            }  # fmt: skip
            with engine.begin() as conn:
                query = sa.update(agent_session).where(agent_session.c.id == s.session_id)
                conn.execute(query.values(state=compact.dumps(whole).encode()))
            back = await store.load(s.session_id)
            assert (back.global_context, back.current_turn_id, back.pending_interaction) == ({"k": 1}, "turn-9", None)
        finally:
            engine.dispose()


def test_a_system_prompt_is_encoded_once_and_decodes_as_written() -> None:
    prompt = {"role": "system", "content": "You are tether. " * 40}
    first = codec.message_body(prompt, compact.pack)
    assert codec.message_body(dict(prompt), compact.pack) is first
    assert json.loads(compact.unpack(first)) == prompt
    other = {"role": "system", "content": "You are tether, for another user. " * 20}
    assert json.loads(compact.unpack(codec.message_body(other, compact.pack))) == other


async def test_group_commit_is_durable_across_a_reopen(db_url: str) -> None:
    sessions = [new_session(query=f"q{i}") for i in range(40)]
    async with SqlStore(db_url) as store:
        await asyncio.gather(*(store.create(Commit(s)) for s in sessions))
        for n in range(3):
            await asyncio.gather(*(store.commit(tool_round(s, n, 1 + 3 * n)) for s in sessions))
        stats = store.writer_stats
        assert stats.writes == 160 and stats.batches < 40
    async with SqlStore(db_url) as reopened:
        for s in sessions:
            loaded = await reopened.load(s.session_id)
            assert loaded.transcript == s.transcript and loaded.version == 4
            assert await reopened.last_seq(s.session_id) == 9
        s = sessions[0]
        s.append({"role": "user", "content": "继续"})
        await reopened.commit(Commit(s, events(s, 10, "TURN_STARTED")))


async def test_steps_of_a_session_another_process_wrote_are_rewritten_whole(db_url: str) -> None:
    s = new_session()
    async with SqlStore(db_url) as first:
        await first.create(Commit(s))
        for n in range(3):
            await first.commit(tool_round(s, n, 1 + 3 * n))
        s.executed_steps.append(Step("turn-1", "call-async", "analyze", {}, "PENDING", None, 1.0, 1.0))
        await first.commit(Commit(s))
    async with SqlStore(db_url) as second:  # has never seen this session: it cannot know the rows
        s.executed_steps[3].status = "FAILED"
        s.executed_steps.append(Step("turn-1", "call-9", "lookup", {"i": 9}, "SUCCEEDED", None, 2.0, 2.5))
        await second.commit(Commit(s))
        loaded = await second.load(s.session_id)
        assert [st.to_json() for st in loaded.executed_steps] == [st.to_json() for st in s.executed_steps]
        s.executed_steps.append(Step("turn-1", "call-10", "lookup", {}, "SUCCEEDED", None, 3.0, 3.5))
        await second.commit(Commit(s))  # now it knows them: one new row
        assert len((await second.load(s.session_id)).executed_steps) == 6


async def test_a_conflict_in_a_batch_does_not_sink_the_others(db_url: str) -> None:
    async with SqlStore(db_url) as store:
        sessions = [new_session(query=f"q{i}") for i in range(10)]
        await asyncio.gather(*(store.create(Commit(s)) for s in sessions))
        duplicate = new_session()
        duplicate.session_id = sessions[3].session_id
        results = await asyncio.gather(
            *(store.commit(tool_round(s, 0, 1)) for s in sessions[:5]),
            store.create(Commit(duplicate)),
            *(store.commit(tool_round(s, 0, 1)) for s in sessions[5:]),
            return_exceptions=True,
        )
        assert [type(r).__name__ for r in results] == ["NoneType"] * 5 + ["Conflict"] + ["NoneType"] * 5
        for s in sessions:
            assert (await store.load(s.session_id)).transcript == s.transcript


def test_migrations_match_the_tables_and_run_from_any_cwd(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    upgrade(db_url)
    upgrade(db_url)  # idempotent
    engine = create_read_engine(normalize_url(db_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE, "compare_type": True})
            assert compare_metadata(context, metadata) == []
    finally:
        engine.dispose()


def test_urls_are_normalised(tmp_path: Path) -> None:
    assert normalize_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert normalize_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    maria = normalize_url("mariadb://u@h/db")
    assert maria.drivername == "mysql+pymysql" and maria.query["charset"] == "utf8mb4"
    assert normalize_url("mysql://u@h/db?charset=utf8mb4").drivername == "mysql+pymysql"
    normalize_url(f"sqlite:///{tmp_path / 'a' / 'b' / 'tether.db'}")
    assert (tmp_path / "a" / "b").is_dir()
    with pytest.raises(ConfigError):
        normalize_url("sqlite://")
    with pytest.raises(ConfigError):
        normalize_url("oracle://u@h/db")


def test_head_constant_is_the_newest_revision_and_a_migrated_database_skips_alembic(tmp_path: Path) -> None:
    from alembic.script import ScriptDirectory

    from tether.store.migrate import HEAD, SCRIPT_LOCATION, alembic_config, at_head

    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD
    assert SCRIPT_LOCATION.endswith("migrations")
    url = f"sqlite:///{tmp_path / 'm.db'}"
    engine = create_read_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            assert not at_head(conn)
        upgrade(url)
        with engine.connect() as conn:
            assert at_head(conn)
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = '0006'"))
            assert not at_head(conn)
    finally:
        engine.dispose()


async def test_a_database_a_newer_tether_migrated_is_refused_with_what_to_do(db_url: str, tmp_path: Path) -> None:
    """Older code must not write into a newer schema (it would miss what the newer one keeps)."""
    async with SqlStore(db_url):
        pass
    engine = create_read_engine(normalize_url(db_url))
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = '9001'"))
        with pytest.raises(ConfigError, match=r"revision 9001, which this tether does not know .*a newer tether"):
            async with SqlStore(db_url):
                pass
        if db_url.startswith("sqlite"):  # the command line says it in one line, no traceback
            for command in (["db", "upgrade"], ["serve", "--port", "1"]):  # serve refuses before it binds
                cli = subprocess.run(
                    [sys.executable, "-m", "tether.cli", *command],
                    env={**os.environ, "TETHER_DATABASE_URL": db_url},
                    capture_output=True,
                    text=True,
                    timeout=120,
                    cwd=tmp_path,
                )
                assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
                assert "schema revision 9001" in cli.stderr
    finally:
        with engine.begin() as conn:  # the fixture's database is dropped or reused: leave it valid
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = '{HEAD}'"))
        engine.dispose()


async def test_a_load_the_database_fails_is_a_store_error_and_the_next_one_works(db_url: str) -> None:
    """The raw-DBAPI read path translates driver errors and drops the broken connection."""
    s = new_session()
    async with SqlStore(db_url) as store:
        await store.create(Commit(s))
        await store.commit(tool_round(s, 0, 1))
        engine = create_read_engine(normalize_url(db_url))
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql("ALTER TABLE agent_message RENAME TO agent_message_away")
            with pytest.raises(StoreError, match="database error"):
                await store.load(s.session_id)
            with engine.begin() as conn:
                conn.exec_driver_sql("ALTER TABLE agent_message_away RENAME TO agent_message")
        finally:
            engine.dispose()
        assert (await store.load(s.session_id)).transcript == s.transcript


async def test_loads_from_several_threads_each_see_the_committed_session(db_url: str) -> None:
    s = new_session()
    async with SqlStore(db_url) as store:
        await store.create(Commit(s))
        await store.commit(tool_round(s, 0, 1))

        def load_in_own_loop() -> int:
            return len(asyncio.run(store.load(s.session_id)).transcript)

        lengths = await asyncio.gather(*(asyncio.to_thread(load_in_own_loop) for _ in range(4)))
        assert lengths == [len(s.transcript)] * 4
    with pytest.raises(StoreError, match="not open"):
        await store.load(s.session_id)
