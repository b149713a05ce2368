"""Workload W2 (defined in docs/writes.md): a human-approved write, and whether it runs exactly once.

tether's side of W2: the write tool proposes (an op in the op queue, status draft, the session
WAITING_CONFIRMATION); *approve* is ``OpService.confirm(op_id)`` — the same call as
``POST /api/ops/{opId}/confirm`` — in a fresh call that loads everything from the state DB. The op
is an auto op: the executor runs W2's tool body in the ERP's SQLite file, then the outcome resumes
the session and the model answers ``Done.``.

The protocol measured (W2.md): tether hands the ERP the op id as an idempotency key, and this
ERP records it in the same transaction as the UPDATE (table ``applied``), as the demo ERP's
execStaging does. The tool body is otherwise W2's. The transcript counted excludes tether's system
prompt at index 0 (user, tool call, tool result, answer = 4).

    .venv/bin/python bench/w2.py                 # 3 alternated timing runs (medians: the verdict) + the probes
    .venv/bin/python bench/w2.py --repeat 1 --no-probes   # one timing run (a quick look; noisier)
    .venv/bin/python bench/w2.py --json          # the rows as a JSON list
    .venv/bin/python bench/w2.py --sessions 50 --probe-sessions 10 --no-peers
    .venv/bin/python bench/w2.py --sessions 10 --no-peers --no-probes   # a quick look, approval row included

The approval row (issue 26, ``approval_timing``; ``--no-approval`` leaves it out): the same
workload under an approval policy that holds every op — propose, the requester's confirm (held:
``awaiting_approval``), a manager's approve (``ApprovalService.approve``, as the HTTP route), the
execution and the answer. Beside W2's figures it gives the approve phase's p50/p95, CPU per
session and ``commits_added``: the store writer's transactions per session (each one commit, one
fsync) minus plain W2's. Targets: ≤ 1 commit and ≤ 1 ms p50 added.

The peers (``bench/w2_peers.py``, installed by ``uv sync --group bench``) run the same timing
workload in the same run, each in a process of its own, so that tether's figures can be read as
shares of theirs: this machine's disk and CPU vary from one hour to the next, and W2.md's
reference figures come from another machine. The peers W2.md defines are pydantic-ai
(``requires_approval``) and ``langgraph``: langchain's ``create_agent`` with
``HumanInTheLoopMiddleware``, ``SqliteSaver`` and ``durability="sync"``; the target shares are
taken against the best of these two. ``langgraph-plain`` (a ``StateGraph`` with ``interrupt()`` in
the tool, lighter than W2.md's configuration) is measured and shown beside them, marked as not a
W2.md configuration, and left out of the shares.

Probes: every phase runs in its own OS process that opens the runtime from the files (one
process per phase and worker, not one per call; probe 3 uses one crashing and one retrying
process per session).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import shutil
import signal
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from w2_peers import W2_PEERS, Loops  # a sibling: the benches run as scripts from bench/

from tether.core.events import RuntimeEvent
from tether.core.tools import ToolContext
from tether.ops.executor_port import OpExecutor

MESSAGE = "[s{}] Please raise the price of item {} by 10 percent."
WARMUPS = 5
TRANSCRIPT = 4
APPROVAL_GRANT = "approve.prices"
APPROVAL_POLICY = f"""rules:
  - name: every-price
    forms: [items]
    ops: [update]
    approvers:
      - {{grant: {APPROVAL_GRANT}, count: 1}}
"""


def new_price(i: int) -> float:
    return round((100 + i) * 1.1, 2)


# ---- the ERP ------------------------------------------------------------------------------------


def erp_connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def erp_create(path: Path) -> None:
    conn = erp_connect(path)
    conn.execute("CREATE TABLE items(id INTEGER PRIMARY KEY, price REAL, version INTEGER)")
    conn.execute("CREATE TABLE executions(item_id INTEGER PRIMARY KEY, n INTEGER)")
    conn.execute("CREATE TABLE applied(op_id TEXT PRIMARY KEY, result TEXT)")  # the idempotency key
    conn.executemany("INSERT INTO items VALUES (?, ?, 0)", [(i, 100.0 + i) for i in range(-WARMUPS, 200)])
    conn.close()


class W2Executor(OpExecutor):
    """W2's tool body as an op executor, idempotent on the op id."""

    name = "w2"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    def _execute(self, op_id: str, item_id: int, price: float) -> dict[str, Any]:
        if self._conn is None:  # the ERP's connection, kept open as a server's pool keeps it
            self._conn = erp_connect(self.path)
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            done = conn.execute("SELECT result FROM applied WHERE op_id = ?", (op_id,)).fetchone()
            if done is not None:
                conn.execute("COMMIT")
                return dict(json.loads(done[0]))
            conn.execute("UPDATE items SET price=?, version=version+1 WHERE id=?", (price, item_id))
            conn.execute("INSERT INTO executions VALUES (?, 1) ON CONFLICT(item_id) DO UPDATE SET n=n+1", (item_id,))
            result = {"item_id": item_id, "price": price, "status": "updated"}
            conn.execute("INSERT INTO applied VALUES (?, ?)", (op_id, json.dumps(result)))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if os.environ.get("W2_CRASH_AFTER_UPDATE") == "1":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def execute(self, op: Any, credential: str | None) -> Any:
        from tether.ops.model import OpOutcome

        result = self._execute(op.op_id, int(op.payload["item_id"]), float(op.payload["new_price"]))
        return OpOutcome("executed", bill_id=str(result["item_id"]), message=json.dumps(result))

    async def validate(self, op: Any, credential: str | None) -> Any:
        from tether.ops.model import OpOutcome

        return OpOutcome("confirmed")

    async def status(self, op: Any, credential: str | None) -> Any:
        from tether.ops.model import OpOutcome

        return OpOutcome(op.status)

    async def cancel(self, op: Any, credential: str | None) -> Any:
        from tether.ops.model import OpOutcome

        return OpOutcome("cancelled")


# ---- tether, opened from the files ---------------------------------------------------------------


class Runner:
    def __init__(self, state: Path, erp: Path, lease_s: float = 30.0, policy: Path | None = None) -> None:
        self.state, self.erp, self.lease_s, self.policy = state, erp, lease_s, policy
        self.model_calls = 0

    async def __aenter__(self) -> Runner:
        from tether.core.messages import ModelReply, ModelRequest, ToolCall
        from tether.core.session import Identity, Owner
        from tether.core.skills import Skill, SkillRegistry
        from tether.core.tools import Interaction, tool
        from tether.factory import build_runtime
        from tether.ops.proposal import draft_op, propose_op
        from tether.ops.service import OpService
        from tether.ops.store import SqlOpStore
        from tether.store import SqlStore
        from tether.store.audit import SqlAuditLog

        runner = self

        class W2Model:
            name = "w2"

            async def chat(self, request: ModelRequest) -> ModelReply:
                runner.model_calls += 1
                if any(m["role"] == "tool" for m in request.messages):
                    return ModelReply(content="Done.")
                text = request.messages[1]["content"]
                i = int(text[2 : text.index("]")])
                args = json.dumps({"item_id": i, "new_price": new_price(i)})
                return ModelReply(tool_calls=[ToolCall(f"call_{i}_1", "update_price", args)])

        @tool(description="Set the price of an item in the ERP. Requires human approval.", proposes=True)
        async def update_price(ctx: ToolContext, item_id: int, new_price: float) -> Any:
            payload = {"item_id": item_id, "new_price": new_price}
            op = draft_op(ctx, executor="w2", op_type="update", form_id="items", payload=payload, auto_execute=True)
            await propose_op(ctx, op)
            return Interaction("proposal", {"opId": op.op_id}, interaction_id=str(op.interaction_id))

        url = f"sqlite:///{self.state}"
        self.store = SqlStore(url)
        await self.store.open()
        skill = Skill("prices", "Change prices.", ("update_price",), "Raise prices.", ("price",))
        skills = SkillRegistry([skill])
        self.executor = W2Executor(self.erp)
        self.audit = SqlAuditLog(url, self.store)  # as wiring.py: rows ride the store's group commit
        store, audit = self.store, self.audit
        executors: dict[str, OpExecutor] = {"w2": self.executor}
        self.runtime = build_runtime(
            store,
            store,
            W2Model(),
            [update_price],
            skills,
            ops=lambda rt: OpService(SqlOpStore(url, store), rt, audit, executors, lease_s=self.lease_s),
        )
        assert isinstance(self.runtime.ops, OpService)
        self.ops = self.runtime.ops
        self.owner = Owner("bench", "bench")
        self.identity = Identity(self.owner)
        if self.policy is not None:  # the approval row: a manager of the same tenant approves each op
            from tether.ops.approvals.wiring import install_approvals

            self.approvals = install_approvals(self.ops, self.policy)
            self.approver = Identity(Owner("manager", "bench"), grants=frozenset({APPROVAL_GRANT}))
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.runtime.drain()
        if self.policy is not None:
            self.approvals.close()
        self.executor.close()
        await self.store.close()
        self.audit.close()
        self.ops.store.close()

    async def propose(self, i: int) -> tuple[str, str]:
        s = await self.runtime.start_session(self.owner, MESSAGE.format(i, i), {})
        if s.pending_interaction is None:
            raise AssertionError(f"session {i} did not pause: {s.status} {s.last_error}")
        return s.session_id, str(s.pending_interaction["payload"]["opId"])

    async def approve(self, session_id: str, op_id: str) -> str:
        """The reviewer's request: confirm, then the answer as a client reads it, from the
        session's event stream (events are published after their commit: the answer is durable)."""
        from tether.bus import Subscription

        events = self.runtime.deps.bus.subscribe(session_id)
        assert isinstance(events, Subscription)  # the bench's bus is in-process: its queue can be drained
        try:
            view = await self.ops.confirm(op_id, self.identity)
            await self.runtime.drain()  # the auto op's execution and the model's answer
            answer, status = None, None
            while not events.queue.empty():
                e = events.queue.get_nowait()
                if isinstance(e, RuntimeEvent) and e.type == "ASSISTANT_MESSAGE":
                    answer = e.data["content"]
                if isinstance(e, RuntimeEvent) and e.type == "TURN_FINISHED":
                    status = e.data["status"]
        finally:
            events.close()
        if status == "SUCCEEDED" and answer is not None:
            return str(answer)
        if status is not None:
            return f"{view['state']}: {status}"
        s = await self.store.load(session_id)  # nothing ran (a repeated approve): what is stored
        last = s.transcript[-1].get("content") if s.transcript else None
        return str(last) if s.status.value == "SUCCEEDED" else f"{view['state']}: {s.status.value}"

    async def transcript_length(self, session_id: str) -> int:
        return len((await self.store.load(session_id)).transcript) - 1


# ---- the timing run --------------------------------------------------------------------------------


async def timing(folder: Path, sessions: int) -> dict[str, Any]:
    state, erp = folder / "state.db", folder / "erp.db"
    erp_create(erp)
    async with Runner(state, erp) as r:
        loops = await Loops().run(r, sessions, "tether")
        lengths = {await r.transcript_length(sid) for sid, _ in loops.proposals}
        if lengths != {TRANSCRIPT}:
            raise AssertionError(f"transcripts {lengths}")
    check = erp_connect(erp)
    rows = check.execute("SELECT n, COUNT(*) FROM executions WHERE item_id >= 0 GROUP BY n").fetchall()
    versions = check.execute("SELECT DISTINCT version FROM items WHERE id >= 0 AND id < ?", (sessions,)).fetchall()
    check.close()
    if rows != [(1, sessions)] or versions != [(1,)]:
        raise AssertionError(f"executions {rows}, versions {versions}")
    return loops.row(state, sessions)


# ---- the approval row: propose → confirm (held) → approve → execute ------------------------------------


def count_commits(store: Any) -> list[int]:
    """A counter of the store writer's transactions (each one commit, one fsync): ``[n]``."""
    writer, counter = store._writer, [0]
    attempt = writer._attempt

    def counted(pending: Any) -> Any:
        counter[0] += 1
        return attempt(pending)

    writer._attempt = counted
    return counter


async def _plain_commits(r: Runner, ids: range) -> float:
    """Durable commits per session of W2 as it is (propose, confirm → execute → answer)."""
    counter = count_commits(r.store)
    for i in ids:
        await r.approve(*await r.propose(i))
    return counter[0] / len(ids)


async def approval_timing(folder: Path, sessions: int) -> dict[str, Any]:
    """The approval row: the requester's confirm holds each op (an approval policy matches every
    op); the manager's approve — ``ApprovalService.approve``, as ``POST /api/approvals/{opId}/approve``
    — passes the gate, the op executes and the session answers. ``approve_p50_us`` is the
    approve phase (to the answer), ``commits_added`` the durable commits an approval adds to W2's."""
    import resource

    state, erp, policy = folder / "state.db", folder / "erp.db", folder / "policy.yaml"
    erp_create(erp)
    policy.write_text(APPROVAL_POLICY)
    async with Runner(folder / "plain.db", erp) as plain:
        plain_commits = await _plain_commits(plain, range(-WARMUPS, 0))
    erp_create(folder / "erp2.db")
    async with Runner(state, folder / "erp2.db", policy=policy) as r:
        for i in range(-WARMUPS, 0):  # warm-ups
            sid, op_id = await r.propose(i)
            await r.ops.confirm(op_id, r.identity)
            await _approved(r, sid, op_id)
        counter = count_commits(r.store)
        confirm_us, approve_us, commits = [], [], 0
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        for i in range(sessions):
            sid, op_id = await r.propose(i)
            t = time.perf_counter()
            held = await r.ops.confirm(op_id, r.identity)
            confirm_us.append((time.perf_counter() - t) * 1e6)
            if held["state"] != "awaiting_approval":
                raise AssertionError(f"the confirm was not held: {held['state']}")
            before = counter[0]
            t = time.perf_counter()
            answer = await _approved(r, sid, op_id)
            approve_us.append((time.perf_counter() - t) * 1e6)
            commits += counter[0] - before
            if answer != "Done.":
                raise AssertionError(f"approve answered {answer!r}")
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        approval_commits = counter[0] / sessions
    check = erp_connect(folder / "erp2.db")
    rows = check.execute("SELECT n, COUNT(*) FROM executions WHERE item_id >= 0 GROUP BY n").fetchall()
    check.close()
    if rows != [(1, sessions)]:
        raise AssertionError(f"executions {rows}")
    return {
        "framework": "tether+approval",
        "sessions": sessions,
        "confirm_held_p50_us": round(statistics.median(confirm_us)),
        "approve_p50_us": round(statistics.median(approve_us)),
        "approve_p95_us": round(sorted(approve_us)[int(0.95 * (len(approve_us) - 1))]),
        "cpu_us_per_session": round((cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime) * 1e6 / sessions),
        "commits_per_session": round(approval_commits, 2),
        "commits_added": round(approval_commits - plain_commits, 2),
        "approve_phase_commits": round(commits / sessions, 2),
    }


async def _approved(r: Runner, session_id: str, op_id: str) -> str:
    """The approver's request and the answer the requester's session gets (as ``Runner.approve``)."""
    from tether.bus import Subscription

    events = r.runtime.deps.bus.subscribe(session_id)
    assert isinstance(events, Subscription)
    try:
        await r.approvals.approve(op_id, r.approver)
        await r.runtime.drain()
        answer = None
        while not events.queue.empty():
            e = events.queue.get_nowait()
            if isinstance(e, RuntimeEvent) and e.type == "ASSISTANT_MESSAGE":
                answer = e.data["content"]
    finally:
        events.close()
    return str(answer)


# ---- the probes: each phase in its own process -------------------------------------------------------


def _phase(kind: str, folder: str, ids: list[int], lease_s: float, barrier: Any = None) -> None:
    """One OS process: propose ``ids`` (writing their ids to a file) or approve them."""
    # probe 3's retries each log that the op was left executing by the killed process: expected
    logging.getLogger("tether.ops").setLevel(logging.ERROR)

    async def main() -> None:
        base = Path(folder)
        async with Runner(base / "state.db", base / "erp.db", lease_s) as r:
            if kind == "propose":
                pairs = {i: await r.propose(i) for i in ids}
                (base / "pairs.json").write_text(json.dumps(pairs))
                return
            pairs = {int(k): v for k, v in json.loads((base / "pairs.json").read_text()).items()}
            answers = {}
            for i in ids:
                if barrier is not None:
                    barrier.wait()
                answers[i] = await r.approve(*pairs[i])
            (base / f"answers-{os.getpid()}.json").write_text(json.dumps(answers))

    asyncio.run(main())


def run_phase(kind: str, folder: Path, ids: list[int], lease_s: float = 30.0, env: dict[str, str] | None = None) -> int:
    ctx = multiprocessing.get_context("spawn")
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        p = ctx.Process(target=_phase, args=(kind, str(folder), ids, lease_s))
        p.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    p.join(600)
    return int(p.exitcode or 0)


def probe_result(folder: Path, ids: list[int], repeated: list[str]) -> dict[str, Any]:
    conn = erp_connect(folder / "erp.db")
    counts = dict(conn.execute("SELECT item_id, n FROM executions").fetchall())
    conn.close()
    n = [counts.get(i, 0) for i in ids]

    async def lengths() -> list[int]:
        async with Runner(folder / "state.db", folder / "erp.db") as r:
            pairs = {int(k): v for k, v in json.loads((folder / "pairs.json").read_text()).items()}
            return [await r.transcript_length(pairs[i][0]) for i in ids]

    lens = asyncio.run(lengths())
    return {
        "executions_min": min(n),
        "executions_median": statistics.median(n),
        "executions_max": max(n),
        "written_twice_pct": round(100 * sum(1 for x in n if x >= 2) / len(n), 1),
        "repeated_call_returned": sorted(set(repeated))[:3],
        "transcript_lengths": sorted(set(lens)),
    }


def _answers(folder: Path) -> list[str]:
    out: list[str] = []
    for f in sorted(folder.glob("answers-*.json")):
        out += list(json.loads(f.read_text()).values())
        f.unlink()
    return out


def probes(root: Path, count: int) -> dict[str, Any]:
    ids = list(range(count))
    results: dict[str, Any] = {}

    def fresh(name: str) -> Path:
        folder = root / name
        folder.mkdir()
        erp_create(folder / "erp.db")
        run_phase("propose", folder, ids)
        return folder

    folder = fresh("p1")
    run_phase("approve", folder, ids)
    _answers(folder)
    run_phase("approve", folder, ids)  # the double click, after Done.
    results["1_duplicate_sequential"] = probe_result(folder, ids, _answers(folder))

    folder = fresh("p1b")  # the retry resumes from the paused snapshot taken right after propose
    shutil.copy(folder / "state.db", folder / "paused.db")
    run_phase("approve", folder, ids)
    _answers(folder)
    for suffix in ("-wal", "-shm"):
        (folder / f"state.db{suffix}").unlink(missing_ok=True)
    shutil.copy(folder / "paused.db", folder / "state.db")
    run_phase("approve", folder, ids)
    results["1b_duplicate_from_snapshot"] = probe_result(folder, ids, _answers(folder))

    folder = fresh("p2")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    workers = [ctx.Process(target=_phase, args=("approve", str(folder), ids, 30.0, barrier)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(600)
    results["2_duplicate_concurrent"] = probe_result(folder, ids, _answers(folder))

    folder = fresh("p3")
    killed = 0
    for i in ids:
        code = run_phase("approve", folder, [i], lease_s=0.2, env={"W2_CRASH_AFTER_UPDATE": "1"})
        killed += code == -signal.SIGKILL
        time.sleep(0.25)  # the crashed runner's lease runs out
        run_phase("approve", folder, [i], lease_s=0.2)
    results["3_crash_after_side_effect"] = {**probe_result(folder, ids, _answers(folder)), "killed": killed}
    return results


# ---- the report --------------------------------------------------------------------------------------

# W2.md's reference figures (another machine, 2026-12-02): propose / approve p50 µs, CPU µs, bytes, probes
REFERENCE = (
    ("LangGraph 1.2.24 + langchain 1.5.2 (create_agent + HITL)", 4676, 8688, 12673, "~26 KB", "1 / 2 / 2 / 2"),
    ("pydantic-ai 2.68 (requires_approval)", 4384, 5234, 9196, "~4.2 KB", "1 / 2 / 2 / 2"),
    ("openai-agents 0.24 (needs_approval)", 8505, 14719, 22930, "~6.8 KB", "1 / 2 / 2 / 2"),
)
# the targets, absolute and as a share of the best W2.md peer's reference figure (pydantic-ai's)
TARGETS = {"propose_p50_us": (1500, 4384), "approve_p50_us": (2500, 5234), "cpu_us_per_session": (3000, 9196)}
METRICS = ("propose_p50_us", "propose_p95_us", "approve_p50_us", "approve_p95_us", "cpu_us_per_session")


def settle() -> None:
    """Before each framework's timing run: the previous run's dirty pages written out, so no run
    pays (in its own fsyncs, which share the file system's journal) for the one before it."""
    os.sync()


def _peer_child(name: str, folder: str, sessions: int, out: Any) -> None:
    import w2_peers

    out.put(w2_peers.run_peer(name, Path(folder), sessions))


def run_peers(root: Path, sessions: int) -> list[dict[str, Any]]:
    """Each installed peer's timing run (bench/w2_peers.py) in a process of its own."""
    try:
        import w2_peers
    except ImportError:
        return []
    ctx = multiprocessing.get_context("spawn")
    rows = []
    for name in w2_peers.PEERS:
        folder = root / f"peer-{name}-{len(list(root.iterdir()))}"
        folder.mkdir()
        out = ctx.Queue()
        settle()
        child = ctx.Process(target=_peer_child, args=(name, str(folder), sessions, out))
        child.start()
        rows.append(out.get(timeout=900))
        child.join(60)
    return rows


def median_rows(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per framework, the median of each metric over the runs (bytes and RSS: the last run's)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for row in run:
            by.setdefault(row["framework"], []).append(row)
    out = []
    for rows in by.values():
        merged = dict(rows[-1])
        for key in METRICS:
            merged[key] = round(statistics.median(r[key] for r in rows))
        merged["runs"] = len(rows)
        out.append(merged)
    return out


def print_report(rows: list[dict[str, Any]], floor_us: float, probe_rows: list[dict[str, Any]]) -> None:
    print("W2 — a human-approved write: propose, pause, approve from a fresh request, execute, answer")
    print(f"one SQLite commit with fsync (WAL, synchronous=FULL) on this disk now: {floor_us:,.0f} µs median")
    print(f"{'framework':<17}{'propose p50/p95 µs':>22}{'approve p50/p95 µs':>22}{'CPU µs/session':>16}"
          f"{'B/session':>11}{'peak RSS MB':>13}{'runs':>6}")  # fmt: skip
    other = [r["framework"] for r in rows if r["framework"] not in ("tether", *W2_PEERS)]
    for r in rows:
        name = r["framework"] + ("*" if r["framework"] in other else "")
        print(
            f"{name:<17}{r['propose_p50_us']:>12,} / {r['propose_p95_us']:<7,}"
            f"{r['approve_p50_us']:>12,} / {r['approve_p95_us']:<7,}{r['cpu_us_per_session']:>16,}"
            f"{r['bytes_per_session']:>11,}{r['peak_rss_mb']:>13}{r.get('runs', 1):>6}"
        )
    if other:
        print(f"  * {', '.join(other)}: not a W2.md configuration (a plain StateGraph with interrupt() in the tool, "
              "lighter than create_agent + HITL middleware); not in the shares below")  # fmt: skip
    tether = next(r for r in rows if r["framework"] == "tether")
    peers = [r for r in rows if r["framework"] in W2_PEERS]
    print("targets (issue 8)      this run        as a share of the best W2.md peer (target: share in W2.md)")
    for key, (target, best_ref) in TARGETS.items():
        line = f"  {key:<20} {tether[key]:>7,} µs ≤ {target:,}: {'met' if tether[key] <= target else 'missed':<6}"
        if peers:
            best = min(peers, key=lambda r: r[key])
            share = tether[key] / best[key]
            line += f"  {share:.2f}× {best['framework']} ≤ {target / best_ref:.2f}×: {'met' if share <= target / best_ref else 'missed'}"
        print(line)
    kb = tether["bytes_per_session"] / 1000
    print(f"  {'state per session':<20} {kb:>7.1f} KB ≤ 8 KB: {'met' if kb <= 8 else 'missed'}")
    print("reference (W2.md, measured elsewhere): propose / approve p50 µs, CPU µs, bytes, probes 1 / 1b / 2 / 3")
    for name, propose, approve, cpu, size, probes in REFERENCE:
        print(f"  {name:<58}{propose:>7,}{approve:>8,}{cpu:>8,}{size:>9}   {probes}")
    if probe_rows:
        print("tether's probes (idempotency key: the op id, recorded by the ERP in the UPDATE's transaction)")
    for p in probe_rows:
        print(
            f"  probe {p['probe']:<3} executions min/median/max {p['executions_min']}/{p['executions_median']}/"
            f"{p['executions_max']}, written twice {p['written_twice_pct']} %, transcript {p['transcript_lengths']}, "
            f"repeat returned {p['repeated_call_returned']}" + (f", killed {p['killed']}" if "killed" in p else "")
        )


def print_approval(a: dict[str, Any], tether: dict[str, Any]) -> None:
    """The approval row beside W2's: its approve phase and CPU against W2's, and what it adds."""
    print("with an approval policy (issue 26): propose → confirm (held) → approve → execute → answer")
    print(
        f"  confirm held p50 {a['confirm_held_p50_us']:,} µs; approve p50/p95 {a['approve_p50_us']:,} / "
        f"{a['approve_p95_us']:,} µs (W2's approve {tether['approve_p50_us']:,}); CPU {a['cpu_us_per_session']:,} "
        f"µs/session (W2's {tether['cpu_us_per_session']:,})"
    )
    added_us = a["approve_p50_us"] - tether["approve_p50_us"]
    print(
        f"  targets: an approval adds {a['commits_added']} durable commits (≤ 1: "
        f"{'met' if a['commits_added'] <= 1 else 'missed'}) and {added_us:,} µs to the approve p50 (≤ 1,000: "
        f"{'met' if added_us <= 1000 else 'missed'})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--probe-sessions", type=int, default=50)
    parser.add_argument(
        "--repeat", type=int, default=3, help="timing runs per framework, alternated; the medians are the verdict"
    )
    parser.add_argument("--no-probes", action="store_true")
    parser.add_argument("--no-peers", action="store_true", help="tether only (the peers need uv sync --group bench)")
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    parser.add_argument("--no-approval", action="store_true", help="leave out the approval row")
    args = parser.parse_args()
    from w1 import commit_floor

    floor_us = commit_floor()
    with tempfile.TemporaryDirectory(prefix="tether-w2-") as tmp:
        root = Path(tmp)
        runs: list[list[dict[str, Any]]] = []
        for n in range(args.repeat):
            (root / f"timing-{n}").mkdir()
            settle()
            run = [{"framework": "tether", **asyncio.run(timing(root / f"timing-{n}", args.sessions))}]
            runs.append(run + ([] if args.no_peers else run_peers(root, args.sessions)))
        rows = median_rows(runs)
        approval_rows = []
        if not args.no_approval:
            (root / "approval").mkdir()
            settle()
            approval_rows.append(asyncio.run(approval_timing(root / "approval", args.sessions)))
        probe_rows = []
        if not args.no_probes:
            for name, p in probes(root, args.probe_sessions).items():
                probe_rows.append({"framework": "tether", "probe": name.split("_")[0], **p})
    if args.json:
        out = [{**r, "commit_floor_us": round(floor_us)} for r in rows] + approval_rows + probe_rows
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print_report(rows, floor_us, probe_rows)
    for a in approval_rows:
        print_approval(a, next(r for r in rows if r["framework"] == "tether"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
