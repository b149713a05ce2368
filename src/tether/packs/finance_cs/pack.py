"""The finance customer-support pack (seed 000): ``TETHER_PACKS=tether.packs.finance_cs.pack``.

Its own tables (``cs_*``: handles, jobs, analyses, reports) have an Alembic history of their own
(``migrations/``, version table ``finance_cs_alembic_version``) that tether runs on the pack's
database (``TETHER_FINANCE_DATABASE_URL``) at start-up and in ``tether db upgrade``. At start-up
the pack also creates ``customer_session`` where it is missing (the business table it reads; a
team's own is left alone), seeds the demo data set when the embedded default database is empty
(``TETHER_FINANCE_SEED``), and starts the analysis worker inside the server unless
``TETHER_FINANCE_WORKER=off`` (then ``tether worker`` runs it apart).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from tether.pack import Pack, PackEnv, PackMigrations, create_read_engine, normalize_url, upgrade_pack
from tether.packs.finance_cs.data import CustomerSessionRepo, create_schema
from tether.packs.finance_cs.generator import generate
from tether.packs.finance_cs.planner_rules import extract
from tether.packs.finance_cs.settings import FinanceSettings
from tether.packs.finance_cs.state import FinanceState
from tether.packs.finance_cs.tools import Finance, build_tools
from tether.packs.finance_cs.worker import AnalysisWorker

log = logging.getLogger("tether.finance")
SKILLS = Path(__file__).parent / "skills"
MIGRATIONS = Path(__file__).parent / "migrations"
HEAD = "cs0002"  # the newest revision in migrations/versions (a test keeps the two equal)
VERSION_TABLE = "finance_cs_alembic_version"


def migrations(settings: FinanceSettings) -> PackMigrations:
    """The pack's Alembic history, on the pack's own database."""
    return PackMigrations(MIGRATIONS, settings.database_url, VERSION_TABLE, HEAD)


def open_finance(public_url: str, settings: FinanceSettings | None = None) -> Finance:
    settings = settings or FinanceSettings()
    url = normalize_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database:
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    reads, writes = create_read_engine(url), create_read_engine(url, immediate=True)
    return Finance(settings, CustomerSessionRepo(reads), FinanceState(writes), public_url)


def prepare(fin: Finance) -> int:
    """Migrate the pack's tables (quick when at head: the server has done it before ``startup``;
    ``tether worker`` and ``tether finance seed`` have not), create ``customer_session`` if it is
    missing, and seed the demo data when allowed and the table is empty. -> rows seeded."""
    upgrade_pack(migrations(fin.settings))
    create_schema(fin.repo.engine)
    if fin.settings.should_seed and fin.repo.count() == 0:
        log.info("seeding %d demo conversations", fin.settings.seed_rows)
        return generate(fin.repo.engine, rows=fin.settings.seed_rows, days=fin.settings.seed_days)
    return 0


def pack(env: PackEnv) -> Pack:
    fin = open_finance(env.settings.public_url)
    state: dict[str, Any] = {}

    async def startup(_services: Any) -> None:
        await asyncio.to_thread(prepare, fin)
        if fin.settings.worker == "inprocess":
            stop = asyncio.Event()
            state["stop"] = stop
            state["task"] = asyncio.get_running_loop().create_task(AnalysisWorker(fin).run(stop))

    async def shutdown(_services: Any) -> None:
        if "stop" in state:
            state["stop"].set()
            task = state["task"]
            done, _ = await asyncio.wait({task}, timeout=2.0)
            if not done:  # an analysis is running: leave it; its lease expires and it runs again
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        fin.repo.engine.dispose()
        fin.state.engine.dispose()

    from tether.packs.finance_cs.routes import build_router

    return Pack(
        name="finance_cs",
        tools=build_tools(fin),
        skill_dirs=[SKILLS],
        extractors=[extract],
        startup=startup,
        shutdown=shutdown,
        routers=[build_router(fin)],
        migrations=migrations(fin.settings),
    )
