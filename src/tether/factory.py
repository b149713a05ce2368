"""The one factory of the runtime: what the server (``wiring.build_services``), the tests and the
benchmarks build it with. Imports the core, the in-process bus and nothing of the server (no web
framework, no telemetry exporter, no pack loading), so a benchmark measures the runtime alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tether.bus import InProcessBus
from tether.core.pipeline import AuditSink, ToolPipeline
from tether.core.ports import (
    ChatModel,
    Clock,
    DslStore,
    EventBus,
    NoBudget,
    OpQueue,
    SessionStore,
    SystemClock,
    UsageBudget,
)
from tether.core.prompt import load_skill_tool
from tether.core.questions import ask_user_tool
from tether.core.runtime import Runtime
from tether.core.skills import SkillRegistry, SkillRouter
from tether.core.telemetry import NoTelemetry, Telemetry
from tether.core.tools import Tool, ToolRegistry
from tether.core.turn import Limits, TurnDeps


def build_runtime(
    store: SessionStore,
    dsl_store: DslStore,
    model: ChatModel,
    tools: Iterable[Tool],
    skills: SkillRegistry,
    *,
    bus: EventBus | None = None,
    limits: Limits | None = None,
    callback_url: str = "",
    credential: str | None = None,
    router_model: ChatModel | None = None,
    audit: AuditSink | None = None,
    telemetry: Telemetry | None = None,
    budget: UsageBudget | None = None,
    prompt_sections: list[tuple[tuple[str, ...], Callable[[frozenset[str]], str]]] | None = None,
    ops: Callable[[Runtime], OpQueue] | None = None,
    clock: Clock | None = None,
) -> Runtime:
    """The runtime, as the server, the tests and the benchmarks build it: the packs' ``tools``
    plus the built-in ``load_skill`` and ``ask_user`` (registered here, and only here), the
    pipeline they run through, the turns' dependencies and the skill router (a model routes skills
    when ``router_model`` is given). ``ops`` makes the op queue proposing tools record their drafts
    in (it is given the runtime, whose sessions the ops' outcomes reach)."""
    registry = ToolRegistry(list(tools))
    registry.register(load_skill_tool(skills))
    registry.register(ask_user_tool())
    limits = limits or Limits()
    telemetry = telemetry or NoTelemetry()
    budget = budget or NoBudget()
    clock = clock or SystemClock()
    pipeline = ToolPipeline(
        registry,
        default_timeout_s=limits.tool_timeout_s,
        audit=audit,
        telemetry=telemetry,
        budget=budget,
        clock=clock,
    )
    deps = TurnDeps(
        store,
        bus or InProcessBus(),
        model,
        skills,
        pipeline,
        limits,
        callback_url=callback_url,
        credential=credential,
        prompt_sections=prompt_sections,
        telemetry=telemetry,
        budget=budget,
        clock=clock,
    )
    router = SkillRouter(skills, router_model, use_model=router_model is not None)
    return Runtime(deps, router, dsl_store, ops=ops)
