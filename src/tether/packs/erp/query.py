"""``query_data``: the ad-hoc fallback (seed 003 §5, §9) — model-written SQL over the ``viw_*``
views bound to the caller's granted forms.

Two walls: ``guard`` (one SELECT, only those views, the caller's brand as the tenant predicate on
every reference at any depth, a LIMIT cap) and a read-only connection with a statement timeout
underneath (``ReadOnlyExecutor``). A question's validated SQL is cached per brand and guarded
again on every use. A database error goes back to the model — the error, not data — for one
repair attempt, and is recorded in the error history.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from tether.pack import (
    ErrorResult,
    Policy,
    QueryFailed,
    ReadOnlyExecutor,
    SqlRejected,
    ToolContext,
    ToolError,
    guard,
)
from tether.packs.erp.identity import brand_of
from tether.packs.erp.state import QueryState, question_key

TENANT_COLUMN = "brands_id"
REPAIRS = 1  # attempts the model gets after a failed query of the same question


@dataclass
class QueryService:
    executor: ReadOnlyExecutor
    state: QueryState
    max_rows: int = 200
    _views: dict[str, str] | None = None  # view name -> form id
    _failures: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))

    def views(self) -> dict[str, str]:
        if self._views is None:
            result = self.executor.execute("SELECT view_name, form_id FROM ai_query_view")
            self._views = {str(v): str(f) for v, f in result.rows}
        return self._views

    def policy(self, ctx: ToolContext) -> Policy:
        brand = brand_of(ctx.owner.tenant)
        if brand is None:
            raise ToolError("query_data needs an ERP login (this identity has no ERP brand)")
        allowed = {v: TENANT_COLUMN for v, form in self.views().items() if form in ctx.grants}
        if not allowed:
            raise ToolError("no query views are open to you: none of your forms has one")
        return Policy(tables=allowed, tenant=brand, max_rows=self.max_rows)

    async def run(self, ctx: ToolContext, question: str, sql: str | None) -> Any:
        policy = self.policy(ctx)
        brand = int(policy.tenant)  # type: ignore[arg-type]
        cached = False
        if not sql or not sql.strip():
            sql = await asyncio.to_thread(self.state.cached_sql, brand, question)
            if sql is None:
                return ErrorResult(
                    "no validated SQL is cached for this question yet; write one SELECT over these views: "
                    + ", ".join(sorted(policy.tables)),
                    retryable=True,
                )
            cached = True
        ctx.audit_notes.update({"question": question[:500], "cached": cached})
        try:
            guarded = guard(sql, dialect=self.executor.dialect, policy=policy)
        except SqlRejected as exc:
            ctx.audit_notes.update({"sql": sql[:4000], "rejected": exc.message})
            return await self._failed(ctx, brand, question, sql, f"the SQL was refused: {exc.message}", cached)
        ctx.audit_notes["sql"] = guarded.sql
        try:
            result = await asyncio.to_thread(self.executor.run, guarded)
        except QueryFailed as exc:
            ctx.audit_notes["error"] = exc.message
            return await self._failed(
                ctx, brand, question, guarded.sql, f"the database refused it: {exc.message}", cached
            )
        ctx.audit_notes["rows"] = len(result.rows)
        self._failures.pop((ctx.session_id, question_key(question)), None)
        if not cached:
            await asyncio.to_thread(self.state.remember, brand, question, sql)
        return {
            "columns": list(result.columns),
            "rows": [[_plain(v) for v in row] for row in result.rows],
            "rowCount": len(result.rows),
            "truncated": result.truncated or len(result.rows) >= guarded.limit,
            "cached": cached,
            "sql": guarded.sql,
        }

    async def _failed(
        self, ctx: ToolContext, brand: int, question: str, sql: str, message: str, cached: bool
    ) -> ErrorResult:
        await asyncio.to_thread(
            self.state.record_error, brand, ctx.owner.user_id, ctx.session_id, question, sql, message
        )
        if cached:  # a cached query that no longer passes is dropped, never retried as is
            await asyncio.to_thread(self.state.forget, brand, question)
        key = (ctx.session_id, question_key(question))
        self._failures[key] += 1
        if self._failures[key] > REPAIRS:
            return ErrorResult(f"{message}. The query failed again; answer without it or ask the user.", False)
        return ErrorResult(f"{message}. Fix the SQL and call query_data once more.", True)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Decimal):
        return float(value)
    return str(value)
