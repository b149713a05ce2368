"""ERP pack overhead: tether's governed tool path next to the same work done bare, in the same run.

Everything runs on the embedded default (SQLite) in a temporary directory. The demo ERP
(``ErpDemo``, seeded at scale 1.0) is mounted at ``/erp`` and served by uvicorn on a free
127.0.0.1 port *in this process's event loop* — as ``tether serve`` serves it in the embedded
default, where the pack calls its own server over HTTP. The ERP pack is built as
``tether.packs.erp.pack`` builds it (``open_erp``: its ``ErpClient`` over real HTTP, the read-only
executor on the ERP database, the question → SQL cache in tether's database), and tether's
``ToolPipeline`` has the production audit log (``SqlAuditLog`` on the session store's group
writer, as ``tether.wiring`` builds it: every ERP tool is audited, and a call's row is committed
in the transaction of its session's next commit — the step commit that records the call's
result — so it is not a durable commit of its own; the bench makes no session commits, so the
rows are committed by the store's flush of unclaimed writes, off the timed call). A
tether call is ``ToolPipeline.run`` of a ``ToolCall`` with a fresh ``ToolContext`` carrying a
real ERP token and the grants ``/me`` gave it (through ``ErpIdentityProvider``). Calls run in
rounds — each tether variant and its baseline once, the order rotating every round — after 20
warm-up rounds, and every round's answers are checked equal. Rows marked (info) have no target:
the same call behind a pipeline without the audit sink (the core's audit row out, the pack's own
cost left), and the cached question with the model call a live turn makes to ask for it.

1. ``read_form_data`` (wh01 on 4001, fin01 on 5001) vs the same ``POST
   /erp/getBusinessDataByFormcustomId`` (same body, same token) on a reused ``httpx.AsyncClient``,
   JSON decoded. Target p50 ratio ≤ 1.3.
2. ``query_data`` with SQL (sales01: the offline planner's 今年销售订单按客户汇总 aggregate, and a
   filtered select) vs the SQL as tether ran it (``guard``'s output: tenant predicate and LIMIT
   added) on a plain connection to the ERP database (``sqlite3``; with ``--erp-db postgres``, a
   psycopg connection in autocommit: one round trip). Target: ≤ 0.5 ms p50 over the bare SQL.
4. a planner decision: the offline planner's metadata reader (``read_question``: form, filters,
   entity resolution, from the user's catalog of granted forms and seen values, warm) through
   the pipeline, and the reader alone (``reader.read``), next to the ERP call its plan makes
   (the bare ``POST`` of that read). Target: the pipeline's p50 ≤ 20 ms.
3. a cached question — ``query_data(question)`` without SQL: cache read, guard, execute — vs the
   uncached path the cache saves: the model writes the SQL (``tether.models.openai_compat``
   against the local Chat Completions server of tests/models/chat_server.py, streaming a
   ``query_data`` tool call whose arguments arrive in ~4-character deltas, with no delay) and the
   pipeline runs it (guard, execute, cache write). Target p50 ratio ≤ 0.3.

Then an instrumented pass per path splits tether's time into its parts (medians per call), and
the header gives the disk's one-row durable commit time, the floor under every audit row and
cache write (shared disks vary by 10× from one hour to the next).

    .venv/bin/python bench/erp.py            # the tables (about a minute on 2 cores)
    .venv/bin/python bench/erp.py --quick    # 60 calls per measure (about 20 s)
    .venv/bin/python bench/erp.py --json     # the rows (and the parts) as JSON
    .venv/bin/python bench/erp.py --profile  # plus a cProfile of each tether path (this thread)
    .venv/bin/python bench/erp.py --erp-db postgres  # the demo ERP on a scratch PostgreSQL database
                                                     # (TETHER_BENCH_PG: the admin URL), dropped after
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
import uvicorn
from fastapi import FastAPI

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # for tests.models.chat_server, the local Chat Completions server
    sys.path.insert(0, str(ROOT))

from scratch_db import scratch_pg  # noqa: E402  # a sibling: the benches run as scripts from bench/

import tether.packs.erp.state as erp_state  # noqa: E402
import tether.sqlguard.verdicts as verdicts  # noqa: E402
from tests.models.chat_server import ChatServer, Reply, chunk, tool_call_delta, usage_chunk  # noqa: E402
from tether.core.messages import ModelRequest, ToolCall  # noqa: E402
from tether.core.pipeline import ToolPipeline  # noqa: E402
from tether.core.prompt import system_prompt  # noqa: E402
from tether.core.session import AgentSession, Identity  # noqa: E402
from tether.core.skills import SkillRegistry, load_skills  # noqa: E402
from tether.core.tools import ToolContext, ToolRegistry  # noqa: E402
from tether.erp_demo import ErpDemo, ErpSettings, facts  # noqa: E402
from tether.models.openai_compat import OpenAICompatModel, build_openai_model  # noqa: E402
from tether.pack import PackEnv  # noqa: E402
from tether.packs.erp.identity import ErpIdentityProvider  # noqa: E402
from tether.packs.erp.pack import SKILLS, open_erp  # noqa: E402
from tether.packs.erp.planner_rules import extract  # noqa: E402
from tether.packs.erp.prompt import RULES, domain_map  # noqa: E402
from tether.packs.erp.reader import read as read_question  # noqa: E402
from tether.packs.erp.readings import Reading  # noqa: E402
from tether.packs.erp.settings import ErpPackSettings  # noqa: E402
from tether.packs.erp.tools import Erp, build_tools  # noqa: E402
from tether.packs.erp.understanding import CatalogCache, build_read_question  # noqa: E402
from tether.settings import create_settings  # noqa: E402
from tether.store import SqlStore  # noqa: E402
from tether.store.audit import SqlAuditLog  # noqa: E402
from tether.store.migrate import upgrade  # noqa: E402

SUMMARY_QUESTION = "今年销售订单按客户汇总"  # the offline planner's rule writes its SQL
FILTERED_QUESTION = "今年已审核的大额销售订单"
FILTERED_SQL = (
    "SELECT bill_no, bill_date, customer_name, salesman_name, total_amount FROM viw_sales_order "
    "WHERE status = 'examined' AND total_amount >= 20000 ORDER BY bill_date DESC LIMIT 20"
)
# (user, form, filters, page_size), shaped like the offline planner's stock / receivables reads
READS: tuple[tuple[str, str, dict[str, Any], int], ...] = (
    ("wh01", "4001", {"warehouse_name": "成品"}, 20),
    ("fin01", "5001", {"min_overdue_days": 1}, 100),
)
ALLOWED = frozenset({"find_forms", "kg_search", "read_form_data", "lookup_record", "query_data", "read_question"})
DECISIONS = (  # (user, question): the reader's form choice, records, values, dates and comparisons
    ("wh01", "6205-2RS在哪些仓库"),  # 还有多少库存 is a sum through query_data since issue 37
    ("fin01", "哪些供应商的应付已经超期了？"),
    ("fin01", "超期超过60天的应收有哪些？"),
)
DECISION_TARGET_MS = 20.0
ARG_PIECE = 4  # characters per streamed tool-argument delta (about one token)
READ_PATH = "pipeline: admit + validate, form gate, whitelist, `ErpClient` POST, fit rows + labels, frame, audit row"
QUERY_PATH = (
    "pipeline: admit + validate, policy from grants, guard, read-only executor (worker thread), cache write, audit row"
)
DECISION_PATH = "pipeline: admit + validate, `read_question` (catalog kept per user: reader + plan), audit row"
CACHED_PATH = "`query_data(question)`, no SQL: cache read (+ hit count), guard, execute, audit row"
UNCACHED_PATH = (
    "model call writing the SQL (`openai_compat` ↔ local server, streamed, no delay) + `query_data` with it "
    "(guard, execute, cache write, audit row)"
)

Timed = Callable[[], Awaitable[Any]]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


@dataclass
class Measure:
    name: str
    tether_path: str
    baseline_path: str
    target: float | None
    tether: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    over_target_ms: float | None = None  # a target on p50 ms over the baseline instead of the ratio

    def row(self) -> dict[str, Any]:
        t50, b50 = statistics.median(self.tether), statistics.median(self.baseline)
        ratio = t50 / b50
        over = (t50 - b50) * 1000
        if self.over_target_ms is not None:
            verdict: bool | None = over <= self.over_target_ms
        else:
            verdict = None if self.target is None else ratio <= self.target
        return {
            "measure": self.name,
            "n": len(self.tether),
            "tether_p50_ms": round(t50 * 1000, 3),
            "tether_p95_ms": round(pct(self.tether, 0.95) * 1000, 3),
            "baseline_p50_ms": round(b50 * 1000, 3),
            "baseline_p95_ms": round(pct(self.baseline, 0.95) * 1000, 3),
            "ratio_p50": round(ratio, 3),
            "over_p50_ms": round(over, 3),
            "target": self.target,
            "over_target_ms": self.over_target_ms,
            "pass": verdict,
            "tether_path": self.tether_path,
            "baseline_path": self.baseline_path,
        }


async def interleaved(
    mines: list[tuple[Measure, Timed]], bare: Timed, n: int, warmup: int, check: Callable[[Any, Any], None]
) -> None:
    """Round robin: each tether variant and the baseline once per round, the order rotating every
    round, so load drifts hit all alike; the measures share the baseline's samples. After each
    round ``check(mine, bare)`` for every variant."""
    baseline: list[float] = []
    for m, _ in mines:
        m.baseline = baseline
    jobs = [(m.tether, fn) for m, fn in mines] + [(baseline, bare)]
    for i in range(warmup + n):
        k = i % len(jobs)
        got: dict[int, Any] = {}
        for samples, fn in jobs[k:] + jobs[:k]:
            t0 = time.perf_counter()
            got[id(samples)] = await fn()
            if i >= warmup:
                samples.append(time.perf_counter() - t0)
        for m, _ in mines:
            check(got[id(m.tether)], got[id(baseline)])


# ---- the demo ERP and tether's side ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def erp_server(demo: ErpDemo) -> AsyncIterator[str]:
    """The demo ERP under /erp (as the embedded default and ``tether erp serve`` mount it), served
    by uvicorn in this event loop; its ``def`` endpoints run in the threadpool. Yields the root URL."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/erp", demo.asgi)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 30
    while not server.started:
        if task.done() or time.monotonic() > deadline:
            raise SystemExit("the demo ERP server did not start")
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@dataclass
class Tether:
    erp: Erp
    pipeline: ToolPipeline
    provider: ErpIdentityProvider
    identities: dict[str, Identity] = field(default_factory=dict)
    calls: int = 0

    async def login(self, user: str) -> None:
        answer = await self.erp.client.login(user, facts.PASSWORD)
        identity = await self.provider.identify(str(answer["token"]))
        if identity is None or not identity.credential:
            raise SystemExit(f"/me refused {user}'s fresh token")
        self.identities[user] = identity

    def token(self, user: str) -> str:
        return self.identities[user].credential or ""

    async def run(self, user: str, call: ToolCall) -> Any:
        identity = self.identities[user]
        self.calls += 1
        ctx = ToolContext(identity.owner, "ses-bench", "turn-bench", call.id, {}, identity.grants, identity.credential)
        outcome = await self.pipeline.run(call, ALLOWED, ctx, lambda _type, _data: None)
        if outcome.kind != "value":
            raise SystemExit(f"{call.name} as {user} ended {outcome.kind}: {outcome.data}")
        return outcome.data

    async def tool(self, user: str, name: str, args: dict[str, Any]) -> Any:
        return await self.run(user, ToolCall(f"call_{self.calls + 1}", name, json.dumps(args, ensure_ascii=False)))


@contextlib.asynccontextmanager
async def tether_side(workdir: Path, root_url: str, erp_url: str) -> AsyncIterator[Tether]:
    tether_db = f"sqlite:///{workdir / 'tether.db'}"
    await asyncio.to_thread(upgrade, tether_db)
    settings = create_settings(database_url=tether_db, public_url=root_url, packs="")
    pack_settings = ErpPackSettings(base_url=f"{root_url}/erp", database_url=erp_url)
    erp = open_erp(PackEnv(settings, root_url), pack_settings)
    await asyncio.to_thread(erp_state.metadata.create_all, erp.query.state.engine)  # the cache and error tables
    sessions = SqlStore(tether_db)
    await sessions.open()
    audit = SqlAuditLog(tether_db, sessions)
    tools = [*build_tools(erp), build_read_question(erp)]
    pipeline = ToolPipeline(ToolRegistry(tools), default_timeout_s=settings.tool_timeout_s, audit=audit)
    try:
        yield Tether(erp, pipeline, ErpIdentityProvider(erp.client, cache_s=pack_settings.me_cache_s))
    finally:
        await erp.client.aclose()
        await erp.query.executor.aclose()
        erp.query.state.engine.dispose()
        await sessions.close()  # commits the audit rows still waiting for a step's commit
        audit.close()


@contextlib.contextmanager
def chat_server() -> Iterator[ChatServer]:
    """tests/models/chat_server.py's server. Its listening socket is made with ``socket.socket()``
    (proto 0), so asyncio does not set TCP_NODELAY on the connections it accepts and every answer
    stalls ~40 ms (Nagle + delayed ACK between its header and body writes); a real endpoint does
    not. TCP_NODELAY on the listening socket is inherited by accepted ones (Linux)."""
    chat = ChatServer()
    chat._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with chat:
        yield chat


# ---- the measures ------------------------------------------------------------------------------------


NO_AUDIT = "(info) the same, pipeline without the audit sink"


def unaudited(t: Tether) -> Tether:
    """The same pack, tokens and registry behind a pipeline with no audit sink (core's share out)."""
    registry = t.pipeline.registry
    return replace(t, pipeline=ToolPipeline(registry, default_timeout_s=t.pipeline.default_timeout_s))


async def bench_reads(t: Tether, root_url: str, n: int, warmup: int) -> list[Measure]:
    out = []
    async with httpx.AsyncClient(base_url=f"{root_url}/erp", timeout=15) as bare_http:
        for i, (user, form_id, filters, page_size) in enumerate(READS):
            args = {"form_id": form_id, "filters": filters, "page": 1, "page_size": page_size}
            body = {"sFormId": form_id, "pageNum": 1, "pageSize": page_size, **filters}  # as ErpClient.read sends it
            headers = {"Authorization": t.token(user)}

            async def bare(body: dict[str, Any] = body, headers: dict[str, str] = headers) -> Any:
                r = await bare_http.post("/getBusinessDataByFormcustomId", json=body, headers=headers)
                r.raise_for_status()
                return r.json()["dataset"]

            def check(got: Any, want: Any) -> None:
                if got["total"] != want["total"] or len(got["rows"]) != len(want["rows"]) or not want["rows"]:
                    raise SystemExit(f"read_form_data and the bare read disagree: {got['total']} vs {want['total']}")

            name = f"`read_form_data` {form_id} as {user} (page size {page_size})"
            sides = [(t, Measure(name, READ_PATH, "httpx POST, same body and token, JSON decoded", 1.3))]
            if i == 0:
                sides.append((unaudited(t), Measure(NO_AUDIT, READ_PATH.replace(", audit row", ""), "as above", None)))

            def reader(side: Tether, user: str = user, args: dict[str, Any] = args) -> Timed:
                return lambda: side.tool(user, "read_form_data", args)

            await interleaved([(m, reader(side)) for side, m in sides], bare, n, warmup, check)
            out += [m for _, m in sides]
    return out


async def bench_decisions(t: Tether, root_url: str, n: int, warmup: int) -> list[Measure]:
    """The planner's decision (``read_question``) next to the ERP read it decides on."""
    out = []
    async with httpx.AsyncClient(base_url=f"{root_url}/erp", timeout=15) as bare_http:
        for user, question in DECISIONS:
            plan = await t.tool(user, "read_question", {"question": question})  # warms the catalog
            step = plan["plan"][0]
            if step["tool"] != "read_form_data":
                raise SystemExit(f"the reader did not choose a form read for {question!r}: {plan}")
            args = step["args"]
            body = {"sFormId": args["form_id"], "pageNum": 1, "pageSize": args["page_size"], **args["filters"]}
            headers = {"Authorization": t.token(user)}
            catalog = await build_read_question_catalog(t, user)

            async def bare(
                body: dict[str, Any] = body, headers: dict[str, str] = headers, step: dict[str, Any] = step
            ) -> Any:
                r = await bare_http.post("/getBusinessDataByFormcustomId", json=body, headers=headers)
                r.raise_for_status()
                return step

            async def alone(question: str = question, catalog: Any = catalog, step: dict[str, Any] = step) -> Any:
                reading = read_question(question, catalog, date.today())
                if not isinstance(reading, Reading):
                    raise SystemExit(f"the reader did not read {question!r}: {reading}")
                return step

            def decider(user: str = user, question: str = question) -> Timed:
                async def decide() -> Any:
                    return (await t.tool(user, "read_question", {"question": question}))["plan"][0]

                return decide

            def check(got: Any, want: Any, question: str = question) -> None:
                if got != want:
                    raise SystemExit(f"the reader changed its mind about {question!r}: {got} vs {want}")

            name = f"planner decision: {question} ({user})"
            mine = Measure(name, DECISION_PATH, "the ERP read it chose: httpx POST, same body and token", None)
            reader_only = Measure(
                "(info) the reader alone, same question", "`reader.read` on the warm catalog", "as above", None
            )
            await interleaved([(mine, decider()), (reader_only, alone)], bare, n, warmup, check)
            out += [mine, reader_only]
    return out


async def build_read_question_catalog(t: Tether, user: str) -> Any:
    """The catalog ``read_question`` keeps for ``user`` (the tool's own cache, read the same way)."""
    identity = t.identities[user]
    ctx = ToolContext(identity.owner, "ses-bench", "turn-bench", "call", {}, identity.grants, identity.credential)
    return await CatalogCache(t.erp).catalog(ctx)


def summary_sql() -> str:
    plan = extract(SUMMARY_QUESTION, {})["erp"]["plan"]
    return str(plan[0]["args"]["sql"])


class BareSql:
    """The guarded SQL run bare on a plain connection, in the loop: ``sqlite3`` on the file, or
    psycopg in autocommit (one round trip, no transaction statements)."""

    def __init__(self, erp_url: str) -> None:
        url = sa.engine.make_url(erp_url)
        if url.get_backend_name() == "sqlite":
            self.conn: Any = sqlite3.connect(str(url.database))
            self.label = "a plain `sqlite3` connection"
        else:
            import psycopg

            self.conn = psycopg.connect(
                url.set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True
            )
            self.label = "a plain psycopg connection (autocommit)"

    def run(self, sql: str) -> tuple[list[str], list[Any]]:
        cursor = self.conn.cursor()
        cursor.execute(sql)
        rows = cursor.fetchall()
        return [str(d[0]) for d in cursor.description], rows

    def close(self) -> None:
        self.conn.close()


async def bench_queries(t: Tether, erp_url: str, n: int, warmup: int) -> list[Measure]:
    bare_sql = BareSql(erp_url)
    out = []
    try:
        for i, (label, question, sql) in enumerate(
            (
                ("aggregate (今年销售订单按客户汇总)", SUMMARY_QUESTION, summary_sql()),
                ("filtered select", FILTERED_QUESTION, FILTERED_SQL),
            )
        ):
            first = await t.tool("sales01", "query_data", {"question": question, "sql": sql})
            guarded = str(first["sql"])  # what tether ran

            async def bare(guarded: str = guarded) -> Any:
                return bare_sql.run(guarded)

            def check(got: Any, want: Any) -> None:
                if got["columns"] != want[0] or got["rowCount"] != len(want[1]) or got["cached"] or not want[1]:
                    raise SystemExit(f"query_data and the bare SQL disagree: {got['rowCount']} vs {len(want[1])} rows")

            baseline = f"guard's output SQL on {bare_sql.label}, in the loop"
            sides = [(t, Measure(f"`query_data` {label} as sales01", QUERY_PATH, baseline, None, over_target_ms=0.5))]
            if i == 0:
                sides.append((unaudited(t), Measure(NO_AUDIT, QUERY_PATH.replace(", audit row", ""), "as above", None)))

            def querier(side: Tether, question: str = question, sql: str = sql) -> Timed:
                return lambda: side.tool("sales01", "query_data", {"question": question, "sql": sql})

            await interleaved([(m, querier(side)) for side, m in sides], bare, n, warmup, check)
            out += [m for _, m in sides]
    finally:
        bare_sql.close()
    return out


def streamed_call(n: int, arguments: dict[str, Any]) -> Reply:
    """A ``query_data`` tool call streamed as an endpoint streams it: arguments in token-sized deltas."""
    text = json.dumps(arguments, ensure_ascii=False)
    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": None})]
    events.append(chunk(tool_call_delta(0, id=f"call_m{n}", name="query_data", arguments="")))
    events += [chunk(tool_call_delta(0, arguments=text[i : i + ARG_PIECE])) for i in range(0, len(text), ARG_PIECE)]
    events += [chunk({}, finish_reason="tool_calls"), usage_chunk(2000, len(text) // ARG_PIECE)]
    return Reply(events=events)


def model_request(t: Tether, user: str, question: str) -> ModelRequest:
    """The request of the turn that writes the SQL: the real system prompt (base rules, the ERP
    rules and domain map, the selected skill's playbook, the tools) and the ERP tools' schemas."""
    skills, _issues = load_skills([SKILLS])
    session = AgentSession.new(t.identities[user].owner, question, {})
    session.selected_skill_ids = ["erp-sales"]
    tools = [tool for tool in (t.pipeline.registry.get(name) for name in sorted(ALLOWED)) if tool is not None]
    prompt = system_prompt(session, SkillRegistry(skills), tools, [RULES, domain_map(t.erp.kg.domains())])
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": question}]
    return ModelRequest(messages, t.pipeline.registry.specs(ALLOWED))


@dataclass
class ModelSide:
    t: Tether
    chat: ChatServer
    model: OpenAICompatModel
    request: ModelRequest
    served: int = 0

    async def turn_step(self, arguments: dict[str, Any]) -> Any:
        """One model call answering with a streamed ``query_data`` call, then that call."""
        self.served += 1
        self.chat.push(streamed_call(self.served, arguments))
        reply = await self.model.chat(self.request)
        return await self.t.run("sales01", reply.tool_calls[0])


async def bench_cache(t: Tether, n: int, warmup: int) -> list[Measure]:
    sql = summary_sql()
    with chat_server() as chat:
        model = build_openai_model("openai", base_url=chat.base_url, model="bench-model", api_key="sk-bench")
        side = ModelSide(t, chat, model, model_request(t, "sales01", SUMMARY_QUESTION))

        async def uncached() -> Any:
            return await side.turn_step({"question": SUMMARY_QUESTION, "sql": sql})

        async def cached() -> Any:
            return await t.tool("sales01", "query_data", {"question": SUMMARY_QUESTION})

        async def asked_for() -> Any:
            return await side.turn_step({"question": SUMMARY_QUESTION})

        def check(got: Any, want: Any) -> None:
            if not got["cached"] or want["cached"] or got["rows"] != want["rows"]:
                raise SystemExit("the cached and the uncached answers differ")

        m = Measure("cached question vs the uncached path", CACHED_PATH, UNCACHED_PATH, 0.3)
        live = Measure(
            "(info) cached question incl. the model call asking for it",
            "model call answering `query_data(question)` (streamed) + the cached path",
            "the uncached path, as above",
            None,
        )
        await interleaved([(m, cached), (live, asked_for)], uncached, n, warmup, check)
        await model.aclose()
        chat.assert_consumed()
    return [m, live]


# ---- where the time goes ----------------------------------------------------------------------------


class Spans:
    """Wraps functions to time them per call of a path (thread-safe enough: list appends); restores them."""

    def __init__(self) -> None:
        self.current: dict[str, list[float]] = {}
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        fn = getattr(owner, attr)
        if asyncio.iscoroutinefunction(fn):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    self.current.setdefault(label, []).append(time.perf_counter() - t0)

            setattr(owner, attr, timed_async)
        else:

            def timed(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.current.setdefault(label, []).append(time.perf_counter() - t0)

            setattr(owner, attr, timed)
        self._undo.append((owner, attr, fn))

    def restore(self) -> None:
        for owner, attr, fn in reversed(self._undo):
            setattr(owner, attr, fn)


PART_LABELS = ("ERP HTTP call", "model call", "cache read", "guard", "execute", "cache write", "audit row")


async def split(t: Tether, side: ModelSide, job: Timed, n: int) -> dict[str, float]:
    """Median ms per call of the whole job, of each part it went through, and of the rest."""
    for _ in range(5):
        await job()
    spans = Spans()
    spans.wrap(t.erp.client, "_call", "ERP HTTP call")
    spans.wrap(side.model, "chat", "model call")
    spans.wrap(t.erp.query.state, "cached_sql", "cache read")
    spans.wrap(verdicts, "guard", "guard")  # sqlglot's work, when the verdict is not cached
    spans.wrap(t.erp.query.executor, "run", "execute")
    spans.wrap(t.erp.query.executor, "run_briefly", "execute")
    spans.wrap(t.erp.query.executor, "run_async", "execute")
    spans.wrap(t.erp.query.state, "remember", "cache write")
    if t.pipeline.audit is not None:
        spans.wrap(t.pipeline.audit, "record", "audit row")
    calls: list[dict[str, float]] = []
    try:
        for _ in range(n):
            spans.current = {}
            t0 = time.perf_counter()
            await job()
            total = time.perf_counter() - t0
            call = {label: sum(times) for label, times in spans.current.items()}
            call["rest"] = total - sum(call.values())
            call["total"] = total
            calls.append(call)
    finally:
        spans.restore()
    labels = [k for k in (*PART_LABELS, "rest", "total") if any(k in c for c in calls)]
    return {k: round(statistics.median(c.get(k, 0.0) for c in calls) * 1000, 3) for k in labels}


async def parts(t: Tether, n: int) -> list[dict[str, Any]]:
    """Tether's time per call split into its parts, per path (medians over ``n`` instrumented calls)."""
    sql = summary_sql()
    user, form_id, filters, page_size = READS[0]
    read_args = {"form_id": form_id, "filters": filters, "page_size": page_size}
    with chat_server() as chat:
        model = build_openai_model("openai", base_url=chat.base_url, model="bench-model", api_key="sk-bench")
        side = ModelSide(t, chat, model, model_request(t, "sales01", SUMMARY_QUESTION))
        paths: list[tuple[str, Timed]] = [
            (f"`read_form_data` {form_id}", lambda: t.tool(user, "read_form_data", read_args)),
            (
                "`query_data` aggregate, with SQL",
                lambda: t.tool("sales01", "query_data", {"question": SUMMARY_QUESTION, "sql": sql}),
            ),
            ("`query_data` cached", lambda: t.tool("sales01", "query_data", {"question": SUMMARY_QUESTION})),
            (
                "uncached path (model + `query_data`)",
                lambda: side.turn_step({"question": SUMMARY_QUESTION, "sql": sql}),
            ),
        ]
        out = [{"path": name, "calls": n, **await split(t, side, job, n)} for name, job in paths]
        await model.aclose()
    return out


def parts_table(rows: list[dict[str, Any]]) -> str:
    head = "| tether path (median ms per call) | total | " + " | ".join(PART_LABELS) + " | rest |"
    lines = [head, "|---|" + "---:|" * (len(PART_LABELS) + 2)]
    for r in rows:
        cells = [f"{r[k]:.2f}" if k in r else "–" for k in (*PART_LABELS, "rest")]
        lines.append(f"| {r['path']} | {r['total']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def profile_paths(t: Tether, n: int) -> str:
    """cProfile of each tether path, this thread only (worker threads show as waits)."""
    out = io.StringIO()
    user, form_id, filters, _page_size = READS[0]
    jobs: list[tuple[str, Timed]] = [
        (f"read_form_data {form_id}", lambda: t.tool(user, "read_form_data", {"form_id": form_id, "filters": filters})),
        (
            "query_data with SQL",
            lambda: t.tool("sales01", "query_data", {"question": SUMMARY_QUESTION, "sql": summary_sql()}),
        ),
        ("query_data cached", lambda: t.tool("sales01", "query_data", {"question": SUMMARY_QUESTION})),
    ]
    for name, job in jobs:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(n):
            await job()
        profiler.disable()
        print(f"\n## {name}: {n} calls, top 20 by own time", file=out)
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
    return out.getvalue()


def commit_floor(workdir: Path) -> float:
    """Median seconds of a one-row SQLite commit (WAL, synchronous=FULL, as tether's database runs)
    on this disk now: the floor under every audit row and cache write."""
    conn = sqlite3.connect(workdir / "floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    times = []
    for i in range(200):
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?, ?)", (i, "x" * 300))
        conn.execute("COMMIT")
        times.append(time.perf_counter() - t0)
    conn.close()
    return statistics.median(times)


# ---- the run ---------------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict[str, Any]:
    n, warmup = (60, 10) if args.quick else (args.calls, 20)
    workdir = Path(tempfile.mkdtemp(prefix="tether-bench-erp-"))
    info: dict[str, Any] = {"calls": n}
    try:
        info["commit_floor_ms"] = round(commit_floor(workdir) * 1000, 3)
        with contextlib.ExitStack() as stack:
            if args.erp_db == "postgres":
                erp_url = stack.enter_context(scratch_pg())
                info["erp_db"] = "PostgreSQL (scratch database)"
            else:
                erp_url = f"sqlite:///{workdir / 'erp.db'}"
                info["erp_db"] = "SQLite (temp dir)"
            measures = await measure_all(args, info, workdir, erp_url, n, warmup)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    info["rows"] = [m.row() for m in measures]
    return info


async def measure_all(
    args: argparse.Namespace, info: dict[str, Any], workdir: Path, erp_url: str, n: int, warmup: int
) -> list[Measure]:
    demo = ErpDemo(ErpSettings(database_url=erp_url, seed_scale=1.0))
    try:
        t0 = time.perf_counter()
        seeded = await asyncio.to_thread(demo.prepare)
        info["seed_rows"], info["seed_s"] = sum(seeded.values()), time.perf_counter() - t0
        async with erp_server(demo) as root_url, tether_side(workdir, root_url, erp_url) as t:
            for user in ("wh01", "fin01", "sales01"):
                await t.login(user)
            measures = await bench_reads(t, root_url, n, warmup)
            measures += await bench_queries(t, erp_url, n, warmup)
            measures += await bench_cache(t, n, warmup)
            measures += await bench_decisions(t, root_url, n, warmup)
            info["parts"] = await parts(t, max(30, n // 3))
            if args.profile:
                info["profile"] = await profile_paths(t, n)
    finally:
        demo.close()
    return measures


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| measure | tether p50 / p95 ms | baseline p50 / p95 ms | ratio (p50) | over baseline (p50 ms) | target | |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        verdict = "info" if r["pass"] is None else ("pass" if r["pass"] else "**MISS**")
        if r["over_target_ms"] is not None:
            target = f"≤ +{r['over_target_ms']:g} ms"
        else:
            target = "–" if r["target"] is None else f"≤ {r['target']:g}×"
        lines.append(
            f"| {r['measure']} | {ms(r['tether_p50_ms'] / 1000)} / {ms(r['tether_p95_ms'] / 1000)} "
            f"| {ms(r['baseline_p50_ms'] / 1000)} / {ms(r['baseline_p95_ms'] / 1000)} "
            f"| {r['ratio_p50']:.2f}× | {r['over_p50_ms']:+.2f} | {target} | {verdict} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=200, help="measured calls per side and measure (default 200)")
    p.add_argument("--quick", action="store_true", help="60 calls per side and measure")
    p.add_argument("--json", action="store_true", help="print the rows and the parts as JSON")
    p.add_argument("--profile", action="store_true", help="also print a cProfile of each tether path")
    p.add_argument(
        "--erp-db",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the demo ERP's database: a SQLite file (default) or a scratch PostgreSQL database",
    )
    args = p.parse_args()
    if args.calls < 1:
        p.error("--calls must be at least 1")
    t0 = time.perf_counter()
    info = asyncio.run(run(args))
    if args.json:
        keys = ("commit_floor_ms", "rows", "parts")
        print(json.dumps({k: info[k] for k in keys}, indent=1, ensure_ascii=False))
        return
    print(
        f"demo ERP seeded with {info['seed_rows']:,} rows in {info['seed_s']:.1f} s ({info['erp_db']}); "
        f"{sys.platform}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}; "
        f"{info['calls']} calls per side and measure; a one-row durable SQLite commit (WAL, synchronous=FULL) "
        f"on this disk before the run: p50 {info['commit_floor_ms']:.2f} ms\n"
    )
    print(table(info["rows"]))
    print()
    for r in info["rows"]:
        print(f"- {r['measure']}: tether = {r['tether_path']}; baseline = {r['baseline_path']}.")
    decisions = [r for r in info["rows"] if r["measure"].startswith("planner decision")]
    for r in decisions:
        verdict = "pass" if r["tether_p50_ms"] <= DECISION_TARGET_MS else "MISS"
        print(f"- {r['measure']}: p50 {r['tether_p50_ms']:.2f} ms, target ≤ {DECISION_TARGET_MS:g} ms: {verdict}")
    print(f"\nWhere tether's time goes ({info['parts'][0]['calls']} instrumented calls per path):\n")
    print(parts_table(info["parts"]))
    print(f"\ntotal bench time {time.perf_counter() - t0:.1f} s")
    if "profile" in info:
        print(info["profile"])


if __name__ == "__main__":
    main()
