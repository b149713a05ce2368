"""Workload W2 (defined in docs/writes.md, "Workload W2"), the peers' side: the timing run on pydantic-ai and LangGraph (two configurations).

tether's ``bench/w2.py`` calls ``run_peer`` so that the peers' figures come from the same machine
in the same run (disk fsync and CPU speed vary, so ratios need a same-run baseline). Only the
timing run is here, not the exactly-once probes. The ERP and its tool body are W2's, without an
idempotency key (the peers offer none): one ``BEGIN IMMEDIATE … COMMIT`` with the UPDATE and the
``executions`` upsert, SIGKILL after the COMMIT when ``W2_CRASH_AFTER_UPDATE=1``.

- **pydantic-ai:** ``update_price`` registered with ``requires_approval=True``, a ``FunctionModel``
  scripted as W2's model, ``output_type=[str, DeferredToolRequests]``. *propose* runs until the run
  ends with ``DeferredToolRequests`` and returns the tool call id; *approve* reads the stored
  history and runs again with ``DeferredToolResults(approvals={call_id: True})``. The history
  (``ModelMessagesTypeAdapter`` JSON) is upserted into the state DB before every model request (with
  that request: the user prompt, then the tool result) and after each run ends.
- **langgraph** (W2.md's configuration): langchain's ``create_agent(model, tools=[update_price],
  middleware=[HumanInTheLoopMiddleware(interrupt_on={"update_price": True})], checkpointer=SqliteSaver)``
  with a scripted ``BaseChatModel`` (stateless: W2's replies from the messages it is given;
  ``bind_tools`` accepts the tools and returns the model). ``SqliteSaver`` on the state DB,
  ``durability="sync"``. *propose* returns the id of the middleware's interrupt (batched mode: one
  per model turn, raised after the model node); *approve* is
  ``agent.invoke(Command(resume={interrupt_id: {"decisions": [{"type": "approve"}]}}), config)``,
  which loads the thread's latest checkpoint, runs the tool and the model's answer.
- **langgraph-plain** (lighter than W2.md's configuration, shown for comparison only): a
  ``StateGraph(MessagesState)`` with a model node and a ``ToolNode`` whose tool calls
  ``langgraph.types.interrupt(...)`` before it writes; the same saver, durability and resume by
  interrupt id (the decision is the string ``"approve"``). No langchain, no middleware.

All three need ``uv sync --group bench`` (langchain, langgraph, langgraph-checkpoint-sqlite,
pydantic-ai-slim); ``PEERS`` lists those installed, ``W2_PEERS`` those configured as W2.md defines
them (pydantic-ai, langgraph).

Each peer runs in the calling process over one runtime object (agent or compiled graph, and
its state DB connection) kept open for the run, as a server keeps it; nothing else carries over
from propose to approve. ``run_peer`` must be called outside a running event loop. Peak RSS is the
process's peak so far: when several peers (or tether) ran before in the same process, it includes them.

    .venv/bin/python bench/w2_peers.py [--sessions N] [--peer NAME ...] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import resource
import signal
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

MESSAGE = "[s{}] Please raise the price of item {} by 10 percent."
DESCRIPTION = "Set the price of an item in the ERP. Requires human approval."
FINAL = "Done."
WARMUPS = 5
TRANSCRIPT = 4
LANGGRAPH = ("langgraph", "langgraph.checkpoint.sqlite")
PEER_MODULES = {
    "pydantic-ai": ("pydantic_ai",),
    "langgraph": ("langchain", *LANGGRAPH),
    "langgraph-plain": LANGGRAPH,
}
W2_PEERS = ("pydantic-ai", "langgraph")  # the peers as W2.md configures them; langgraph-plain is lighter
PEERS: tuple[str, ...] = tuple(
    name for name, modules in PEER_MODULES.items() if all(importlib.util.find_spec(m) is not None for m in modules)
)


def price_for(i: int) -> float:
    return round((100 + i) * 1.1, 2)


def session_of(text: str) -> int:
    return int(text[2 : text.index("]")])


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, round(q * (len(values) - 1)))]


def connect(path: Path, check_same_thread: bool = True) -> sqlite3.Connection:
    """WAL + synchronous=FULL, autocommit (each statement outside BEGIN commits on its own)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=check_same_thread)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


# ---- the ERP ------------------------------------------------------------------------------------


class Erp:
    def __init__(self, path: Path, sessions: int) -> None:
        self.conn = connect(path, check_same_thread=False)  # kept open, as a server's pool keeps it
        self.conn.execute("CREATE TABLE items(id INTEGER PRIMARY KEY, price REAL, version INTEGER)")
        self.conn.execute("CREATE TABLE executions(item_id INTEGER PRIMARY KEY, n INTEGER)")
        ids = range(-WARMUPS, max(200, sessions))
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO items VALUES (?, ?, 0)", [(i, 100.0 + i) for i in ids])
        self.conn.execute("COMMIT")

    def update_price(self, item_id: int, new_price: float) -> dict[str, Any]:
        """W2's tool body, in one transaction."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE items SET price=?, version=version+1 WHERE id=?", (new_price, item_id))
            conn.execute("INSERT INTO executions VALUES (?, 1) ON CONFLICT(item_id) DO UPDATE SET n=n+1", (item_id,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if os.environ.get("W2_CRASH_AFTER_UPDATE") == "1":
            os.kill(os.getpid(), signal.SIGKILL)
        return {"item_id": item_id, "price": new_price, "status": "updated"}

    def check(self, sessions: int) -> None:
        """Every session's item written exactly once (warm-ups included)."""
        rows = self.conn.execute("SELECT n, COUNT(*) FROM executions GROUP BY n").fetchall()
        versions = self.conn.execute("SELECT DISTINCT version FROM items WHERE id < ?", (sessions,)).fetchall()
        if rows != [(1, sessions + WARMUPS)] or versions != [(1,)]:
            raise AssertionError(f"executions {rows}, versions {versions}")

    def close(self) -> None:
        self.conn.close()


# ---- pydantic-ai ----------------------------------------------------------------------------------


class PydanticAIPeer:
    def __init__(self, state: Path, erp: Erp) -> None:
        from pydantic_ai import Agent, DeferredToolRequests
        from pydantic_ai.messages import (
            ModelMessage,
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
            UserPromptPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        self.model_calls = 0

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.model_calls += 1
            parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
            if any(isinstance(p, ToolReturnPart) for p in parts):
                return ModelResponse(parts=[TextPart(FINAL)])
            i = session_of(str(next(p for p in parts if isinstance(p, UserPromptPart)).content))
            args = {"item_id": i, "new_price": price_for(i)}
            return ModelResponse(parts=[ToolCallPart("update_price", args, tool_call_id=f"call_{i}_1")])

        self.agent: Any = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])

        @self.agent.tool_plain(description=DESCRIPTION, requires_approval=True)
        async def update_price(item_id: int, new_price: float) -> dict[str, Any]:
            return erp.update_price(item_id, new_price)

        self.conn = connect(state)
        self.conn.execute("CREATE TABLE history (session_id TEXT PRIMARY KEY, messages BLOB NOT NULL)")

    def save(self, sid: str, messages: list[Any]) -> None:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        upsert = "INSERT INTO history VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages"
        self.conn.execute(upsert, (sid, ModelMessagesTypeAdapter.dump_json(messages)))

    def load(self, sid: str) -> list[Any]:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        row = self.conn.execute("SELECT messages FROM history WHERE session_id = ?", (sid,)).fetchone()
        return list(ModelMessagesTypeAdapter.validate_json(row[0]))

    async def drive(self, sid: str, **kwargs: Any) -> Any:
        """One run, committing before every model request (with it) and at the end; returns the output."""
        from pydantic_ai import Agent

        async with self.agent.iter(**kwargs) as run:
            async for node in run:
                if Agent.is_model_request_node(node):
                    messages = run.all_messages()  # in 2.68 the node's request is not in it yet
                    self.save(sid, messages if any(m is node.request for m in messages) else [*messages, node.request])
            self.save(sid, run.all_messages())
            return run.result.output

    async def propose(self, i: int) -> tuple[str, str]:
        from pydantic_ai import DeferredToolRequests

        sid = f"s{i}"
        out = await self.drive(sid, user_prompt=MESSAGE.format(i, i))
        if not isinstance(out, DeferredToolRequests) or len(out.approvals) != 1:
            raise AssertionError(f"session {i} did not pause for approval: {out!r}")
        return sid, out.approvals[0].tool_call_id

    async def approve(self, sid: str, call_id: str) -> str:
        from pydantic_ai import DeferredToolResults

        results = DeferredToolResults(approvals={call_id: True})
        return str(await self.drive(sid, message_history=self.load(sid), deferred_tool_results=results))

    def transcript(self, sid: str) -> tuple[int, str]:
        from pydantic_ai.messages import ModelResponse, TextPart

        messages = self.load(sid)
        last = messages[-1]
        ok = isinstance(last, ModelResponse) and isinstance(last.parts[-1], TextPart)
        return len(messages), last.parts[-1].content if ok else repr(last)

    def close(self) -> None:
        self.conn.close()


# ---- LangGraph ------------------------------------------------------------------------------------


class _GraphPeer:
    """What both LangGraph peers share: a compiled graph over ``SqliteSaver`` on the state DB, one
    thread per session, ``durability="sync"``; *propose* returns the interrupt id, *approve* resumes
    that interrupt by its id (``Command(resume={interrupt_id: decision})``), which loads the
    thread's latest checkpoint."""

    def __init__(self, state: Path, decision: Any) -> None:
        self.model_calls = 0
        self.decision = decision  # the resume value for the interrupt
        self.conn = connect(state, check_same_thread=False)
        self.conn.isolation_level = "DEFERRED"  # SqliteSaver commits its own transactions
        self.graph: Any = None

    def saver(self) -> Any:
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(self.conn)

    @staticmethod
    def tool(erp: Erp, gate: Any = None) -> Any:
        """W2's ``update_price``; ``gate(item_id, new_price)`` runs first and may stop it."""
        from langchain_core.tools import StructuredTool

        def update_price(item_id: int, new_price: float) -> dict[str, Any]:
            if gate is not None and not gate(item_id, new_price):
                return {"item_id": item_id, "status": "rejected"}
            return erp.update_price(item_id, new_price)

        return StructuredTool.from_function(update_price, name="update_price", description=DESCRIPTION)

    @staticmethod
    def config(sid: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": sid}}

    async def propose(self, i: int) -> tuple[str, str]:
        sid = f"s{i}"
        request = {"messages": [{"role": "user", "content": MESSAGE.format(i, i)}]}
        out = self.graph.invoke(request, self.config(sid), durability="sync")
        interrupts = out.get("__interrupt__") or []
        if len(interrupts) != 1:
            raise AssertionError(f"session {i} did not pause for approval: {out!r}")
        return sid, str(interrupts[0].id)

    async def approve(self, sid: str, interrupt_id: str) -> str:
        from langgraph.types import Command

        out = self.graph.invoke(Command(resume={interrupt_id: self.decision}), self.config(sid), durability="sync")
        return str(out["messages"][-1].content)

    def transcript(self, sid: str) -> tuple[int, str]:
        messages = self.graph.get_state(self.config(sid)).values["messages"]
        return len(messages), str(messages[-1].content)

    def close(self) -> None:
        self.conn.close()


class LangGraphAgentPeer(_GraphPeer):
    """W2.md's configuration: langchain's ``create_agent`` with ``HumanInTheLoopMiddleware``."""

    def __init__(self, state: Path, erp: Erp) -> None:
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        super().__init__(state, {"decisions": [{"type": "approve"}]})  # the middleware's HITLResponse (batched)
        peer = self

        class ScriptedChatModel(BaseChatModel):
            """W2's model: stateless, scripted; tools bound are accepted and not used."""

            @property
            def _llm_type(self) -> str:
                return "w2-scripted"

            def _generate(
                self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
            ) -> ChatResult:
                peer.model_calls += 1
                if any(isinstance(m, ToolMessage) for m in messages):
                    reply = AIMessage(content=FINAL)
                else:
                    i = session_of(str(messages[0].content))
                    args = {"item_id": i, "new_price": price_for(i)}
                    call = {"name": "update_price", "args": args, "id": f"call_{i}_1"}
                    reply = AIMessage(content="", tool_calls=[call])
                return ChatResult(generations=[ChatGeneration(message=reply)])

            def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
                return self

        self.graph = create_agent(
            ScriptedChatModel(),
            tools=[self.tool(erp)],
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"update_price": True})],
            checkpointer=self.saver(),
        )


class LangGraphPlainPeer(_GraphPeer):
    """A lighter configuration than W2.md's: a plain ``StateGraph`` with ``interrupt()`` in the tool."""

    def __init__(self, state: Path, erp: Erp) -> None:
        from langchain_core.messages import AIMessage, ToolMessage
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition
        from langgraph.types import interrupt

        super().__init__(state, "approve")

        def model(state: MessagesState) -> dict[str, Any]:
            self.model_calls += 1
            messages = state["messages"]
            if any(isinstance(m, ToolMessage) for m in messages):
                return {"messages": [AIMessage(content=FINAL)]}
            i = session_of(str(messages[0].content))
            call = {"name": "update_price", "args": {"item_id": i, "new_price": price_for(i)}, "id": f"call_{i}_1"}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}

        def gate(item_id: int, new_price: float) -> bool:
            args = {"item_id": item_id, "new_price": new_price}
            return bool(interrupt({"tool": "update_price", "args": args}) == "approve")

        builder = StateGraph(MessagesState)
        builder.add_node("model", model)
        builder.add_node("tools", ToolNode([self.tool(erp, gate)]))
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", tools_condition)
        builder.add_edge("tools", "model")
        self.graph = builder.compile(checkpointer=self.saver())


# ---- the timing run --------------------------------------------------------------------------------


class Loops:
    """W2's timing loops over a runner (``propose(i)`` -> (session, approval id); ``approve(session,
    id)`` -> the answer; ``model_calls``): 5 warm-ups, then every propose, then every approve in
    the same order. Shared with tether's side (bench/w2.py).

    Before the timed loops the objects of the runner's start-up are collected and frozen out of
    the GC (``gc.freeze()``, as tether's server does at start-up), for every framework alike:
    otherwise the one full collection that start-up's leftovers bring due (~50 ms over ~80,000
    objects for tether, more for the peers) lands in some runs' 200 sessions and not in others'."""

    def __init__(self) -> None:
        self.warm: list[tuple[Any, Any]] = []
        self.proposals: list[tuple[Any, Any]] = []
        self.propose_us: list[float] = []
        self.approve_us: list[float] = []
        self.cpu_us = 0.0

    async def run(self, runner: Any, sessions: int, label: str) -> Loops:
        self.warm = [await runner.propose(i) for i in range(-WARMUPS, 0)]
        for sid, approval in self.warm:
            await runner.approve(sid, approval)
        runner.model_calls = 0
        gc.collect()
        gc.freeze()
        try:
            await self._timed(runner, sessions, label)
        finally:
            gc.unfreeze()
        if runner.model_calls != 2 * sessions:
            raise AssertionError(f"{label}: {runner.model_calls} model calls for {sessions} sessions")
        return self

    async def _timed(self, runner: Any, sessions: int, label: str) -> None:
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        for i in range(sessions):
            t = time.perf_counter()
            self.proposals.append(await runner.propose(i))
            self.propose_us.append((time.perf_counter() - t) * 1e6)
        for sid, approval in self.proposals:
            t = time.perf_counter()
            answer = await runner.approve(sid, approval)
            self.approve_us.append((time.perf_counter() - t) * 1e6)
            if answer != FINAL:
                raise AssertionError(f"{label}: approve answered {answer!r}")
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu_us = (cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime) * 1e6 / sessions

    def row(self, state: Path, sessions: int) -> dict[str, Any]:
        """The timing row; the state DB is checkpointed (TRUNCATE) before its size is taken."""
        conn = sqlite3.connect(state)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        return {
            "sessions": sessions,
            "propose_p50_us": round(statistics.median(self.propose_us)),
            "propose_p95_us": round(pct(self.propose_us, 0.95)),
            "approve_p50_us": round(statistics.median(self.approve_us)),
            "approve_p95_us": round(pct(self.approve_us, 0.95)),
            "cpu_us_per_session": round(self.cpu_us),
            "bytes_per_session": round(state.stat().st_size / (sessions + WARMUPS)),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }


PEER_CLASSES: dict[str, Any] = {
    "pydantic-ai": PydanticAIPeer,
    "langgraph": LangGraphAgentPeer,
    "langgraph-plain": LangGraphPlainPeer,
}


async def timing(name: str, folder: Path, sessions: int) -> dict[str, Any]:
    state = folder / "state.db"
    erp = Erp(folder / "erp.db", sessions)
    peer = PEER_CLASSES[name](state, erp)
    try:
        loops = await Loops().run(peer, sessions, name)
        finished = {peer.transcript(sid) for sid, _ in [*loops.warm, *loops.proposals]}
        if finished != {(TRANSCRIPT, FINAL)}:
            raise AssertionError(f"{name}: transcripts {sorted(finished)[:3]}")
        erp.check(sessions)
    finally:
        peer.close()
        erp.close()
    return {"framework": name, **loops.row(state, sessions)}


def run_peer(name: str, folder: Path, sessions: int) -> dict[str, Any]:
    """W2's timing run of one peer in this process, its state DB and ERP created in ``folder``."""
    if name not in PEERS:
        raise ValueError(f"{name} is not installed (uv sync --group bench); installed: {PEERS}")
    return asyncio.run(timing(name, Path(folder), sessions))


def main() -> int:
    parser = argparse.ArgumentParser(description="Workload W2's timing run on the peers (pydantic-ai, LangGraph).")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--peer", action="append", choices=tuple(PEER_MODULES), help="this peer only (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for name in args.peer or PEERS:
        with tempfile.TemporaryDirectory(prefix=f"w2-{name}-") as tmp:
            t = time.perf_counter()
            rows.append(run_peer(name, Path(tmp), args.sessions))
            wall = time.perf_counter() - t
        if not args.json:
            r = rows[-1]
            print(
                f"{name}: propose p50 {r['propose_p50_us']} µs p95 {r['propose_p95_us']} µs | approve p50 "
                f"{r['approve_p50_us']} µs p95 {r['approve_p95_us']} µs | CPU {r['cpu_us_per_session']} µs/session | "
                f"{r['bytes_per_session']} B/session | peak RSS {r['peak_rss_mb']} MB | {wall:.1f} s"
            )
    if args.json:
        print(json.dumps(rows, indent=1))
    elif not PEERS:
        print("no peer installed (uv sync --group bench)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
