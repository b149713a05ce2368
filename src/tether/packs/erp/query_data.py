"""``query_data``: the ad-hoc fallback (seed 003 §5, §9) — model-written SQL over the ``viw_*``
views bound to the caller's granted forms.

Two walls: ``guard`` (one SELECT, only those views, the caller's brand as the tenant predicate on
every reference at any depth — with the caller's subsidiary, and for a user who sees only their own
customers (``jurisdiction`` ``own``) their own rows, on every view that has those columns — a
LIMIT cap) and a read-only connection with a statement timeout
underneath (``ReadOnlyExecutor``). A question's validated SQL is cached per brand; every use is
checked against the caller's whole policy. ``guard``'s verdicts are reused from ``GuardCache`` under
the SQL text, the dialect and every field of the policy (views from the grants, brand, subsidiary,
own rows, version), so another user, brand, grant set or row scope never reaches another's
verdict. A database error goes back to the model — the error, not data — for one repair attempt,
and is recorded in the error history.

The hot path — SQL the process has already guarded for this policy and stored for this question —
runs on the event loop with no worker thread: the cached verdict, then on SQLite a brief run
(``ReadOnlyExecutor.run_briefly``, a few milliseconds of SQLite's work at most) and on PostgreSQL
psycopg's async connections (``run_async``). Anything else — a verdict to compute, a cache row to
write, an error to record, a longer SQLite statement, MariaDB — goes to one worker thread as before.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from tether.pack import (
    ErrorResult,
    GuardCache,
    GuardedQuery,
    Policy,
    QueryFailed,
    QueryResult,
    ReadOnlyExecutor,
    SqlRejected,
    ToolContext,
    ToolError,
)
from tether.packs.erp import messages
from tether.packs.erp.identity import brand_of, subsidiary_of
from tether.packs.erp.state import QueryState, question_key

TENANT_COLUMN = "brands_id"
SUBSIDIARY_COLUMN = "subsidiary_id"  # the tenant is brand + subsidiary (docs/erp.md)
OWN_ROWS_COLUMN = "salesman_id"  # the ERP's row scope (seed §7's jurisdiction): a customer's salesperson
REPAIRS = 1  # attempts the model gets after a failed query of the same question
MAX_POLICIES = 4096  # callers' policies kept (grants × tenant × own-rows user)


@dataclass
class QueryService:
    executor: ReadOnlyExecutor
    state: QueryState
    max_rows: int = 200
    guards: GuardCache = field(default_factory=GuardCache)
    _views: dict[str, str] | None = None  # view name -> form id
    _columns: dict[str, frozenset[str]] = field(default_factory=dict)  # view name -> its columns
    _failures: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    # (grants, tenant, own-rows user) -> the Policy they give: a pure function of those and the
    # views' config, which is read once per process like views() and columns()
    _policies: dict[tuple[frozenset[str], str, str | None], Policy] = field(default_factory=dict)

    def views(self) -> dict[str, str]:
        if self._views is None:
            result = self.executor.execute("SELECT view_name, form_id FROM ai_query_view")
            self._views = {str(v): str(f) for v, f in result.rows}
        return self._views

    def columns(self, view: str) -> frozenset[str]:
        if view not in self._columns:  # the view's shape, read once (views are the ERP's config)
            result = self.executor.execute(f"SELECT * FROM {view} WHERE 1 = 0")
            self._columns[view] = frozenset(c.lower() for c in result.columns)
        return self._columns[view]

    def policy(self, ctx: ToolContext, own_rows: bool = False) -> Policy:
        """The caller's views, each filtered to their brand, their subsidiary and — ``own_rows`` —
        their own customers' rows, wherever the view has those columns."""
        key = (ctx.grants, ctx.owner.tenant, ctx.owner.user_id if own_rows else None)
        known = self._policies.get(key)
        if known is None:
            known = self._build_policy(ctx, own_rows)
            if len(self._policies) >= MAX_POLICIES:
                self._policies.clear()
            self._policies[key] = known
        return known

    def _build_policy(self, ctx: ToolContext, own_rows: bool) -> Policy:
        brand, subsidiary = brand_of(ctx.owner.tenant), subsidiary_of(ctx.owner.tenant)
        if brand is None:
            raise ToolError(
                "query_data needs an ERP login (this identity has no ERP brand)", code=messages.LOGIN_MISSING
            )
        allowed = {v: TENANT_COLUMN for v, form in self.views().items() if form in ctx.grants}
        if not allowed:
            raise ToolError("no query views are open to you: none of your forms has one", code=messages.NO_VIEWS)
        filters: dict[str, dict[str, str | int]] = {}
        for view in allowed:
            columns, scope = self.columns(view), dict[str, str | int]()
            if subsidiary is not None and SUBSIDIARY_COLUMN in columns:
                scope[SUBSIDIARY_COLUMN] = subsidiary
            if own_rows and OWN_ROWS_COLUMN in columns:
                scope[OWN_ROWS_COLUMN] = ctx.owner.user_id
            if scope:
                filters[view] = scope
        return Policy(tables=allowed, tenant=brand, max_rows=self.max_rows, filters=filters)

    async def run(self, ctx: ToolContext, question: str, sql: str | None, own_rows: bool = False) -> Any:
        policy = self.policy(ctx, own_rows)  # a view's columns are read once per process, as views()
        brand = int(policy.tenant)  # type: ignore[arg-type]
        # In the loop when nothing blocks (see the module docstring); otherwise one worker-thread hop
        # for everything that does (cache read, guard, query, cache write or error record).
        tried = await self._attempt_in_loop(brand, question, sql, policy)
        if tried is None:
            tried = await asyncio.to_thread(self._attempt, ctx, brand, question, sql, policy)
        if tried.sql is None:
            return ErrorResult(
                "no validated SQL is cached for this question yet; write one SELECT over these views: "
                + ", ".join(sorted(policy.tables)),
                retryable=True,
                code=messages.NO_SQL,
            )
        ctx.audit_notes.update({"question": question[:500], "cached": tried.cached})
        if tried.rejected is not None:
            ctx.audit_notes.update({"sql": tried.sql[:4000], "rejected": tried.rejected})
            return self._failed(ctx, question, f"the SQL was refused: {tried.rejected}")
        ctx.audit_notes["sql"] = tried.guarded_sql
        if tried.error is not None or tried.answer is None:
            ctx.audit_notes["error"] = tried.error
            return self._failed(ctx, question, f"the database refused it: {tried.error}")
        ctx.audit_notes["rows"] = tried.answer["rowCount"]
        self._failures.pop((ctx.session_id, question_key(question)), None)
        return tried.answer

    async def _attempt_in_loop(self, brand: int, question: str, sql: str | None, policy: Policy) -> _Tried | None:
        """On the event loop: SQL given with the call, already stored for the question by this
        process, whose verdict for this policy is cached, run briefly (SQLite) or on the loop's
        own connections (PostgreSQL); None when any of that is not so, or the query fails or needs
        longer — the worker thread's path then does it all (and records a failure)."""
        executor = self.executor
        if not sql or not (executor.runs_briefly or executor.runs_async) or not self.state.holds(brand, question, sql):
            return None
        try:
            guarded = self.guards.lookup(sql, dialect=executor.dialect, policy=policy)
            if guarded is None:
                return None
            if executor.runs_briefly:
                result = executor.run_briefly(guarded)
            else:
                result = await executor.run_async(guarded)
        except (SqlRejected, QueryFailed):
            return None
        if result is None:
            return None
        return _Tried(sql, False, guarded.sql, answer=_answer(result, guarded, cached=False))

    def _attempt(self, ctx: ToolContext, brand: int, question: str, sql: str | None, policy: Policy) -> _Tried:
        """In a worker thread: the cached SQL when none is given, guard, the read-only query, then
        the cache write (fresh SQL that ran) or the error record (and a failing cached SQL dropped)."""
        cached = False
        if not sql or not sql.strip():
            sql = self.state.cached_sql(brand, question)
            if sql is None:
                return _Tried(None, False)
            cached = True
        try:
            guarded = self.guards.guard(sql, dialect=self.executor.dialect, policy=policy)
        except SqlRejected as exc:
            self._record_failure(ctx, brand, question, sql, f"the SQL was refused: {exc.message}", cached)
            return _Tried(sql, cached, rejected=exc.message)
        try:
            result = self.executor.run(guarded)
        except QueryFailed as exc:
            message = f"the database refused it: {exc.message}"
            self._record_failure(ctx, brand, question, guarded.sql, message, cached)
            return _Tried(sql, cached, guarded.sql, error=exc.message)
        if not cached:
            self.state.remember(brand, question, sql)
        return _Tried(sql, cached, guarded.sql, answer=_answer(result, guarded, cached))

    def _record_failure(
        self, ctx: ToolContext, brand: int, question: str, sql: str, message: str, cached: bool
    ) -> None:
        self.state.record_error(brand, ctx.owner.user_id, ctx.session_id, question, sql, message)
        if cached:  # a cached query that no longer passes is dropped, never retried as is
            self.state.forget(brand, question)

    def _failed(self, ctx: ToolContext, question: str, message: str) -> ErrorResult:
        key = (ctx.session_id, question_key(question))
        self._failures[key] += 1
        if self._failures[key] > REPAIRS:
            message += ". The query failed again; answer without it or ask the user."
            return ErrorResult(message, False, messages.QUERY_FAILED)
        return ErrorResult(f"{message}. Fix the SQL and call query_data once more.", True, messages.QUERY_FAILED)


@dataclass(slots=True)
class _Tried:
    """What one ``_attempt`` found: ``sql`` None when nothing is cached for the question."""

    sql: str | None
    cached: bool
    guarded_sql: str | None = None
    rejected: str | None = None  # guard's refusal
    error: str | None = None  # the database's refusal
    answer: dict[str, Any] | None = None


def _answer(result: QueryResult, guarded: GuardedQuery, cached: bool) -> dict[str, Any]:
    return {
        "columns": list(result.columns),
        "rows": [[plain_value(v) for v in row] for row in result.rows],
        "rowCount": len(result.rows),
        "truncated": result.truncated or len(result.rows) >= guarded.limit,
        "cached": cached,
        "sql": guarded.sql,
        "tables": list(guarded.tables),
    }


def plain_value(value: Any) -> Any:
    """A database value as JSON: Decimals as floats, dates and the rest as text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Decimal):
        return float(value)
    return str(value)
