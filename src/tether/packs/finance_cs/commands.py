"""The finance pack's commands: ``tether finance seed | index`` and ``tether worker``. tether's
command line finds them through the ``tether.commands`` entry point (``pyproject.toml``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

# the URL the pack's tools hand out for callbacks, as in `tether ask --url`
PUBLIC_URL = os.environ.get("TETHER_URL", "http://127.0.0.1:8000")


def add_commands(sub: Any) -> None:
    """Add ``finance`` and ``worker`` to tether's sub-commands (an argparse sub-parsers action)."""
    finance = sub.add_parser("finance", help="finance pack commands")
    fsub = finance.add_subparsers(dest="action", required=True)
    seed = fsub.add_parser("seed", help="generate the demo customer-session data set (TETHER_FINANCE_DATABASE_URL)")
    seed.add_argument("--rows", type=int, default=20_000)
    seed.add_argument("--days", type=int, default=180)
    seed.add_argument("--seed", type=int, default=7, help="random seed (same seed, same data)")
    seed.add_argument("--append", action="store_true", help="add rows to a table that is not empty")
    seed.set_defaults(fn=cmd_seed)
    index = fsub.add_parser("index", help="segment the conversations the keyword index lacks")
    index.add_argument("--rebuild", action="store_true", help="drop the index first (after a lexicon change)")
    index.set_defaults(fn=cmd_index)
    worker = sub.add_parser("worker", help="run the finance analysis worker in this process")
    worker.set_defaults(fn=cmd_worker)


def cmd_seed(args: argparse.Namespace) -> int:
    from tether.pack import upgrade_pack
    from tether.packs.finance_cs.data import create_schema
    from tether.packs.finance_cs.generator import generate
    from tether.packs.finance_cs.pack import migrations, open_finance

    fin = open_finance(PUBLIC_URL)
    upgrade_pack(migrations(fin.settings))
    create_schema(fin.repo.engine)
    existing = fin.repo.count()
    if existing and not args.append:
        print(f"customer_session already holds {existing} rows; pass --append to add more", file=sys.stderr)
        return 1
    written = generate(fin.repo.engine, rows=args.rows, days=args.days, seed=args.seed)
    print(f"wrote {written} conversations over {args.days} days to {fin.settings.database_url.split('@')[-1]}")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """Segment every conversation the finance keyword index lacks (all of them with --rebuild)."""
    from tether.pack import upgrade_pack
    from tether.packs.finance_cs import keyword_index
    from tether.packs.finance_cs.data import create_schema
    from tether.packs.finance_cs.pack import migrations, open_finance

    fin = open_finance(PUBLIC_URL)
    upgrade_pack(migrations(fin.settings))
    create_schema(fin.repo.engine)
    if args.rebuild:
        keyword_index.clear(fin.state.engine)
    written = keyword_index.index_pending(fin.state.engine)
    print(f"indexed {written} conversations in {fin.settings.database_url.split('@')[-1]}")
    return 0


def cmd_worker(_args: argparse.Namespace) -> int:
    """Run the finance analysis worker apart from the server (TETHER_FINANCE_WORKER=off there)."""
    import asyncio
    import signal

    from tether.packs.finance_cs.pack import open_finance, prepare
    from tether.packs.finance_cs.worker import AnalysisWorker

    fin = open_finance(PUBLIC_URL)
    prepare(fin)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print("analysis worker running; Ctrl-C to stop", flush=True)
        await AnalysisWorker(fin).run(stop)

    asyncio.run(main())
    return 0
