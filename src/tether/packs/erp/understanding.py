"""``read_question``: the offline planner's reader as a tool. It reads a clerk's question (or change
request: ``writes.py``, whose outcome is a ``propose_write`` proposal) against
the caller's own view of the ERP — their granted forms' metadata and the values seen in those
forms' rows, read as them through the SQL sandbox (brand, subsidiary, own customers) — and returns
the steps that answer it (``plans.plan_of``). It reads; it never fetches the answer itself, so the
reads that do are the ordinary, gated, audited tools and the replayable DSL holds those.

A user's catalog is kept for a minute (``CATALOG_TTL_S``) so a question costs the reader only."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from tether.pack import Policy, QueryFailed, SqlRejected, Tool, ToolContext, ToolError, guard, tool
from tether.packs.erp import messages, plans, reader, writes
from tether.packs.erp.client import ErpRefused
from tether.packs.erp.metadata import Catalog, FormMeta, Seen
from tether.packs.erp.query_data import QueryService
from tether.packs.erp.tools import Erp, login_guard, token

CATALOG_TTL_S = 60.0
SEEN_ROWS = 2000  # distinct identifying rows read per form
SEEN_PAGES = 20  # without SQL: pages of 100 rows read per form through the ERP


def seen_rows(query: QueryService, forms: list[FormMeta], policy: Policy) -> list[Seen]:
    """In a worker thread: each form's identifying values, as the policy lets the caller see them."""
    out: list[Seen] = []
    for form in forms:
        if form.view not in policy.tables:
            continue
        # the form's names and keys, then each id filter's names apart (赵强 is one salesperson,
        # not one per customer he serves)
        for columns in (form.vocabulary_columns(), *(list(pair) for pair in form.named_ids())):
            if columns:
                out += _seen(query, form, columns, policy)
    return out


def _seen(query: QueryService, form: FormMeta, columns: list[str], policy: Policy) -> list[Seen]:
    sql = f"SELECT DISTINCT {', '.join(columns)} FROM {form.view} LIMIT {SEEN_ROWS}"
    try:
        result = query.executor.run(guard(sql, dialect=query.executor.dialect, policy=policy))
    except (SqlRejected, QueryFailed):
        return []  # a view that does not take this read: its values stay unknown
    names = [str(c).lower() for c in result.columns]
    out = []
    for row in result.rows:
        values = {c: str(v) for c, v in zip(names, row, strict=False) if v not in (None, "")}
        if values:
            out.append(Seen(form.form_id, values))
    return out


@dataclass
class CatalogCache:
    erp: Erp
    ttl_s: float = CATALOG_TTL_S
    _kept: dict[tuple[str, str, frozenset[str]], tuple[float, Catalog]] = field(default_factory=dict)

    async def catalog(self, ctx: ToolContext) -> Catalog:
        key = (ctx.owner.tenant, ctx.owner.user_id, frozenset(ctx.grants))
        now = time.monotonic()
        kept = self._kept.get(key)
        if kept is not None and now - kept[0] < self.ttl_s:
            return kept[1]
        catalog = await self._load(ctx)
        self._kept = {k: v for k, v in self._kept.items() if now - v[0] < self.ttl_s}  # drop the stale
        self._kept[key] = (now, catalog)
        return catalog

    async def _load(self, ctx: ToolContext) -> Catalog:
        erp, credential = self.erp, token(ctx)
        every = await erp.client.forms(credential)
        cards = [c for c in every if str(c.get("formId")) in ctx.grants]
        # the forms the caller lacks, by their card's name and aliases only (never their config or
        # rows): a question naming one is told it is not granted, not that its words are unknown
        denied = [FormMeta.from_erp(c, {}) for c in every if c.get("formId") and str(c["formId"]) not in ctx.grants]
        configs = await asyncio.gather(*(erp.client.config(credential, str(c["formId"])) for c in cards))
        who = await erp.identity.identify(credential)
        own = who is not None and who.profile.get("jurisdiction") == "own"
        try:
            policy = erp.query.policy(ctx, own_rows=own)
        except ToolError:
            policy = None
        views = set(policy.tables) if policy else set()
        choices = await _line_choices(erp, credential, configs, {str(c["formId"]) for c in cards})
        read_rows: list[Seen] = []
        if not erp.queryable:  # no SQL on this ERP's database: the values as the ERP lists them to the user
            metas = [FormMeta.from_erp(c, g, _row_columns(g)) for c, g in zip(cards, configs, strict=True)]
            read_rows = await _seen_through_reads(erp, credential, metas)

        def build() -> Catalog:
            forms = []
            for card, config in zip(cards, configs, strict=True):
                view = str(config.get("view") or card.get("view") or "")
                columns = erp.query.columns(view) if view in views else frozenset()
                if not erp.queryable:  # what the ERP's rows carry: summaries.py computes over them
                    columns = _row_columns(config)
                forms.append(FormMeta.from_erp(card, config, columns))
            rows = read_rows if not erp.queryable else seen_rows(erp.query, forms, policy) if policy else []
            return Catalog(forms, rows, denied=denied, choices=choices)

        return await asyncio.to_thread(build)


def _row_columns(config: dict[str, Any]) -> frozenset[str]:
    return frozenset(str(f["column"]) for f in config.get("master") or [] if f.get("column"))


async def _seen_through_reads(erp: Erp, credential: str, forms: list[FormMeta]) -> list[Seen]:
    """Each form's identifying values from its first rows as the ERP lists them (``SEEN_PAGES``
    pages): where tether may not query the ERP's database, what a clerk names is learnt through
    the ERP's own reads, with the user's rights."""
    out: list[Seen] = []
    for form in forms:
        columns = [*form.vocabulary_columns(), *(c for pair in form.named_ids() for c in pair)]
        if not columns:
            continue
        for page in range(1, SEEN_PAGES + 1):
            try:
                answer = await erp.client.read(credential, form.form_id, {}, page, 100)
            except ErpRefused:
                break
            for row in answer["rows"]:
                values = {c: str(row[c]) for c in columns if row.get(c) not in (None, "")}
                if values:
                    out.append(Seen(form.form_id, values))
            if page * 100 >= int(answer["total"]):
                break
    return out


async def _line_choices(erp: Erp, credential: str, configs: list[dict[str, Any]], granted: set[str]) -> list[Seen]:
    """The records the writable forms' lines refer to where that form is not granted (the
    materials of a quotation), as the ERP lists them to the user: code, name and spec only."""
    wanted = {
        str(f["ref"])
        for config in configs
        if config.get("writable")
        for f in (config.get("detail") or {}).get("fields") or []
        if f.get("type") == "ref" and f.get("ref") and str(f["ref"]) not in granted
    }
    out: list[Seen] = []
    for form_id in sorted(wanted):
        try:
            rows = (await erp.client.read(credential, form_id, {}, 1, SEEN_ROWS))["rows"]
        except ErpRefused:
            continue  # not listed to this user: the lines go by code, propose_write resolves them
        for row in rows:
            values = {c: str(row[c]) for c in ("code", "name", "spec") if row.get(c) not in (None, "")}
            if values:
                out.append(Seen(form_id, values))
    return out


def build_read_question(erp: Erp) -> Tool:
    cache = CatalogCache(erp)

    @tool(read_only=True, audited=True)
    @login_guard
    async def read_question(ctx: ToolContext, question: str, choice: str = "") -> Any:
        """Read a question over your ERP forms from their own metadata: which of your forms, which
        filters (options, records, dates, comparisons), which shape (list, count, a field, a
        total, group-by, top-N). Returns the read steps that answer it and an answer template, or
        a question back, or what it did not understand. ``choice``: your answer to its question."""
        if not question.strip():
            raise ToolError("question must not be empty", code=messages.BAD_ARGUMENTS, params={"tool": "read_question"})
        catalog = await cache.catalog(ctx)
        prefer = choice.strip() or None
        outcome = writes.read_change(question[:500], catalog, prefer) or reader.read(
            question[:500], catalog, date.today(), prefer=prefer
        )
        return plans.plan_of(outcome, question[:500])

    read_question.in_dsl = False  # a replay runs the reads it chose, not the reading
    return read_question
