"""``tether tryton prepare [--fresh] | serve | demo``: the local Tryton from the command line (docs/erp.md
"Tryton"). Every failure is one line and exit status 2, never a traceback; trytond itself is
imported by nothing here (it is the optional ``tryton`` dependency group)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sys
from typing import Any

from tether.errors import ConfigError

MISSING = "Tryton is not installed in this environment: run `make tryton` (uv sync --frozen --inexact --group tryton)"


def _settings() -> Any:
    from pydantic import ValidationError

    from tether.tryton.settings import TrytonSettings

    if importlib.util.find_spec("trytond") is None or importlib.util.find_spec("proteus") is None:
        raise ConfigError(MISSING)
    try:
        return TrytonSettings()
    except ValidationError as e:
        first = e.errors()[0]
        raise ConfigError(f"TETHER_TRYTON_{str(first['loc'][0]).upper()}: {first['msg']}") from None


def _where(settings: Any) -> str:
    return str(settings.sqlite_file) if settings.sqlite_file is not None else settings.database_url.split("@")[-1]


def _prepare(settings: Any, fresh: bool) -> None:
    from tether.tryton.prepare import is_prepared, prepare

    try:
        if fresh or not is_prepared(settings):
            print(f"tether tryton: preparing {settings.database} at {_where(settings)} (a minute or two)…", flush=True)
        counts = prepare(settings, fresh=fresh)
    except OSError as e:
        raise ConfigError(f"cannot prepare Tryton at {settings.data_dir}: {e}") from None
    if counts is None:
        print(f"tether tryton: already prepared at {_where(settings)} (--fresh rebuilds it)")
    else:
        seeded = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        print(f"tether tryton: prepared {settings.database} at {_where(settings)}: seeded {seeded}")


def cmd_prepare(args: argparse.Namespace) -> int:
    _prepare(_settings(), args.fresh)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Prepare if needed, then become ``trytond`` in the foreground (Ctrl-C stops it)."""
    from tether.tryton import demo_data
    from tether.tryton.prepare import is_prepared, tryton_script, write_config

    settings = _settings()
    with socket.socket() as probe:
        if probe.connect_ex((settings.host, settings.port)) == 0:
            raise ConfigError(f"{settings.host}:{settings.port} is taken: set TETHER_TRYTON_PORT to a free port")
    if not is_prepared(settings):
        _prepare(settings, fresh=False)
    config = write_config(settings)
    trytond = tryton_script("trytond")
    url = f"http://{settings.host}:{settings.port}/"
    print(
        f"tether tryton: serving {settings.database} at {url} (JSON-RPC {url}{settings.database}/rpc/); Ctrl-C stops it"
    )
    logins = [("admin", demo_data.ADMIN_PASSWORD)] + [(u.login, u.password) for u in demo_data.USERS]
    print("  demo logins: " + ", ".join(f"{login} / {password}" for login, password in logins), flush=True)
    sys.stderr.flush()
    os.execv(trytond, [trytond, "-c", str(config), "-d", settings.database])


def cmd_demo(args: argparse.Namespace) -> int:
    from tether.tryton.demo import run

    return run(args.host, args.port, args.once)


def add_parser(sub: Any) -> None:
    tryton = sub.add_parser("tryton", help="the local Tryton ERP (docs/erp.md)")
    actions = tryton.add_subparsers(dest="action", required=True)
    prepare = actions.add_parser("prepare", help="build the database with the demo company (once)")
    prepare.add_argument("--fresh", action="store_true", help="rebuild it even if it exists")
    prepare.set_defaults(fn=cmd_prepare)
    serve = actions.add_parser("serve", help="prepare if needed, then run trytond in the foreground")
    serve.set_defaults(fn=cmd_serve)
    demo = actions.add_parser("demo", help="the ERP assistant on Tryton: trytond, tether serve, each role's questions")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8000, help="tether's port")
    demo.add_argument("--once", action="store_true", help="stop after the questions")
    demo.set_defaults(fn=cmd_demo)
