"""The finance customer-support pack (seed 000): ``TETHER_PACKS=tether.packs.finance_cs.pack``.

At start-up it creates its tables, seeds the demo data set when the embedded default database is
empty (``TETHER_FINANCE_SEED``), and starts the analysis worker inside the server unless
``TETHER_FINANCE_WORKER=off`` (then ``tether worker`` runs it apart).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from tether.pack import Pack, create_read_engine, normalize_url
from tether.packs.finance_cs.data import CustomerSessionRepo, create_schema
from tether.packs.finance_cs.generator import generate
from tether.packs.finance_cs.planner_rules import extract
from tether.packs.finance_cs.settings import FinanceSettings
from tether.packs.finance_cs.state import FinanceState
from tether.packs.finance_cs.tools import Finance, build_tools
from tether.packs.finance_cs.worker import AnalysisWorker

log = logging.getLogger("tether.finance")
SKILLS = Path(__file__).parent / "skills"


def open_finance(public_url: str, settings: FinanceSettings | None = None) -> Finance:
    settings = settings or FinanceSettings()
    url = normalize_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database:
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    reads, writes = create_read_engine(url), create_read_engine(url, immediate=True)
    return Finance(settings, CustomerSessionRepo(reads), FinanceState(writes), public_url)


def prepare(fin: Finance) -> int:
    """Create the tables; seed the demo data when allowed and the table is empty. -> rows seeded."""
    create_schema(fin.repo.engine)
    fin.state.create()
    if fin.settings.should_seed and fin.repo.count() == 0:
        log.info("seeding %d demo conversations", fin.settings.seed_rows)
        return generate(fin.repo.engine, rows=fin.settings.seed_rows, days=fin.settings.seed_days)
    return 0


def pack(env: dict[str, Any]) -> Pack:
    fin = open_finance(env["settings"].public_url)
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
    )
