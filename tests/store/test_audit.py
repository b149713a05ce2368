"""The audit log on each real database: audited tool calls are appended through the pipeline,
the hash chain verifies, and a changed or deleted row is detected."""

from __future__ import annotations

import asyncio
import json

import sqlalchemy as sa

from tether.core.messages import ToolCall
from tether.core.pipeline import ToolPipeline
from tether.core.session import Owner
from tether.core.tools import ToolContext, ToolRegistry, tool
from tether.store import SqlStore
from tether.store.audit import SqlAuditLog
from tether.store.tables import audit_log

SECRET = "erp-session-cookie-123456"


def _broken_at(log: SqlAuditLog) -> int | None:
    broken = log.verify()
    assert broken is not None, "the log verified intact"
    return broken.row_id


@tool(audited=True)
async def read_orders(ctx: ToolContext, customer: str) -> dict[str, str]:
    """Reads business data."""
    return {"customer": customer}


@tool()
async def echo(ctx: ToolContext, text: str) -> dict[str, str]:
    """Not audited."""
    return {"text": text}


def test_audited_calls_form_a_verifiable_chain(db_url: str) -> None:
    async def main() -> SqlAuditLog:
        store = SqlStore(db_url)
        await store.open()  # migrates, audit_log included
        await store.close()
        log = SqlAuditLog(db_url)
        pipeline = ToolPipeline(ToolRegistry([read_orders, echo]), audit=log)
        allowed = frozenset({"read_orders", "echo"})
        for n, (name, args) in enumerate(
            [
                ("read_orders", {"customer": "华东精密"}),
                ("echo", {"text": "x"}),
                ("read_orders", {"customer": "Northwind"}),
                ("read_orders", {"bad": 1}),
            ]
        ):
            ctx = ToolContext(Owner("alice", "t1"), "ses-1", "turn-1", f"call-{n}", {}, credential=SECRET)
            await pipeline.run(ToolCall(f"call-{n}", name, json.dumps(args)), allowed, ctx, lambda *_: None)
        return log

    log = asyncio.run(main())
    try:
        rows = log.rows()
        assert [(r["tool_id"], r["outcome"]) for r in rows] == [
            ("read_orders", "value"),
            ("read_orders", "value"),
            ("read_orders", "error"),
        ]
        assert json.loads(rows[0]["args"]) == {"customer": "华东精密"} and rows[0]["user_id"] == "alice"
        assert all(SECRET not in json.dumps(r, default=str) for r in rows)
        assert log.verify() is None
        with log.engine.begin() as conn:
            conn.execute(sa.update(audit_log).where(audit_log.c.id == rows[1]["id"]).values(args='{"customer":"x"}'))
        assert _broken_at(log) == rows[1]["id"]
        with log.engine.begin() as conn:
            conn.execute(sa.update(audit_log).where(audit_log.c.id == rows[1]["id"]).values(args=rows[1]["args"]))
        assert log.verify() is None
        with log.engine.begin() as conn:
            conn.execute(sa.delete(audit_log).where(audit_log.c.id == rows[0]["id"]))
        assert _broken_at(log) == rows[1]["id"]
    finally:
        log.close()
