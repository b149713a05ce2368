"""The ERP assistant pack (seed 003): ``tether.packs.erp.pack``.

It talks to the ERP over HTTP only (``TETHER_ERP_BASE_URL``; by default the demo ERP mounted in
this server at ``/erp``), resolves ERP tokens to identities, and reads the ERP database's views
through a read-only connection for ``query_data`` and ``kg_search``. Its own two tables (the
question → SQL cache, the SQL error history) live in tether's database under an Alembic history of
their own (``migrations/``, version table ``erp_alembic_version``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path
from typing import Any

from tether.pack import (
    Pack,
    PackEnv,
    PackMigrations,
    ReadOnlyExecutor,
    create_read_engine,
    normalize_url,
)
from tether.packs.erp.adapters import open_client
from tether.packs.erp.breaker import BreakerMetrics
from tether.packs.erp.doctor import erp_checks
from tether.packs.erp.forms import build_collect_form
from tether.packs.erp.identity import ErpIdentityProvider
from tether.packs.erp.kg import KnowledgeGraph
from tether.packs.erp.messages import MESSAGES, NO_ACCESS
from tether.packs.erp.op_executor import ErpOpExecutor
from tether.packs.erp.planner_rules import extract, extract_off_demo
from tether.packs.erp.prompt import RULES, domain_map
from tether.packs.erp.proposals import build_propose_write
from tether.packs.erp.query_data import QueryService
from tether.packs.erp.ref_search import build_ref_router
from tether.packs.erp.revision import check_revision, revise
from tether.packs.erp.routes import build_router
from tether.packs.erp.settings import ErpPackSettings
from tether.packs.erp.state import QueryState
from tether.packs.erp.summaries import build_summarize
from tether.packs.erp.tools import Erp, build_tools
from tether.packs.erp.understanding import build_read_question

log = logging.getLogger("tether.erp")
SKILLS = Path(__file__).parent / "skills"
MIGRATIONS = Path(__file__).parent / "migrations"
VERSION_TABLE = "erp_alembic_version"
HEAD = "erp0001"
TRYTON_URL = "http://127.0.0.1:8720/"  # `tether tryton serve`'s default  # the newest revision in migrations/versions (a test keeps the two equal)


def open_erp(env: PackEnv, settings: ErpPackSettings | None = None) -> Erp:
    settings = settings or ErpPackSettings()
    client = open_client(settings, env.public_url)
    executor = ReadOnlyExecutor(
        str(normalize_url(settings.query_url or settings.database_url)),
        timeout_s=settings.query_timeout_s,
        max_rows=settings.query_max_rows,
    )
    state = QueryState(create_read_engine(normalize_url(env.settings.database_url), immediate=True))
    query = QueryService(executor, state, max_rows=settings.query_max_rows)
    identity = ErpIdentityProvider(client, cache_s=settings.me_cache_s)
    return Erp(settings, client, query, KnowledgeGraph(executor), identity)


# what reads the ERP's database directly: never on Tryton, whose rows only Tryton's rights may hand out
DIRECT_SQL_TOOLS = frozenset({"query_data", "kg_search"})


def _tools(erp: Erp) -> list[Any]:
    tools = build_tools(erp)
    if not erp.queryable:  # aggregates from the rows Tryton hands out, not from its tables
        tools = [*(t for t in tools if t.name not in DIRECT_SQL_TOOLS), build_summarize(erp)]
    return tools


def pack(env: PackEnv) -> Pack:
    erp = open_erp(env)
    provider = erp.identity
    domains: list[list[dict[str, Any]]] = [[]]  # the L1 map's rows, read at startup

    async def startup(services: Any) -> None:
        services.metrics.registry.register(BreakerMetrics(erp.client.breaker))  # /metrics shows its state
        if not erp.queryable:
            return  # the domain map reads the demo ERP's database: Tryton's is only read through Tryton
        try:
            domains[0] = await asyncio.to_thread(erp.kg.domains)
        except Exception as exc:  # the ERP database is elsewhere or not ready: run without the map
            log.warning("ERP domain map unavailable (%s); the prompt goes without it", type(exc).__name__)

    async def shutdown(_services: Any) -> None:
        await erp.client.aclose()
        await erp.query.executor.aclose()
        erp.query.state.engine.dispose()

    return Pack(
        name="erp",
        tools=[*_tools(erp), build_read_question(erp), build_collect_form(erp), build_propose_write(erp)],
        skill_dirs=[SKILLS],
        extractors=[extract if erp.settings.kind == "demo" else extract_off_demo],
        startup=startup,
        shutdown=shutdown,
        routers=[build_router(erp, provider), build_ref_router(erp.client)],
        identity_providers=[provider],
        migrations=PackMigrations(MIGRATIONS, env.settings.database_url, VERSION_TABLE, HEAD),
        prompt_sections=[lambda: RULES, lambda grants: domain_map(domains[0], grants)],
        audience=(provider.name,),
        op_executors=[
            ErpOpExecutor(erp.client, functools.partial(revise, erp), functools.partial(check_revision, erp))
        ],
        messages=MESSAGES,
        denied_codes=frozenset({NO_ACCESS}),
        doctor=[functools.partial(erp_checks, erp.settings, env.public_url)],
    )
