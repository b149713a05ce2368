"""``tether serve | ask | replay | demo | db upgrade``: the command line.

``ask`` and ``replay`` talk to a running server over HTTP (``--url``, token ``--token``), so what
the terminal shows is exactly what any client sees on the event stream.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import httpx

from tether.progress import Progress, follow_session

DEFAULT_URL = os.environ.get("TETHER_URL", "http://127.0.0.1:8000")
DEFAULT_TOKEN = os.environ.get("TETHER_TOKEN", "dev-alice")


def _settings(args: argparse.Namespace) -> Any:
    from tether.settings import create_settings

    overrides: dict[str, Any] = {}
    if getattr(args, "port", None) and "TETHER_PUBLIC_URL" not in os.environ:
        overrides["public_url"] = f"http://{args.host}:{args.port}"
    return create_settings(**overrides)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from tether.app.main import create_app

    settings = _settings(args)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=settings.log_level.lower())
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    headers = {"Authorization": f"Bearer {args.token}"}
    context = json.loads(args.context) if args.context else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=30) as http:
        try:
            r = http.post(
                "/api/agent/sessions",
                params={"wait": "false"},
                json={"message": args.question, "globalContext": context},
            )
        except httpx.ConnectError:
            print(f"tether: no server at {args.url}; start one with `tether serve`", file=sys.stderr)
            return 2
        if r.status_code != 200:
            print(f"tether: {r.status_code} {r.json().get('error', r.text)}", file=sys.stderr)
            return 1
        session_id = r.json()["sessionId"]
        status = follow_session(http, session_id, Progress(sys.stdout))
    return 0 if status in ("SUCCEEDED", "WAITING_USER_INPUT", "WAITING_CONFIRMATION") else 1


def cmd_replay(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"tether: --set takes key=value, not {item!r}", file=sys.stderr)
            return 2
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    headers = {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(base_url=args.url, headers=headers, timeout=None) as http:
        r = http.post(f"/api/agent/dsl/{args.dsl_id}/execute", json=overrides)
    body = r.json()
    if r.status_code != 200:
        print(f"tether: {r.status_code} {body.get('error')}", file=sys.stderr)
        return 1
    for step in body["steps"]:
        print(f"  {step['stepId']} {step['toolId']:<28} {step['status']}")
    print(f"replay {body['status']} (execution {body['executionId']})")
    if body.get("error"):
        print(f"  reason: {body['error']}")
    return 0 if body["status"] == "SUCCEEDED" else 1


def cmd_db(args: argparse.Namespace) -> int:
    """Migrate tether's database, then each loaded pack's own history on the pack's database."""
    from tether.pack import PackEnv, load_packs, upgrade_pack
    from tether.store.migrate import upgrade

    settings = _settings(args)
    upgrade(settings.database_url)
    print(f"tether: database at {_where(settings.database_url)} is at the latest schema")
    for pack in load_packs(settings.pack_refs, PackEnv(settings, settings.public_url.rstrip("/"))):
        if pack.migrations is not None:
            upgrade_pack(pack.migrations)
            print(f"{pack.name}: database at {_where(pack.migrations.url)} is at the latest schema")
    return 0


def _where(url: str) -> str:
    return url.split("@")[-1]


def cmd_finance_seed(args: argparse.Namespace) -> int:
    from tether.pack import upgrade_pack
    from tether.packs.finance_cs.data import create_schema
    from tether.packs.finance_cs.generator import generate
    from tether.packs.finance_cs.pack import migrations, open_finance

    fin = open_finance(DEFAULT_URL)
    upgrade_pack(migrations(fin.settings))
    create_schema(fin.repo.engine)
    existing = fin.repo.count()
    if existing and not args.append:
        print(f"customer_session already holds {existing} rows; pass --append to add more", file=sys.stderr)
        return 1
    written = generate(fin.repo.engine, rows=args.rows, days=args.days, seed=args.seed)
    print(f"wrote {written} conversations over {args.days} days to {fin.settings.database_url.split('@')[-1]}")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Run the finance analysis worker apart from the server (TETHER_FINANCE_WORKER=off there)."""
    import asyncio
    import signal

    from tether.packs.finance_cs.pack import open_finance, prepare
    from tether.packs.finance_cs.worker import AnalysisWorker

    fin = open_finance(DEFAULT_URL)
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


def cmd_demo(args: argparse.Namespace) -> int:
    from tether.demo import run_demo

    return run_demo(_settings(args), args.host, args.port, serve=not args.no_serve)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tether", description="A governed agent backend for business systems.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, fn, help_ in (("serve", cmd_serve, "run the HTTP API"), ("demo", cmd_demo, "run the main job")):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--host", default="127.0.0.1")
        sp.add_argument("--port", type=int, default=8000)
        sp.set_defaults(fn=fn)
        if name == "demo":
            sp.add_argument("--no-serve", action="store_true", help="exit after the run instead of serving")
    ask = sub.add_parser("ask", help="ask one question and watch its events")
    ask.add_argument("question")
    ask.add_argument("--context", help="globalContext as JSON")
    replay = sub.add_parser("replay", help="replay a compiled DSL without the model")
    replay.add_argument("dsl_id")
    replay.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a parameter")
    for sp, fn in ((ask, cmd_ask), (replay, cmd_replay)):
        sp.add_argument("--url", default=DEFAULT_URL)
        sp.add_argument("--token", default=DEFAULT_TOKEN)
        sp.set_defaults(fn=fn)
    finance = sub.add_parser("finance", help="finance pack commands")
    fsub = finance.add_subparsers(dest="action", required=True)
    seed = fsub.add_parser("seed", help="generate the demo customer-session data set (TETHER_FINANCE_DATABASE_URL)")
    seed.add_argument("--rows", type=int, default=20_000)
    seed.add_argument("--days", type=int, default=180)
    seed.add_argument("--seed", type=int, default=7, help="random seed (same seed, same data)")
    seed.add_argument("--append", action="store_true", help="add rows to a table that is not empty")
    seed.set_defaults(fn=cmd_finance_seed)
    worker = sub.add_parser("worker", help="run the finance analysis worker in this process")
    worker.set_defaults(fn=cmd_worker)
    db = sub.add_parser("db", help="database commands")
    db.add_argument("action", choices=["upgrade"])
    db.set_defaults(fn=cmd_db)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.fn(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
