"""Scale-out benchmark (docs/benchmarks.md, "Scale-out"): tether replicas on PostgreSQL and Redis.

Three tables, each from real processes on loopback:

1. sessions/s with 1, 2 and 3 ``tether serve`` replicas on one PostgreSQL database: W1's tool loop
   (eight lookups and an answer, run by the offline planner), driven by a client that keeps
   ``--concurrency`` sessions in flight round-robin across the replicas;
2. the durable step cost on PostgreSQL vs SQLite: W1's step (one model round, one tool call, one
   commit) through the runtime in-process, sequentially, median and p95;
3. SSE fan-out across replicas: a session runs on replica A while a reader follows it on replica B;
   latency from an event's creation (just before its commit) to the reader, p50/p95 — with Redis
   waking the reader, and without (the reader polls the store every ``TETHER_SSE_POLL_S``).

The analysis at 20k / 200k / 1M rows is the finance pack's benchmark, ``bench/analysis_scale.py``;
``--analysis`` runs it after these tables (it seeds a million rows: minutes).

    .venv/bin/python bench/scale.py
    .venv/bin/python bench/scale.py --sessions 100 --concurrency 16 --json

Needs PostgreSQL (``TETHER_BENCH_PG``, default the local server's ``postgres`` database, which is
used only to create and drop a scratch database) and ``redis-server`` on the PATH (a private one is
started on a free port).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from scratch_db import scratch_pg  # a sibling: the benches run as scripts from bench/

ROOT = Path(__file__).resolve().parent.parent
PACK = Path(__file__).resolve().parent / "scalepack"
PG_ADMIN = os.environ.get("TETHER_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MESSAGE = "records please [{}]"
TOKEN = "dev-alice"
STEPS = 9  # the pack's plan: a pause, eight lookups


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(fn: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if fn():
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {what}")


@contextmanager
def private_redis(folder: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(args, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import redis

        wait_for(lambda: redis.Redis(port=port, socket_connect_timeout=0.3).ping(), 15, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait()


@contextmanager
def replicas(n: int, folder: Path, database_url: str, redis_url: str | None) -> Iterator[list[str]]:
    """``n`` replicas (the first migrates, then the others start), their base URLs."""
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env.update(
        TETHER_DATABASE_URL=database_url,
        TETHER_PACKS=str(PACK),
        TETHER_LOG_LEVEL="WARNING",
        TETHER_SWEEP_S="1",
        PYTHONUNBUFFERED="1",
    )
    if redis_url:
        env["TETHER_REDIS_URL"] = redis_url
    try:
        for i in range(n):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            log = (folder / f"replica-{i}.log").open("ab")
            cmd = [sys.executable, "-m", "tether.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
            environ = {**env, "TETHER_REPLICA_ID": f"replica-{i}", "TETHER_PUBLIC_URL": url}
            procs.append(subprocess.Popen(cmd, cwd=folder, env=environ, stdout=log, stderr=subprocess.STDOUT))
            urls.append(url)
            if i == 0:
                wait_for(lambda u=url: httpx.get(u + "/api/ready").status_code == 200, 90, "the first replica")
        for url in urls:
            wait_for(lambda u=url: httpx.get(u + "/api/ready").status_code == 200, 90, f"replica {url}")
        yield urls
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


# ---- 1. sessions/s --------------------------------------------------------------------------------


async def drive(urls: list[str], sessions: int, concurrency: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}

    async def run(ids: list[int], workers: int, client: httpx.AsyncClient) -> list[float]:
        todo, latencies = list(reversed(ids)), []

        async def one() -> None:
            while todo:
                i = todo.pop()
                t = time.perf_counter()
                r = await client.post(f"{urls[i % len(urls)]}/api/agent/sessions", json={"message": MESSAGE.format(i)})
                body = r.json() if r.status_code == 200 else {}
                if body.get("status") != "SUCCEEDED" or len(body.get("executedSteps") or []) != STEPS:
                    raise SystemExit(f"session {i} did not run the loop: {r.status_code} {r.text[:300]}")
                latencies.append(time.perf_counter() - t)

        await asyncio.gather(*(one() for _ in range(workers)))
        return sorted(latencies)

    limits = httpx.Limits(max_connections=concurrency * 2)
    async with httpx.AsyncClient(headers=headers, timeout=120, limits=limits) as client:
        await run(list(range(-2 * len(urls), 0)), len(urls), client)  # warm-up: each replica twice
        cpu, wall = time.process_time(), time.perf_counter()
        latencies = await run(list(range(sessions)), concurrency, client)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "sessions_per_s": round(sessions / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 1),
        "client_cpu_pct": round(100 * cpu / wall),
    }


def throughput(counts: list[int], sessions: int, concurrency: int, folder: Path) -> list[dict[str, Any]]:
    rows = []
    for n in counts:
        with scratch_pg() as url, private_redis(folder) as redis_url, replicas(n, folder, url, redis_url) as urls:
            result = asyncio.run(drive(urls, sessions, concurrency))
        rows.append({"replicas": n, "sessions": sessions, "concurrency": concurrency, **result})
        print(f"  {n} replica(s): {result}", file=sys.stderr, flush=True)
    return rows


# ---- 2. durable step cost -------------------------------------------------------------------------


async def step_cost(url: str, sessions: int) -> dict[str, Any]:
    from tether.core.messages import ModelReply, ModelRequest, ToolCall
    from tether.core.session import Owner, Status
    from tether.core.skills import Skill, SkillRegistry
    from tether.factory import build_runtime
    from tether.store import SqlStore

    sys.path.insert(0, str(PACK.parent))
    from scalepack.pack import lookup

    marks: dict[str, list[float]] = {}

    class Loop:
        name = "w1"

        async def chat(self, request: ModelRequest) -> ModelReply:
            round_ = 1 + sum(1 for m in request.messages if m["role"] == "tool")
            marks.setdefault(request.messages[1]["content"], []).append(time.perf_counter())
            if round_ <= 8:
                return ModelReply(tool_calls=[ToolCall(f"call_{round_}", "lookup", json.dumps({"i": round_}))])
            return ModelReply(content="done")

    store = SqlStore(url)
    await store.open()
    skill = Skill("records", "Look up records.", ("lookup",), "Look up each record.", ("records",))
    skills = SkillRegistry([skill])
    runtime = build_runtime(store, store, Loop(), [lookup], skills, callback_url="http://127.0.0.1/cb")
    owner = Owner("bench", "bench")
    try:
        for i in range(-5, sessions):
            s = await runtime.start_session(owner, MESSAGE.format(i), {})
            if s.status is not Status.SUCCEEDED:
                raise SystemExit(f"step-cost session ended {s.status}: {s.last_error}")
    finally:
        await store.close()
    steps = sorted((b - a) * 1e6 for i in range(sessions) for a, b in itertools.pairwise(marks[MESSAGE.format(i)]))
    return {"p50_us": round(statistics.median(steps)), "p95_us": round(steps[int(0.95 * (len(steps) - 1))])}


def step_costs(sessions: int, folder: Path) -> list[dict[str, Any]]:
    rows = [{"database": "sqlite", **asyncio.run(step_cost(f"sqlite:///{folder / 'steps.db'}", sessions))}]
    with scratch_pg() as url:
        rows.append({"database": "postgresql", **asyncio.run(step_cost(url, sessions))})
    for row in rows:
        print(f"  step cost {row}", file=sys.stderr, flush=True)
    return rows


# ---- 3. SSE fan-out -------------------------------------------------------------------------------


async def fan_out(writer: str, reader: str, sessions: int) -> list[float]:
    """Per live event, seconds from its creation on ``writer`` to its arrival at ``reader``."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    lags: list[float] = []
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=30)) as client:
        for i in range(sessions):
            r = await client.post(
                f"{writer}/api/agent/sessions", params={"wait": "false"}, json={"message": f"records pause=0.5 [{i}]"}
            )
            sid = r.json()["sessionId"]
            attached = time.time()
            async with client.stream("GET", f"{reader}/api/agent/sessions/{sid}/events") as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    now = time.time()
                    event = json.loads(line[5:])
                    if event["ts"] > attached:  # created after the reader attached: a live event
                        lags.append(now - event["ts"])
                    if event["type"] == "TURN_FINISHED":
                        break
    return lags


def fan_outs(sessions: int, folder: Path) -> list[dict[str, Any]]:
    rows = []
    for label, use_redis in (("redis", True), ("polling (no Redis)", False)):
        with (
            scratch_pg() as url,
            private_redis(folder) as redis_url,
            replicas(2, folder, url, redis_url if use_redis else None) as urls,
        ):
            lags = sorted(asyncio.run(fan_out(urls[0], urls[1], sessions)))
        row = {
            "wake_up": label,
            "events": len(lags),
            "p50_ms": round(statistics.median(lags) * 1000, 1),
            "p95_ms": round(lags[int(0.95 * (len(lags) - 1))] * 1000, 1),
        }
        rows.append(row)
        print(f"  fan-out {row}", file=sys.stderr, flush=True)
    return rows


# ---- the whole run --------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=200, help="sessions per replica-count row (default 200)")
    p.add_argument("--concurrency", type=int, default=24, help="sessions in flight (default 24)")
    p.add_argument("--replicas", default="1,2,3", help="replica counts to measure (default 1,2,3)")
    p.add_argument("--step-sessions", type=int, default=100, help="sessions of the step-cost rows (default 100)")
    p.add_argument("--fanout-sessions", type=int, default=20, help="sessions of the fan-out rows (default 20)")
    p.add_argument("--analysis", action="store_true", help="also run bench/analysis_scale.py (20k/200k/1M rows)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args()
    counts = [int(n) for n in args.replicas.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="tether-scale-") as tmp:
        folder = Path(tmp)
        result = {
            "throughput": throughput(counts, args.sessions, args.concurrency, folder),
            "step_cost": step_costs(args.step_sessions, folder),
            "fan_out": fan_outs(args.fanout_sessions, folder),
        }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"Scale-out on {os.cpu_count()} CPU(s); the client, PostgreSQL, Redis and every replica share them.")
        print("\nW1 sessions/s by replica count (PostgreSQL, Redis):\n" + table(result["throughput"]))
        print("\nDurable step cost (one model round + one tool call + one commit, sequential):")
        print(table(result["step_cost"]))
        print("\nSSE fan-out across replicas (event created on A -> reader on B):\n" + table(result["fan_out"]))
    analysis = Path(__file__).resolve().parent / "analysis_scale.py"
    if not args.analysis:
        print(f"\nAnalysis at 20k/200k/1M rows: {analysis.name} (run with --analysis, or on its own)")
    elif analysis.exists():
        print("\nAnalysis at 20k/200k/1M rows:", flush=True)
        subprocess.run([sys.executable, str(analysis)], check=True, cwd=ROOT)
    else:
        print(f"\nAnalysis at 20k/200k/1M rows: {analysis.name} is not in this checkout")


if __name__ == "__main__":
    main()
