"""Measures the hot path's CPU per step on SQLite (not a test): 2 message rows + 4 event rows +
1 session update per commit, WAL, synchronous=FULL; sequential, then 50 sessions concurrently.

Run: .venv/bin/python tests/store/measure_step.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from tether.core.events import RuntimeEvent
from tether.core.ports import Commit
from tether.core.session import AgentSession, Owner
from tether.store import MemoryStore, SqlStore


def step(s: AgentSession, seq: int, i: int) -> Commit:
    call = f"call-{i}"
    s.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "query_sessions", "arguments": '{"days":30}'}}
            ],
        }
    )
    s.append({"role": "tool", "tool_call_id": call, "content": '{"rows":[[1,"贵金属"]],"total":1}'})
    events = [
        RuntimeEvent(seq + k, s.session_id, "turn-1", t, time.time(), {"toolCallId": call, "k": k})
        for k, t in enumerate(("MODEL_DECISION", "TOOL_CALL_REQUESTED", "TOOL_EXECUTION_STARTED",
                               "TOOL_EXECUTION_FINISHED"), start=1)
    ]  # fmt: skip
    return Commit(s, events)


async def sequential(store: SqlStore | MemoryStore, n: int) -> float:
    s = AgentSession.new(Owner("u1", "t1"), "最近30天贵金属规则调整", {})
    await store.create(Commit(s))
    seq = 0
    for i in range(50):  # warm up
        await store.commit(step(s, seq, i))
        seq += 4
    cpu = time.process_time()
    for i in range(n):
        await store.commit(step(s, seq, i))
        seq += 4
    return (time.process_time() - cpu) / n * 1e6


async def concurrent(store: SqlStore | MemoryStore, sessions: int, steps: int) -> tuple[float, float, float]:
    ss = [AgentSession.new(Owner("u1", "t1"), f"q{k}", {}) for k in range(sessions)]
    await asyncio.gather(*(store.create(Commit(s)) for s in ss))

    async def run(s: AgentSession) -> None:
        seq = 0
        for i in range(steps):
            await store.commit(step(s, seq, i))
            seq += 4

    before = (store.writer_stats.writes, store.writer_stats.batches)
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(run(s) for s in ss))
    total = sessions * steps
    batches = store.writer_stats.batches - before[1]
    per_batch = (store.writer_stats.writes - before[0]) / max(batches, 1)
    return (time.process_time() - cpu) / total * 1e6, total / (time.perf_counter() - wall), per_batch


async def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as tmp:
        async with SqlStore(f"sqlite:///{Path(tmp) / 'measure.db'}") as store:
            us = await sequential(store, n)
            print(f"sqlite sequential: {us:.0f} µs CPU per step ({n} steps)")
            us, rate, per_batch = await concurrent(store, 50, 40)
            print(f"sqlite 50 concurrent: {us:.0f} µs CPU per step, {rate:.0f} steps/s, "
                  f"{per_batch:.1f} commits per transaction")  # fmt: skip
    print(f"memory sequential: {await sequential(MemoryStore(), n):.0f} µs CPU per step")


if __name__ == "__main__":
    asyncio.run(main())
