"""Workload W1 (defined in docs/benchmarks.md): the per-step overhead of a durable agent runtime.

Runs W1 on tether's core (durable SQLite through ``SqlStore``, and ``MemoryStore`` without
persistence), sequentially and 50-concurrent, and, when the optional ``bench`` dependency group is
installed (``uv sync --group bench``), LangGraph (SqliteSaver, durability "sync") and pydantic-ai
(history upserted per step) on the same workload in the same run. Every row runs in a fresh child
process (its own peak RSS, its own fresh SQLite file in WAL mode with ``synchronous=FULL``).

    .venv/bin/python bench/w1.py                  # the table, plus tether's ratio to each peer
    .venv/bin/python bench/w1.py --json           # the same rows as a JSON list
    .venv/bin/python bench/w1.py --sessions 50 --frameworks tether
    .venv/bin/python bench/w1.py --frameworks tether --modes seq --persist sqlite --breakdown

A step is the time between two model calls (docs/benchmarks.md, "Steps"), marked inside each framework's model;
the transcript counted is the user message and everything after it (tether keeps its system
prompt at index 0; it is not counted): 18 messages, checked for every session.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import itertools
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

MESSAGE = "[s{}] Please look up items 1 to 8, then summarise."
FINAL = "Done: looked up items 1-8."
DESCRIPTION = "Look up record number i."
TOOL_ROUNDS = 8
STEPS = TOOL_ROUNDS + 1  # steps per session
TRANSCRIPT = 2 + 2 * TOOL_ROUNDS  # user + (assistant call, tool result) x 8 + final answer
WARMUPS = 5
CONCURRENCY = 50
FRAMEWORKS = ("tether", "langgraph", "pydantic-ai")
PEER_MODULES = {"langgraph": ("langgraph", "langgraph.checkpoint.sqlite"), "pydantic-ai": ("pydantic_ai",)}
KEYS = (
    "framework", "mode", "persist", "p50_us", "p95_us", "sessions_per_s", "cpu_us_per_step",
    "bytes_per_session", "peak_rss_mb",
)  # fmt: skip
TARGETS = "seq sqlite p50 <= 1000 us, CPU <= 600 us/step; conc50 sqlite >= 150 sessions/s; <= 8 KB/session"

Marks = dict[str, list[float]]  # user message -> [t0, t1 .. t8, t9]
RunOne = Callable[[str], Awaitable[int]]  # runs one session, returns its transcript length


def lookup_result(i: int) -> dict[str, Any]:
    """W1's tool result: 200 bytes as compact JSON."""
    return {
        "i": i,
        "id": f"item-000{i}",
        "status": "ok",
        "tags": ["alpha", "beta", "gamma"],
        "score": 100 + i,
        "text": "lorem ipsum dolor sit amet " * 4,
    }


def mark(marks: Marks, key: str, round_: int) -> None:
    """Called by a model at entry: rounds 2..9 are the step boundaries t1..t8."""
    if round_ > 1:
        marks[key].append(time.perf_counter())


def sqlite_pragmas(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")


# ---- tether ---------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def tether_runner(persist: str, path: Path, marks: Marks) -> AsyncIterator[RunOne]:
    from tether.core.messages import ModelReply, ModelRequest, ToolCall
    from tether.core.session import Owner, Status
    from tether.core.skills import Skill, SkillRegistry
    from tether.core.tools import tool
    from tether.factory import build_runtime
    from tether.store import MemoryStore, SqlStore

    class W1Model:
        """Stateless: round = 1 + the number of tool messages in the request."""

        name = "w1"

        async def chat(self, request: ModelRequest) -> ModelReply:
            messages = request.messages
            round_ = 1 + sum(1 for m in messages if m["role"] == "tool")
            mark(marks, messages[1]["content"], round_)
            if round_ <= TOOL_ROUNDS:
                return ModelReply(tool_calls=[ToolCall(f"call_{round_}", "lookup", json.dumps({"i": round_}))])
            return ModelReply(content=FINAL)

    @tool(description=DESCRIPTION, read_only=True)
    async def lookup(i: int) -> dict[str, Any]:
        return lookup_result(i)

    store = SqlStore(f"sqlite:///{path}") if persist == "sqlite" else MemoryStore()
    await store.open()
    skill = Skill("records", "Look up records by number.", ("lookup",), "Look up each record.", ("look up",))
    skills = SkillRegistry([skill])
    runtime = build_runtime(store, store, W1Model(), [lookup], skills, callback_url="http://127.0.0.1/callback")
    owner = Owner("bench", "bench")
    last: list[str] = []

    async def run_one(message: str) -> int:
        s = await runtime.start_session(owner, message, {})
        if s.status is not Status.SUCCEEDED or s.transcript[0]["role"] != "system":
            raise AssertionError(f"tether session ended {s.status}: {s.last_error}")
        last[:] = [s.session_id]
        return len(s.transcript) - 1  # the system prompt at index 0 is not counted

    try:
        yield run_one
        stored = await store.load(last[0])  # what the store holds, not the in-memory copy
        if len(stored.transcript) - 1 != TRANSCRIPT or stored.status is not Status.SUCCEEDED:
            raise AssertionError(f"the stored transcript has {len(stored.transcript) - 1} messages")
        replayed = [e.seq for e in await store.events_after(last[0], 0, 10_000)]  # what SSE replays
        if not replayed or replayed != list(range(1, stored.last_seq + 1)):
            raise AssertionError(f"the stored events are not 1..{stored.last_seq}: {replayed}")
    finally:
        await store.close()


# ---- LangGraph ------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def langgraph_runner(persist: str, mode: str, path: Path, marks: Marks) -> AsyncIterator[RunOne]:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import StructuredTool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    def model(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        round_ = 1 + sum(1 for m in messages if isinstance(m, ToolMessage))
        mark(marks, str(messages[0].content), round_)
        if round_ <= TOOL_ROUNDS:
            call = {"name": "lookup", "args": {"i": round_}, "id": f"call_{round_}"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content=FINAL)]}

    async def amodel(state: MessagesState) -> dict[str, Any]:
        return model(state)

    def lookup_sync(i: int) -> dict[str, Any]:
        return lookup_result(i)

    async def lookup(i: int) -> dict[str, Any]:
        return lookup_result(i)

    # the async tool; the sync twin only because the sequential run uses the sync SqliteSaver
    tool = StructuredTool.from_function(func=lookup_sync, coroutine=lookup, name="lookup", description=DESCRIPTION)
    builder = StateGraph(MessagesState)
    builder.add_node("model", model if mode == "seq" else amodel)
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")

    async with contextlib.AsyncExitStack() as stack:
        saver: Any = None
        if persist == "sqlite" and mode == "seq":
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite3.connect(path, check_same_thread=False)
            sqlite_pragmas(conn)
            stack.callback(conn.close)
            saver = SqliteSaver(conn)
        elif persist == "sqlite":
            import aiosqlite
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            aconn = await stack.enter_async_context(aiosqlite.connect(path))
            await aconn.execute("PRAGMA journal_mode = WAL")
            await aconn.execute("PRAGMA synchronous = FULL")
            saver = AsyncSqliteSaver(aconn)
        graph = builder.compile(checkpointer=saver)

        async def run_one(message: str) -> int:
            config = {"configurable": {"thread_id": message}}
            request = {"messages": [{"role": "user", "content": message}]}
            durability = "sync" if saver is not None else None  # LangGraph 1.2 fails on "sync" without one
            if mode == "seq":
                out = graph.invoke(request, config, durability=durability)
            else:
                out = await graph.ainvoke(request, config, durability=durability)
            if out["messages"][-1].content != FINAL:
                raise AssertionError("LangGraph run did not end with the final answer")
            return len(out["messages"])

        yield run_one


# ---- pydantic-ai ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def pydantic_ai_runner(persist: str, path: Path, marks: Marks) -> AsyncIterator[RunOne]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests = [m for m in messages if isinstance(m, ModelRequest)]
        round_ = 1 + sum(1 for m in requests for p in m.parts if isinstance(p, ToolReturnPart))
        first = next(p for p in requests[0].parts if isinstance(p, UserPromptPart))
        mark(marks, str(first.content), round_)
        if round_ <= TOOL_ROUNDS:
            return ModelResponse(parts=[ToolCallPart("lookup", {"i": round_}, tool_call_id=f"call_{round_}")])
        return ModelResponse(parts=[TextPart(FINAL)])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain(description=DESCRIPTION)
    async def lookup(i: int) -> dict[str, Any]:
        return lookup_result(i)

    conn: sqlite3.Connection | None = None
    if persist == "sqlite":
        conn = sqlite3.connect(path)
        sqlite_pragmas(conn)
        conn.execute("CREATE TABLE history (session_id TEXT PRIMARY KEY, messages BLOB NOT NULL)")
        conn.commit()
    upsert = "INSERT INTO history VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages"

    def save(key: str, messages: list[ModelMessage]) -> None:
        if conn is not None:
            conn.execute(upsert, (key, ModelMessagesTypeAdapter.dump_json(messages)))
            conn.commit()

    async def run_one(message: str) -> int:
        async with agent.iter(message) as run:
            async for node in run:
                if Agent.is_model_request_node(node):  # commit the step before the next model call
                    done = run.all_messages()  # in 2.68 the node's request (the tool results) is not in it yet
                    save(message, done if any(m is node.request for m in done) else [*done, node.request])
            messages = run.all_messages()
            save(message, messages)
            if run.result is None or run.result.output != FINAL:
                raise AssertionError("pydantic-ai run did not end with the final answer")
        return len(messages)

    try:
        yield run_one
    finally:
        if conn is not None:
            conn.close()


# ---- one row ----------------------------------------------------------------------------------------


async def drive(run_one: RunOne, ids: range, concurrent: bool, marks: Marks) -> None:
    sem = asyncio.Semaphore(CONCURRENCY if concurrent else 1)

    async def one(i: int) -> None:
        message = MESSAGE.format(i)
        async with sem:
            marks[message] = [time.perf_counter()]
            n = await run_one(message)
            marks[message].append(time.perf_counter())
        if n != TRANSCRIPT or len(marks[message]) != STEPS + 1:
            raise AssertionError(f"{message}: {n} messages, {len(marks[message]) - 1} steps")

    if concurrent:
        await asyncio.gather(*(one(i) for i in ids))
    else:
        for i in ids:
            await one(i)


def runner(framework: str, persist: str, mode: str, path: Path, marks: Marks) -> Any:
    if framework == "tether":
        return tether_runner(persist, path, marks)
    if framework == "langgraph":
        return langgraph_runner(persist, mode, path, marks)
    return pydantic_ai_runner(persist, path, marks)


def table_bytes(path: Path, sessions: int) -> dict[str, int]:
    """On-disk bytes per session of each table and index (SQLite's dbstat: pages, slack included)."""
    if not path.exists():
        return {}
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except sqlite3.OperationalError:  # built without the dbstat table
        return {}
    finally:
        conn.close()
    return {name: round(size / sessions) for name, size in rows}


def plain_bodies() -> None:
    """Ablation: tether stores its bodies as plain UTF-8 JSON (what compressing them saves)."""
    from tether.store import compact

    compact.pack = lambda text: text.encode()


async def measure(framework: str, mode: str, persist: str, sessions: int) -> dict[str, Any]:
    marks: Marks = {}
    with tempfile.TemporaryDirectory(prefix="w1-") as tmp:
        path = Path(tmp) / "w1.sqlite"
        async with runner(framework, persist, mode, path, marks) as run_one:
            await drive(run_one, range(-WARMUPS, 0), mode == "conc50", marks)
            cpu, wall = time.process_time(), time.perf_counter()
            await drive(run_one, range(sessions), mode == "conc50", marks)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        on_disk = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
        tables = table_bytes(path, sessions)
    timelines = [marks[MESSAGE.format(i)] for i in range(sessions)]
    steps = sorted((b - a) * 1e6 for t in timelines for a, b in itertools.pairwise(t))
    return {
        "framework": framework,
        "mode": mode,
        "persist": persist,
        "p50_us": round(statistics.median(steps)),
        "p95_us": round(steps[min(len(steps) - 1, int(0.95 * len(steps)))]),
        "sessions_per_s": round(sessions / wall, 1),
        "cpu_us_per_step": round(cpu / len(steps) * 1e6),
        "bytes_per_session": round(on_disk / sessions),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "table_bytes_per_session": tables,
    }


# ---- the whole run --------------------------------------------------------------------------------


def commit_floor() -> float:
    """The median µs of a one-row SQLite commit (WAL, synchronous=FULL) on this disk, right now:
    the floor of a durable step, printed with the table because shared disks vary a lot."""
    with tempfile.TemporaryDirectory(prefix="w1-floor-") as tmp:
        conn = sqlite3.connect(Path(tmp) / "floor.sqlite", isolation_level=None)
        sqlite_pragmas(conn)
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
        times = []
        for i in range(200):
            t = time.perf_counter()
            conn.execute("BEGIN")
            conn.execute("INSERT INTO t VALUES (?, ?)", (i, "x" * 300))
            conn.execute("COMMIT")
            times.append((time.perf_counter() - t) * 1e6)
        conn.close()
    return statistics.median(times)


def available(framework: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in PEER_MODULES.get(framework, ()))


def run_row(framework: str, mode: str, persist: str, sessions: int, plain: bool = False) -> dict[str, Any]:
    """One row in a fresh child process, so peak RSS and interpreter state are its own."""
    cmd = [sys.executable, __file__, "--row", f"{framework},{mode},{persist}", "--sessions", str(sessions)]
    cmd += ["--plain-bodies"] if plain else []
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
    if done.returncode != 0:
        raise SystemExit(f"{framework} {mode} {persist} failed:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(rows[0])
    for key in KEYS[3:]:
        out[key] = statistics.median(r[key] for r in rows)
    return out


def breakdown(rows: list[dict[str, Any]]) -> list[str]:
    """Where each SQLite row's bytes are, per session, largest first (tables and indexes above 1%)."""
    lines = []
    for r in rows:
        tables = r.get("table_bytes_per_session") or {}
        if tables:
            total = sum(tables.values())
            parts = ", ".join(f"{name} {size:,}" for name, size in tables.items() if size * 100 >= total)
            lines.append(f"{r['framework']} {r['mode']} {r['persist']}: {parts}")
    return lines


def table(rows: list[dict[str, Any]]) -> str:
    head = ("framework", "mode", "persist", "p50 µs", "p95 µs", "sessions/s", "CPU µs/step", "bytes/session", "RSS MB")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["framework"], r["mode"], r["persist"]]
        cells += [f"{r['p50_us']:,.0f}", f"{r['p95_us']:,.0f}", f"{r['sessions_per_s']:,.1f}"]
        cells += [f"{r['cpu_us_per_step']:,.0f}", f"{r['bytes_per_session']:,.0f}", f"{r['peak_rss_mb']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratios(rows: list[dict[str, Any]]) -> list[str]:
    mine = {(r["mode"], r["persist"]): r for r in rows if r["framework"] == "tether"}
    out = []
    for r in rows:
        t = mine.get((r["mode"], r["persist"]))
        if r["framework"] == "tether" or t is None:
            continue
        disk = r["bytes_per_session"] / t["bytes_per_session"] if t["bytes_per_session"] else None
        out.append(
            f"{r['framework']} / tether ({r['mode']}, {r['persist']}): p50 {r['p50_us'] / t['p50_us']:.1f}x, "
            f"CPU/step {r['cpu_us_per_step'] / t['cpu_us_per_step']:.1f}x"
            + (f", bytes/session {disk:.1f}x" if disk else "")
            + f"; tether's sessions/s {t['sessions_per_s'] / r['sessions_per_s']:.1f}x theirs"
        )
    return out


def targets(rows: list[dict[str, Any]]) -> list[str]:
    mine = {(r["mode"], r["persist"]): r for r in rows if r["framework"] == "tether"}
    seq, conc = mine.get(("seq", "sqlite")), mine.get(("conc50", "sqlite"))
    checks = []
    if seq:
        checks += [
            ("seq sqlite p50 <= 1,000 µs", seq["p50_us"] <= 1000, seq["p50_us"]),
            ("seq sqlite CPU <= 600 µs/step", seq["cpu_us_per_step"] <= 600, seq["cpu_us_per_step"]),
            ("<= 8 KB on disk per session", seq["bytes_per_session"] <= 8192, seq["bytes_per_session"]),
        ]
    if conc:
        checks.append(("conc50 sqlite >= 150 sessions/s", conc["sessions_per_s"] >= 150, conc["sessions_per_s"]))
    return [f"{'PASS' if ok else 'MISS'}  {name}: {value:,}" for name, ok, value in checks]


def main() -> None:
    p = argparse.ArgumentParser(description="Workload W1 on tether (and peers, if installed).")
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    p.add_argument("--sessions", type=int, default=200, help="measured sessions per row (default 200)")
    p.add_argument("--repeat", type=int, default=1, help="runs per row; each metric is the median")
    p.add_argument(
        "--frameworks", default=",".join(FRAMEWORKS), help="comma-separated subset of " + ", ".join(FRAMEWORKS)
    )
    p.add_argument("--modes", default="seq,conc50")
    p.add_argument("--persist", default="sqlite,none")
    p.add_argument("--breakdown", action="store_true", help="print each SQLite row's bytes per table and index")
    p.add_argument(
        "--plain-bodies", action="store_true", help="ablation: tether stores bodies uncompressed (plain JSON)"
    )
    p.add_argument("--row", help=argparse.SUPPRESS)  # internal: framework,mode,persist in this process
    args = p.parse_args()
    if args.row:
        framework, mode, persist = args.row.split(",")
        if args.plain_bodies:
            plain_bodies()
        print(json.dumps(asyncio.run(measure(framework, mode, persist, args.sessions))))
        return
    notes = sys.stderr if args.json else sys.stdout
    frameworks = []
    for f in args.frameworks.split(","):
        if available(f):
            frameworks.append(f)
        else:
            print(f"note: {f} skipped: not installed (uv sync --group bench)", file=notes)
    floor = commit_floor()
    rows = []
    for mode in args.modes.split(","):
        for persist in args.persist.split(","):
            for f in frameworks:
                runs = [run_row(f, mode, persist, args.sessions, args.plain_bodies) for _ in range(args.repeat)]
                rows.append(median_row(runs))
                print(f"  ran {f} {mode} {persist}", file=sys.stderr)
    floor_note = f"one-row SQLite commit (WAL, synchronous=FULL) on this disk before the run: p50 {floor:,.0f} µs"
    if args.json:
        print(floor_note, file=sys.stderr)
        print(json.dumps(rows, indent=1))
        return
    print(f"W1: {args.sessions} sessions x {STEPS} steps per row, {args.repeat} run(s) per row (median)")
    print(floor_note + "\n")
    print(table(rows))
    for line in ratios(rows):
        print(line)
    print(f"\ntether targets ({TARGETS}):")
    for line in targets(rows):
        print(line)
    if args.breakdown:
        print("\nbytes per session by table and index (SQLite dbstat):")
        for line in breakdown(rows):
            print(line)


if __name__ == "__main__":
    main()
