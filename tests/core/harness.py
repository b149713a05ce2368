"""A real runtime for core tests: SqlStore on a SQLite file, in-process bus, a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from tether.core.ports import ChatModel, Clock, EventBus
from tether.core.replay import Replayer
from tether.core.runtime import Runtime
from tether.core.session import AgentSession, Owner, Status
from tether.core.skills import Skill, SkillRegistry
from tether.core.telemetry import Telemetry
from tether.core.tools import AsyncJobStarted, Interaction, Tool, ToolContext, tool
from tether.core.turn import Limits, TurnDeps
from tether.factory import build_runtime
from tether.models.scripted import ScriptedModel
from tether.store.sql_store import SqlStore

ALICE = Owner("alice", "t1")
BOB = Owner("bob", "t1")


@dataclass
class Counters:
    runs: dict[str, int] = field(default_factory=dict)
    tickets: list[Any] = field(default_factory=list)

    def hit(self, name: str) -> None:
        self.runs[name] = self.runs.get(name, 0) + 1


def make_tools(counters: Counters) -> list[Tool]:
    @tool()
    async def add(ctx: ToolContext, a: int, b: int) -> Any:
        """Add two integers."""
        counters.hit("add")
        return {"sum": a + b}

    @tool()
    async def echo(ctx: ToolContext, text: str) -> Any:
        """Echo a text."""
        counters.hit("echo")
        return {"text": text, "handle_id": f"h-{text}-0001"}

    @tool(is_async=True)
    async def slow_job(ctx: ToolContext, label: str) -> Any:
        """Start an external job that calls back later."""
        counters.hit("slow_job")
        ticket = await ctx.async_job()
        counters.tickets.append(ticket)
        return AsyncJobStarted(ticket)

    @tool()
    async def boom(ctx: ToolContext) -> Any:
        """Always raises."""
        counters.hit("boom")
        raise RuntimeError("disk on fire")

    @tool(timeout_s=0.2)
    async def hang(ctx: ToolContext) -> Any:
        """Sleeps past its timeout."""
        counters.hit("hang")
        await asyncio.sleep(5)

    @tool()
    async def ask(ctx: ToolContext, question: str) -> Any:
        """Ask the user."""
        return Interaction("question", {"question": question})

    @tool()
    async def propose(ctx: ToolContext, change: str) -> Any:
        """Propose a write."""
        return Interaction("proposal", {"change": change})

    @tool()
    async def whoami(ctx: ToolContext) -> Any:
        """Uses the credential without revealing it."""
        return {"user": ctx.owner.user_id, "has_credential": bool(ctx.credential)}

    @tool()
    async def hidden(ctx: ToolContext) -> Any:
        """Not in the test skill."""
        counters.hit("hidden")
        return {}

    return [add, echo, slow_job, boom, hang, ask, propose, whoami, hidden]


TEST_SKILL = Skill(
    name="test-skill",
    description="Everything the tests need.",
    allowed_tools=("add", "echo", "slow_job", "boom", "hang", "ask", "propose", "whoami"),
    body="Use the tools.",
    keywords=("test",),
)
EXTRA_SKILL = Skill(name="extra", description="Has the hidden tool.", allowed_tools=("hidden",), body="Hidden.")


@dataclass
class Harness:
    runtime: Runtime
    store: SqlStore
    model: ScriptedModel
    counters: Counters
    replayer: Replayer
    deps: TurnDeps
    bus: EventBus

    async def events(self, session_id: str) -> list[Any]:
        return await self.store.events_after(session_id, 0, 10_000)

    async def types(self, session_id: str) -> list[str]:
        return [e.type for e in await self.events(session_id)]

    async def callback(self, index: int, status: str = "SUCCEEDED", payload: Any = None, error: str | None = None):  # type: ignore[no-untyped-def]
        ticket = self.counters.tickets[index]
        result = await self.runtime.callback(ticket.job_id, ticket.token, status, payload, error)
        await self.runtime.drain()
        return result

    async def start(self, message: str = "run the test") -> AgentSession:
        return await self.runtime.start_session(ALICE, message, {})

    async def load(self, session_id: str) -> AgentSession:
        return await self.store.load(session_id)


@asynccontextmanager
async def harness(
    url: str,
    replies: list[Any],
    limits: Limits | None = None,
    skills: list[Skill] | None = None,
    router_model: Any = None,
    credential: str | None = None,
    tools: list[Tool] | None = None,
    summaries: list[Any] | None = None,
    model: ChatModel | None = None,
    telemetry: Telemetry | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[Harness]:
    """A runtime built as the server builds it (``build_runtime``); ``model`` replaces the scripted
    one (an adapter against a local endpoint), whose ``replies`` are then unused."""
    store = SqlStore(url, lease_seconds=30, clock=clock)  # one clock for the store and the core
    await store.open()
    counters = Counters()
    scripted = ScriptedModel(replies, summaries=summaries)
    runtime = build_runtime(
        store,
        store,
        model or scripted,
        tools if tools is not None else make_tools(counters),
        SkillRegistry(skills if skills is not None else [TEST_SKILL, EXTRA_SKILL]),
        limits=limits or Limits(model_backoff_s=0.01),
        callback_url="http://127.0.0.1:1/api/agent/tool-callback",
        credential=credential,
        router_model=router_model,
        telemetry=telemetry,
        clock=clock,
    )
    deps = runtime.deps
    try:
        yield Harness(runtime, store, scripted, counters, Replayer(runtime.turns, store), deps, deps.bus)
        await runtime.drain()
    finally:
        await store.close()


def tool_messages(s: AgentSession) -> list[dict[str, Any]]:
    return [m for m in s.transcript if m["role"] == "tool"]


def assert_valid_transcript(s: AgentSession) -> None:
    """Every assistant tool call is answered by exactly one tool message, right after it."""
    assert_valid_messages(s.transcript)


def assert_valid_messages(msgs: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered right after it, and no tool message is an orphan."""
    i = 0
    while i < len(msgs):
        calls = msgs[i].get("tool_calls") or []
        assert msgs[i].get("role") != "tool", f"tool message at {i} answers no call before it"
        if calls:
            answers = [m.get("tool_call_id") for m in msgs[i + 1 : i + 1 + len(calls)]]
            assert answers == [c["id"] for c in calls], f"calls at {i} answered by {answers}"
            i += len(calls)
        i += 1


__all__ = ["ALICE", "BOB", "Status", "assert_valid_messages", "assert_valid_transcript", "harness", "tool_messages"]
