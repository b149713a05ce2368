"""The demo ERP's commands: ``tether erp serve | seed``. tether's command line finds them through
the ``tether.commands`` entry point (``pyproject.toml``), whether or not the ERP is embedded."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def add_commands(sub: Any) -> None:
    """Add ``erp`` to tether's sub-commands (an argparse sub-parsers action)."""
    erp = sub.add_parser("erp", help="the demo ERP (TETHER_ERP_DATABASE_URL)")
    esub = erp.add_subparsers(dest="action", required=True)
    serve = esub.add_parser("serve", help="run the demo ERP alone, under /erp")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8697)
    serve.set_defaults(fn=cmd_serve)
    seed = esub.add_parser("seed", help="create the ERP's tables and views and seed the demo company")
    seed.set_defaults(fn=cmd_seed)


def cmd_serve(args: argparse.Namespace) -> int:
    """The demo ERP as its own process, mounted under /erp like inside ``tether serve``."""
    from contextlib import asynccontextmanager

    import anyio
    import uvicorn
    from fastapi import FastAPI

    from tether.erp_demo import ErpDemo, ErpSettings
    from tether.erp_demo.settings import agent_key_of

    settings = ErpSettings()
    erp = ErpDemo(settings, agent_key=agent_key_of(settings.agent_key, embedded=False))
    if erp.agent_key is None:
        print(
            "! TETHER_ERP_AGENT_KEY is unset: a user's token alone can carry out that user's staged ops "
            "through /ai/execStaging; set the same key here and in tether",
            file=sys.stderr,
            flush=True,
        )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        counts = await anyio.to_thread.run_sync(erp.prepare)
        if counts:
            print(f"seeded the demo ERP: {sum(counts.values())} rows", flush=True)
        yield
        erp.close()

    app = FastAPI(title="tether demo ERP", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/erp", erp.asgi)
    where = erp.settings.database_url.split("@")[-1]
    print(f"demo ERP at http://{args.host}:{args.port}/erp (database {where})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=os.environ.get("TETHER_LOG_LEVEL", "info").lower())
    return 0


def cmd_seed(_args: argparse.Namespace) -> int:
    from tether.erp_demo import ErpDemo, ErpSettings

    erp = ErpDemo(ErpSettings())
    try:
        counts = erp.prepare()
    finally:
        erp.close()
    where = erp.settings.database_url.split("@")[-1]
    if not counts:
        print(f"the demo ERP at {where} is ready (already seeded, or TETHER_ERP_SEED=off)")
        return 0
    for table, n in counts.items():
        print(f"  {table:<22} {n:>6}")
    print(f"seeded the demo ERP at {where}: {sum(counts.values())} rows")
    return 0
