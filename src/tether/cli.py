"""``tether serve | ask | replay | login | logout | demo | doctor | mcp | db | audit | eval | tryton``: the
command line, plus what each installed pack adds (``tether.pack_commands``: the finance
pack's ``finance`` and ``worker``, the demo ERP's ``erp``). It imports no pack.

``ask`` and ``replay`` talk to a running server over HTTP (``--url``, token ``--token``), so what
the terminal shows is exactly what any client sees on the event stream.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from tether.errors import ConfigError
from tether.progress import Progress, follow_turn

DEFAULT_URL = os.environ.get("TETHER_URL", "http://127.0.0.1:8000")
FALLBACK_TOKEN = "dev-alice"


def _login_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tether" / "logins.json"


def _saved_logins() -> dict[str, Any]:
    try:
        data = json.loads(_login_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _token_for(args: argparse.Namespace) -> str:
    """--token, then TETHER_TOKEN, then the login saved by `tether login` for --url, then dev-alice."""
    if args.token:
        return str(args.token)
    saved = _saved_logins().get(args.url.rstrip("/"))
    return os.environ.get("TETHER_TOKEN") or (saved or {}).get("token") or FALLBACK_TOKEN


def cmd_login(args: argparse.Namespace) -> int:
    password = args.password or os.environ.get("TETHER_PASSWORD") or getpass.getpass(f"password for {args.username}: ")
    try:
        r = httpx.post(
            args.url.rstrip("/") + "/api/auth/login",
            json={"username": args.username, "password": password},
            timeout=30,
        )
    except httpx.ConnectError:
        print(f"tether: no server at {args.url}; start one with `tether serve`", file=sys.stderr)
        return 2
    if r.status_code != 200:
        print(f"tether: login refused ({r.status_code}): {r.json().get('error', r.text)}", file=sys.stderr)
        return 1
    body = r.json()
    logins = _saved_logins()
    logins[args.url.rstrip("/")] = {"user": args.username, "token": body["token"], "expiresAt": body.get("expiresAt")}
    path = _login_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the token is a credential
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(logins, f)
    user = body.get("user") or {}
    print(f"logged in as {args.username} ({user.get('name', '')}, brand {user.get('brandsId', '?')}) at {args.url}")
    return 0


def cmd_logout(args: argparse.Namespace) -> int:
    logins = _saved_logins()
    saved = logins.pop(args.url.rstrip("/"), None)
    if saved:
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(
                args.url.rstrip("/") + "/api/auth/logout",
                headers={"Authorization": f"Bearer {saved['token']}"},
                timeout=10,
            )
        _login_file().write_text(json.dumps(logins), encoding="utf-8")
    print("logged out" if saved else f"no saved login for {args.url}")
    return 0


def _settings(args: argparse.Namespace) -> Any:
    from tether.settings import create_settings

    overrides: dict[str, Any] = {}
    if getattr(args, "port", None) and "TETHER_PUBLIC_URL" not in os.environ:
        overrides["public_url"] = f"http://{args.host}:{args.port}"
    return create_settings(**overrides)


EMBEDDED_ERP = "tether.erp_demo.pack"


def _approval_policy(settings: Any) -> tuple[Any, str]:
    """The settings a server starts with and its approval policy in words: the one
    TETHER_APPROVAL_POLICIES names (``none``: none); unset, on the embedded default (the packs as
    shipped, the demo ERP among them) the shipped demo policy (the demo company's: docs/approvals.md);
    else none."""
    from tether.ops.approvals.source import DEMO_POLICY

    embedded = "packs" not in settings.model_fields_set and EMBEDDED_ERP in settings.pack_refs
    if settings.approval_policies is None and embedded:
        settings = settings.model_copy(update={"approval_policies": str(DEMO_POLICY)})
        said = f"the shipped demo policy {DEMO_POLICY} (TETHER_APPROVAL_POLICIES names another, or none)"
    elif settings.approval_policy:
        said = f"{settings.approval_policy} (TETHER_APPROVAL_POLICIES)"
    else:
        said = "none (TETHER_APPROVAL_POLICIES names a policy file)"
    return settings, said


def _with_approval_policy(settings: Any) -> Any:
    """The settings a server starts with, its approval policy said on one line."""
    settings, said = _approval_policy(settings)
    print(f"tether: approval policy: {said}", flush=True)
    return settings


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from tether.app.main import create_app
    from tether.wiring import check_schemas

    settings = _with_approval_policy(_settings(args))
    app = create_app(settings)
    check_schemas(app.state.services)  # a refusal is one line here, not a start-up traceback
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=settings.log_level.lower(),
        timeout_graceful_shutdown=max(1, int(settings.shutdown_grace_s)),  # then the lifespan's own grace
    )
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check what this configuration depends on (``tether.doctor``: the database and each pack's
    schema, the approval policy, what the packs check — the ERP — and the model endpoint, probed
    when one is set; flags override TETHER_MODEL_*): a line each, exit 1 when any fails."""
    import asyncio

    from tether import doctor
    from tether.pack import PackEnv, load_packs

    settings, said = _approval_policy(_settings(args))
    packs = load_packs(settings.pack_refs, PackEnv(settings, settings.public_url.rstrip("/")))
    checks = doctor.database_checks(settings, packs)
    checks.append(doctor.policy_check(settings.approval_policy, said))
    checks += asyncio.run(doctor.pack_checks(packs))
    report = None
    if settings.model != "openai" and not (args.base_url or args.provider):
        planner = "the offline planner (TETHER_MODEL=planner) needs no endpoint; TETHER_MODEL=openai names one"
        checks.append(doctor.DoctorCheck("model", True, planner))
    else:
        report = asyncio.run(_model_checkup(args, settings))
        fit = "fit for tether" if report.fit else "not fit for tether (the checks and advice below)"
        checks.append(doctor.DoctorCheck("model", report.fit, f"{report.target}: {fit}", "the advice below"))
    print(doctor.render(checks))
    if report is not None:
        print()
        print(report.table())
    return 0 if all(c.ok for c in checks) else 1


async def _model_checkup(args: argparse.Namespace, settings: Any) -> Any:
    """Probe the model endpoint (TETHER_MODEL_*; flags override) for what tether needs of it."""
    from tether.models.checkup import run_checkup
    from tether.models.openai_config import resolve_openai_config

    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    config = resolve_openai_config(
        args.provider or settings.model_provider,
        args.base_url or settings.model_base_url,
        args.model or settings.model_name,
        key,
        stream=settings.model_stream,
        timeout_s=args.timeout or settings.model_timeout_s,
        thinking=settings.model_thinking,
    )
    return await run_checkup(config, settings.context_tokens)


# ``tether ask``'s exit status by the turn's outcome: a script tells an answer from a refusal
# (1: the turn failed, 2: no server; documented in docs/cli.md)
ASK_EXIT = {"answered": 0, "no_rows": 3, "not_granted": 4, "not_understood": 5, "asked": 6}


def cmd_ask(args: argparse.Namespace) -> int:
    headers = {"Authorization": f"Bearer {_token_for(args)}"}
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
        status, outcome = follow_turn(http, session_id, Progress(sys.stdout))
    if status not in ("SUCCEEDED", "WAITING_USER_INPUT", "WAITING_CONFIRMATION"):
        return 1
    return ASK_EXIT.get(outcome or "answered", 0)


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
    headers = {"Authorization": f"Bearer {_token_for(args)}"}
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


def cmd_audit(args: argparse.Namespace) -> int:
    """``tether audit verify``: walk the hash chain and compare its end with the head, and check
    that every executed op ran what was approved (``ops.audit_check``); exit 1 saying where it
    breaks. ``--head HASH``: a head noted earlier must still be in the chain."""
    from tether.ops.audit_check import binding_break
    from tether.store.audit import SqlAuditLog
    from tether.store.migrate import upgrade

    settings = _settings(args)
    upgrade(settings.database_url)
    log = SqlAuditLog(settings.database_url)
    try:
        every = log.rows()
        rows = len(every)
        broken = log.verify(args.head) or binding_break(every)
        head = log.head()
    finally:
        log.close()
    if broken is not None:
        where = f"at row id {broken.row_id}" if broken.row_id is not None else "at its end"
        print(f"audit log BROKEN {where}: {broken.reason}")
        return 1
    last = head[1] if head else ""
    print(f"audit log intact: {rows} row(s), hash chain verified, executed ops ran what was approved; head {last}")
    print("  (note the head elsewhere; `tether audit verify --head <hash>` later checks it is still in the chain)")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """MCP over stdio for one caller: --token, TETHER_TOKEN or the saved login (never a default)."""
    import asyncio

    from tether.interop.mcp_server import serve_stdio

    saved = _saved_logins().get(args.url.rstrip("/")) or {}
    token = args.token or os.environ.get("TETHER_TOKEN") or saved.get("token")
    if not token:
        print("tether mcp needs a token: --token, TETHER_TOKEN, or `tether login` first", file=sys.stderr)
        return 2
    return asyncio.run(serve_stdio(_settings(args), str(token)))


def cmd_demo(args: argparse.Namespace) -> int:
    from tether.demo import run_demo

    return run_demo(_with_approval_policy(_settings(args)), args.host, args.port, serve=not args.no_serve)


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
        sp.add_argument(
            "--token", default=None, help="bearer token (default: TETHER_TOKEN, the saved login, dev-alice)"
        )
        sp.set_defaults(fn=fn)
    doctor = sub.add_parser(
        "doctor", help="check the database, the approval policy, the packs' systems (the ERP) and the model endpoint"
    )
    doctor.add_argument("--provider", help="override TETHER_MODEL_PROVIDER")
    doctor.add_argument("--base-url", help="override TETHER_MODEL_BASE_URL")
    doctor.add_argument("--model", help="override TETHER_MODEL_NAME")
    doctor.add_argument("--timeout", type=float, help="seconds per request (default TETHER_MODEL_TIMEOUT_S)")
    doctor.set_defaults(fn=cmd_doctor)
    mcp = sub.add_parser("mcp", help="serve the tools over MCP on stdin/stdout (for one caller)")
    mcp.add_argument("--token", default=None, help="bearer token (default: TETHER_TOKEN, then the saved login)")
    mcp.add_argument("--url", default=DEFAULT_URL, help="whose saved login to use")
    mcp.set_defaults(fn=cmd_mcp)
    login = sub.add_parser("login", help="log in with an ERP user; later commands use the token")
    login.add_argument("username")
    login.add_argument("--password", help="default: TETHER_PASSWORD, else asked for")
    logout = sub.add_parser("logout", help="revoke and forget the saved login")
    for sp, fn in ((login, cmd_login), (logout, cmd_logout)):
        sp.add_argument("--url", default=DEFAULT_URL)
        sp.set_defaults(fn=fn)
    audit = sub.add_parser("audit", help="audit log commands")
    audit.add_argument("action", choices=["verify"])
    audit.add_argument("--head", help="a head hash printed by an earlier verify: it must still be in the chain")
    audit.set_defaults(fn=cmd_audit)
    db = sub.add_parser("db", help="database commands")
    db.add_argument("action", choices=["upgrade"])
    db.set_defaults(fn=cmd_db)
    from tether.evals.command import add_parser as add_eval
    from tether.pack_commands import add_pack_commands
    from tether.tryton.commands import add_parser as add_tryton

    add_eval(sub)
    add_tryton(sub)  # `tether tryton prepare | serve`: imports no trytond until it runs
    add_pack_commands(sub)  # `tether finance …`, `tether worker`, `tether erp …`: from the packs
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.fn(args)
    except ConfigError as e:  # a setting or the database to fix: say what, without a traceback
        print(f"tether: {e}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    raise SystemExit(main())
