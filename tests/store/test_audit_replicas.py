"""The audit chain stays linear when several replicas append at once: each ``SqlAuditLog`` below
has its own engine, as each replica has, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import asyncio

from tether.core.session import Owner
from tether.store import SqlStore
from tether.store.audit import SqlAuditLog


def test_concurrent_appends_from_three_replicas_keep_one_unbroken_chain(db_url: str) -> None:
    async def main() -> None:
        store = SqlStore(db_url)
        await store.open()  # migrates
        await store.close()
        logs = [SqlAuditLog(db_url) for _ in range(3)]
        try:

            async def append(log: SqlAuditLog, k: int) -> None:
                for i in range(25):
                    await log.record_action(Owner("alice", "t1"), None, "expire", f"op-{k}-{i}", {"k": k}, "expired")

            await asyncio.gather(*(append(log, k) for k, log in enumerate(logs)))
            rows = logs[0].rows()
            assert len(rows) == 75 and len({r["tool_call_id"] for r in rows}) == 75  # every append landed once
            assert logs[1].verify() is None  # one linear chain: no row shares its predecessor
            assert len({r["prev_hash"] for r in rows}) == 75
        finally:
            for log in logs:
                log.close()

    asyncio.run(main())
