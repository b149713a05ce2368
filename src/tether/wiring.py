"""Builds the runtime from settings: store, bus, packs, tools, skills, model, router, pipeline.

Shared by the HTTP app, the CLI and the Python API; imports no web framework.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from tether.abuse import AbuseLimits
from tether.bus import InProcessBus
from tether.core.error_messages import DENIED, MESSAGES
from tether.core.ports import (
    ChatModel,
    Closable,
    SystemClock,
)
from tether.core.replay import Replayer
from tether.core.runtime import Runtime
from tether.core.skills import SkillRegistry, load_skills
from tether.core.tools import ToolRegistry
from tether.core.turn import Limits, TurnDeps
from tether.factory import build_runtime
from tether.identity import DevTokenProvider, IdentityProvider, ProviderChain
from tether.models.planner import PlannerModel
from tether.ops.service import OpService
from tether.ops.store import SqlOpStore
from tether.pack import Pack, PackEnv, load_packs, upgrade_pack
from tether.settings import Settings
from tether.store.audit import SqlAuditLog
from tether.store.sql_store import SqlStore
from tether.store.writer import StoreError
from tether.telemetry import Metrics, Tracing, build_telemetry

log = logging.getLogger("tether")


def check_schemas(services: Services) -> None:
    """``ConfigError`` when tether's database or a loaded pack's is at a schema revision this code
    does not know (a newer version migrated it). Run before a server starts, so that the refusal
    is one line rather than a start-up traceback around the same message (``start`` refuses too)."""
    from tether.pack_migrate import check_pack
    from tether.store.migrate import check

    check(services.settings.database_url)
    for pack in services.packs:
        if pack.migrations is not None:
            check_pack(pack.migrations)


@dataclass
class Services:
    settings: Settings
    store: SqlStore
    bus: InProcessBus
    registry: ToolRegistry
    skills: SkillRegistry
    model: ChatModel
    runtime: Runtime
    replayer: Replayer
    packs: list[Pack]
    deps: TurnDeps
    audit: SqlAuditLog
    ops: OpService
    abuse: AbuseLimits  # login lock-outs and the users' budgets (tether.abuse)
    metrics: Metrics = field(default_factory=Metrics)
    tracing: Tracing | None = None
    _sweeper: asyncio.Task[None] | None = None
    stopping: bool = False  # a graceful shutdown began: not ready for new traffic

    async def start(self, *, sweep: bool = True) -> None:
        await self.store.open()
        await self.bus.start()
        for pack in self.packs:  # each pack's own tables, on its own database, before its startup
            if pack.migrations is not None:
                await asyncio.to_thread(upgrade_pack, pack.migrations)
        for pack in self.packs:
            if pack.startup is not None:
                await pack.startup(self)
        recovered = await self.runtime.recover()
        if recovered:
            log.warning("recovering %d session(s) whose runner stopped", recovered)
        if sweep:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def stop(self) -> None:
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        for pack in self.packs:
            if pack.shutdown is not None:
                await pack.shutdown(self)
        await self.runtime.shutdown(self.settings.shutdown_grace_s)  # finish, or hand back
        await self.bus.stop()
        if isinstance(self.model, Closable):
            await self.model.aclose()
        await self.store.close()
        self.audit.close()
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.shutdown)  # flushes the spans still queued
        self.ops.store.close()
        self.abuse.close()

    async def not_ready(self) -> str | None:
        """Why this replica should get no traffic now (``/api/ready``), or None: shutting down,
        the database unreachable, or Redis unreachable when one is configured."""
        if self.stopping:
            return "shutting down"
        try:
            await asyncio.wait_for(self.store.ping(), 5.0)
        except (StoreError, TimeoutError) as e:
            return f"the database is not reachable: {e if isinstance(e, StoreError) else 'timed out'}"
        return await self.bus.check()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_s)
            try:
                await self.runtime.expire_jobs()
                await self.runtime.recover()
                await self.ops.sweep()
            except Exception:  # keep sweeping; the next round retries
                log.exception("sweep failed")


def by_grants(section: Callable[..., str]) -> Callable[[frozenset[str]], str]:
    """A pack's prompt section as the turn calls it, with the caller's grants (a section that
    takes no argument ignores them)."""
    takes = [
        p
        for p in inspect.signature(section).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if takes:
        return section
    return lambda _grants: section()


def identity_chain(services: Services) -> ProviderChain:
    """The dev tokens, then each pack's providers in pack order: how every entry point (HTTP, MCP)
    turns a bearer token into an identity."""
    providers: list[IdentityProvider] = [DevTokenProvider(services.settings.dev_tokens)]
    return ProviderChain(providers + [p for pack in services.packs for p in pack.identity_providers])


def build_bus(settings: Settings, replica_id: str) -> InProcessBus:
    """In-process wake-ups, plus Redis pub/sub between replicas when ``TETHER_REDIS_URL`` is set."""
    if settings.redis_url is None:
        return InProcessBus()
    from tether.redis_bus import RedisBus

    return RedisBus(settings.redis_url.get_secret_value(), replica_id)


def build_model(settings: Settings, packs: list[Pack]) -> ChatModel:
    if settings.model == "planner":
        messages = MESSAGES | {code: text for p in packs for code, text in p.messages.items()}
        denied = DENIED.union(*(p.denied_codes for p in packs))
        return PlannerModel(
            [e for p in packs for e in p.extractors], stream=settings.planner_stream, messages=messages, denied=denied
        )
    if settings.model == "openai":
        from tether.models.openai_compat import build_openai_model

        key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
        return build_openai_model(
            provider=settings.model_provider,
            base_url=settings.model_base_url,
            model=settings.model_name,
            api_key=key,
            stream=settings.model_stream,
            timeout_s=settings.model_timeout_s,
            thinking=settings.model_thinking,
        )
    raise ValueError(f"TETHER_MODEL must be 'planner' or 'openai', not {settings.model!r}")


def build_services(settings: Settings, *, model: ChatModel | None = None, packs: list[Pack] | None = None) -> Services:
    clock = SystemClock()  # one source of time for the store and the core
    store = SqlStore(settings.database_url, lease_seconds=settings.lease_s, clock=clock, replica_id=settings.replica_id)
    bus = build_bus(settings, store.replica_id)
    env = PackEnv(settings, settings.public_url.rstrip("/"))
    packs = packs if packs is not None else load_packs(settings.pack_refs, env)
    skills, issues = load_skills([d for p in packs for d in p.skill_dirs])
    skill_registry = SkillRegistry(skills, issues)
    for issue in issues:
        log.warning("skill %s is invalid and was not loaded: %s", issue.path, issue.reason)
    chat_model = model or build_model(settings, packs)
    limits = Limits(
        max_rounds=settings.max_rounds,
        max_tool_calls=settings.max_tool_calls,
        turn_timeout_s=settings.turn_timeout_s,
        tool_timeout_s=settings.tool_timeout_s,
        model_retries=settings.model_retries,
        model_backoff_s=settings.model_backoff_s,
        job_timeout_s=settings.job_timeout_s,
        context_tokens=settings.context_tokens,
    )
    audit = SqlAuditLog(settings.database_url, store)  # rows ride the store's group commit
    telemetry, metrics, tracing = build_telemetry(settings)
    abuse = AbuseLimits.from_settings(settings, metrics.refused)
    routing = settings.skill_routing
    use_model = routing == "model" or (routing == "auto" and chat_model.name != "planner")
    executors = {e.name: e for p in packs for e in p.op_executors}

    def op_service(runtime: Runtime) -> OpService:
        op_store = SqlOpStore(settings.database_url, store)
        return OpService(
            op_store, runtime, audit, executors, settings.op_ttl_s, settings.op_lease_s, telemetry=telemetry
        )

    runtime = build_runtime(
        store,
        store,
        chat_model,
        [t for p in packs for t in p.tools],
        skill_registry,
        bus=bus,
        limits=limits,
        callback_url=settings.public_url.rstrip("/") + "/api/agent/tool-callback",
        router_model=chat_model if use_model else None,
        audit=audit,
        telemetry=telemetry,
        budget=abuse.budget,
        prompt_sections=[(p.audience, by_grants(section)) for p in packs for section in p.prompt_sections],
        ops=op_service,
        clock=clock,
    )
    ops = runtime.ops
    assert isinstance(ops, OpService)
    if settings.approval_policy:  # the approval gate between an op's confirm and its execution
        from tether.ops.approvals.wiring import install_approvals

        install_approvals(ops, settings.approval_policy)
    return Services(
        settings,
        store,
        bus,
        runtime.deps.pipeline.registry,
        skill_registry,
        chat_model,
        runtime,
        Replayer(runtime.turns, store),
        packs,
        runtime.deps,
        audit,
        ops,
        abuse,
        metrics=metrics,
        tracing=tracing,
    )
