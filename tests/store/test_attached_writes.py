"""Writes other modules make on the session store's database (audit rows, ops) ride its group
writer, on each real database: an attached write lands in the transaction of the session's next
commit (not before it), one left without a commit lands on its own, a stale commit does not take
it down, and concurrent appends keep the audit chain linear."""

from __future__ import annotations

import asyncio
import json
import time

from tether.core.ports import Commit
from tether.core.session import AgentSession, Owner
from tether.core.tools import ToolContext
from tether.errors import Conflict
from tether.store import SqlStore
from tether.store import sql_store as sql_store_module
from tether.store.audit import SqlAuditLog

ALICE = Owner("alice", "t1")


def _ctx(session_id: str, call: str) -> ToolContext:
    return ToolContext(ALICE, session_id, "turn-1", call, {}, credential="secret-token-xyz")


def _tools(log: SqlAuditLog) -> list[str]:
    return [r["tool_call_id"] for r in log.rows()]


def test_an_attached_audit_row_lands_with_the_sessions_next_commit(db_url: str) -> None:
    async def main() -> None:
        store = SqlStore(db_url)
        await store.open()
        log = SqlAuditLog(db_url, store)
        try:
            s = AgentSession.new(ALICE, "hello", {})
            s.transcript.append({"role": "user", "content": "hello"})
            await store.create(Commit(s))
            batches = store.writer_stats.batches
            await log.record(_ctx(s.session_id, "call-1"), "read_orders", {"customer": "华东"}, "value")
            await asyncio.to_thread(lambda: None)
            assert _tools(log) == []  # not committed on its own: it waits for the step's commit
            s.append({"role": "assistant", "content": "done"})
            await store.commit(Commit(s))
            assert _tools(log) == ["call-1"]
            assert store.writer_stats.batches == batches + 1  # one transaction for both
            assert log.verify() is None
            assert all("secret-token-xyz" not in json.dumps(r, default=str) for r in log.rows())
        finally:
            log.close()
            await store.close()

    asyncio.run(main())


def test_an_attached_write_without_a_commit_lands_on_its_own(db_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sql_store_module, "ATTACH_FLUSH_S", 0.05)

    async def main() -> None:
        store = SqlStore(db_url)
        await store.open()
        log = SqlAuditLog(db_url, store)
        try:
            await log.record(_ctx("ses-none", "call-1"), "read_orders", {}, "value")
            deadline = time.monotonic() + 5
            while not _tools(log) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert _tools(log) == ["call-1"]
            await log.record(_ctx("ses-none", "call-2"), "read_orders", {}, "value")
        finally:
            await store.close()  # a write still attached at close is committed, not dropped
        try:
            assert _tools(log) == ["call-1", "call-2"] and log.verify() is None
        finally:
            log.close()

    asyncio.run(main())


def test_a_stale_session_commit_does_not_take_its_attached_rows_down(db_url: str) -> None:
    async def main() -> None:
        store = SqlStore(db_url)
        await store.open()
        log = SqlAuditLog(db_url, store)
        try:
            s = AgentSession.new(ALICE, "hello", {})
            await store.create(Commit(s))
            other = await store.load(s.session_id)
            other.append({"role": "user", "content": "elsewhere"})
            await store.commit(Commit(other))  # another writer moved the session on
            await log.record(_ctx(s.session_id, "call-1"), "read_orders", {}, "value")
            s.append({"role": "user", "content": "stale"})
            try:
                await store.commit(Commit(s))
                raise AssertionError("a stale commit was accepted")
            except Conflict:
                pass
            assert _tools(log) == ["call-1"] and log.verify() is None
        finally:
            log.close()
            await store.close()

    asyncio.run(main())


def test_concurrent_appends_keep_the_chain_linear(db_url: str) -> None:
    async def main() -> None:
        store = SqlStore(db_url)
        await store.open()
        log = SqlAuditLog(db_url, store)
        try:
            sessions = []
            for _ in range(4):
                s = AgentSession.new(ALICE, "hello", {})
                await store.create(Commit(s))
                sessions.append(s)

            async def tool_rows(s: AgentSession) -> None:
                for i in range(5):
                    await log.record(_ctx(s.session_id, f"{s.session_id}-{i}"), "read_orders", {"i": i}, "value")
                    s.append({"role": "user", "content": str(i)})
                    await store.commit(Commit(s))

            async def action_rows(n: int) -> None:
                for i in range(5):
                    await log.record_action(ALICE, None, "confirm", f"op-{n}-{i}", {"i": i}, "confirmed")

            await asyncio.gather(*(tool_rows(s) for s in sessions), *(action_rows(n) for n in range(4)))
            rows = log.rows()
            assert len(rows) == 40 and len({r["tool_call_id"] for r in rows}) == 40
            assert [r["prev_hash"] for r in rows[1:]] == [r["hash"] for r in rows[:-1]]
            assert log.verify() is None
        finally:
            log.close()
            await store.close()

    asyncio.run(main())
