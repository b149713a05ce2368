"""Where a Tryton task runs: the demo database prepared once (``tether tryton prepare`` into a
folder of the eval's work dir, keyed by the code that builds it, so a later run reuses it), what
each demo login's Tryton groups may read (asked of Tryton once per prepared database, kept beside
it), and per trial a fresh copy of the prepared database served by its own ``trytond`` on a free
port. It never seeds or changes the prepared database after ``tether tryton prepare`` built it.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tether.tryton import demo_data
from tether.tryton.prepare import write_config
from tether.tryton.settings import TrytonSettings

BUILT_BY = ("prepare.py", "seed.py", "demo_data.py", "settings.py")  # in src/tether/tryton
READY = "prepare-output.txt"  # what `tether tryton prepare` printed: written once the database is complete
GRANTS = "eval-grants.json"  # login -> the models of the assistant's forms their groups may read
MISSING = "the tryton suite needs Tryton in this environment: run `make tryton` (the `tryton` dependency group)"
# Tryton's own bookkeeping of a login and a read: never business data
BOOKKEEPING = {"ir_session", "ir_session_wizard", "res_user_login_attempt", "res_user_device", "sqlite_sequence"}


def available() -> bool:
    return importlib.util.find_spec("trytond") is not None and importlib.util.find_spec("proteus") is not None


def passwords() -> dict[str, str]:
    return {"admin": demo_data.ADMIN_PASSWORD, **{u.login: u.password for u in demo_data.USERS}}


def cache_key() -> str:
    """trytond's version and the code that builds the database: a change to either builds anew."""
    from tether import tryton

    digest = hashlib.sha256(importlib.metadata.version("trytond").encode())
    for name in BUILT_BY:
        digest.update((Path(tryton.__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def session_header(token: str) -> dict[str, str]:
    return {"Authorization": f"Session {token}"}


def rpc(url: str, method: str, params: list[Any], token: str | None = None) -> Any:
    r = httpx.post(
        url, json={"id": 0, "method": method, "params": params}, headers=session_header(token) if token else {}
    )
    r.raise_for_status()
    body = r.json()
    if "error" in body:
        raise RuntimeError(f"Tryton answered {method} with {body['error']}")
    return body.get("result")


def log_in(rpc_url: str, login: str) -> str:
    """A Tryton session for ``login`` (what tether's login hands out): ``base64(login:id:session)``."""
    user_id, session = rpc(rpc_url, "common.db.login", [login, {"password": passwords()[login]}, "en"])[:2]
    return base64.b64encode(f"{login}:{user_id}:{session}".encode()).decode("ascii")


def log_out(rpc_url: str, token: str) -> None:
    """Revoke a Tryton session behind tether's back (a login that lapsed mid-conversation)."""
    rpc(rpc_url, "common.db.logout", [], token)


@dataclass(frozen=True)
class TrytonSite:
    """A prepared demo database (``data_dir`` holds ``<database>.sqlite``; copied, never written)."""

    data_dir: Path
    settings: TrytonSettings
    grants: dict[str, frozenset[str]]  # login -> models their groups may read
    model_ids: dict[str, str]  # model name -> its ir.model id (the form id tether shows)

    @property
    def sqlite(self) -> Path:
        return self.data_dir / f"{self.settings.database}.sqlite"

    @classmethod
    def prepare(cls, work_root: Path, out: Any = sys.stderr) -> TrytonSite:
        """The prepared database under ``work_root/tryton-<key>/``, built the first time (a minute
        or two), reused after; stale builds of other code are removed."""
        if not available():
            raise RuntimeError(MISSING)
        key = cache_key()
        where = (work_root / f"tryton-{key}").resolve()
        if not (where / READY).exists():
            out.write(f"preparing Tryton's demo database under {where} (once)…\n")
            out.flush()
            staged = work_root.resolve() / f".tryton-{key}-{os.getpid()}"  # runs side by side build apart
            shutil.rmtree(staged, ignore_errors=True)
            done = subprocess.run(
                [sys.executable, "-m", "tether.cli", "tryton", "prepare"],
                env={**os.environ, "TETHER_TRYTON_DATA_DIR": str(staged), "TETHER_TRYTON_DATABASE_URL": ""},
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                shutil.rmtree(staged, ignore_errors=True)
                raise RuntimeError(f"tether tryton prepare failed: {(done.stdout + done.stderr).strip()[-2000:]}")
            (staged / READY).write_text(done.stdout, encoding="utf-8")
            if (where / READY).exists():  # another run prepared it meanwhile: theirs is as good
                shutil.rmtree(staged, ignore_errors=True)
            else:
                shutil.rmtree(where, ignore_errors=True)
                staged.rename(where)
                write_config(TrytonSettings(data_dir=where, database_url=None))  # its paths name the staging
        for stale in work_root.glob("tryton-*"):
            if stale.resolve() != where:
                shutil.rmtree(stale, ignore_errors=True)
        return cls.at(where)

    @classmethod
    def at(cls, data_dir: Path) -> TrytonSite:
        """A database ``tether tryton prepare`` built in ``data_dir`` (the tests' cached one)."""
        from tether.packs.erp.tryton_forms import FORMS

        data_dir = data_dir.resolve()
        settings = TrytonSettings(data_dir=data_dir, database_url=None)
        sqlite = data_dir / f"{settings.database}.sqlite"
        models = [f.model for f in FORMS]
        with sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True) as conn:
            marks = ",".join("?" * len(models))
            ids = {
                str(m): str(i)
                for i, m in conn.execute(f"SELECT id, name FROM ir_model WHERE name IN ({marks})", models)
            }
        return cls(data_dir, settings, _grants(data_dir, settings, models), ids)

    def copy(self, into: Path) -> TrytonSettings:
        from tether.tryton.server import copy_database

        return copy_database(self.data_dir, into, settings=self.settings)

    def form_ids(self, forms: tuple[str, ...]) -> tuple[str, ...]:
        """A task's forms, named by model (``account.invoice``), as the ids tether shows."""
        unknown = [f for f in forms if f not in self.model_ids]
        if unknown:
            raise ValueError(
                f"not a model of the assistant's Tryton forms: {unknown} (known: {sorted(self.model_ids)})"
            )
        return tuple(self.model_ids[f] for f in forms)

    def on_form_id(self, call: dict[str, Any]) -> dict[str, Any]:
        """A reference call whose form is named by model (``sale.sale``), with the id tether shows."""
        args = dict(call.get("args") or {})
        if "form_id" in args:
            args["form_id"] = self.form_ids((str(args["form_id"]),))[0]
        return {**call, "args": args}

    def hidden_forms(self, login: str) -> dict[str, str]:
        """Form id -> model, for the forms ``login``'s Tryton groups may not read."""
        granted = self.grants.get(login, frozenset())
        return {i: m for m, i in self.model_ids.items() if m not in granted}


def _grants(data_dir: Path, settings: TrytonSettings, models: list[str]) -> dict[str, frozenset[str]]:
    """What each demo login may read, as Tryton says (``ir.model.access.get_access`` in the user's
    own session, on a throwaway copy); asked once per prepared database and kept beside it."""
    kept = data_dir / GRANTS
    if not kept.exists():
        from tether.tryton.server import copy_database, start_trytond

        scratch = data_dir.parent / f".grants-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            with start_trytond(copy_database(data_dir, scratch, settings=settings)) as trytond:
                found = {}
                for login in passwords():
                    token = log_in(trytond.rpc_url, login)
                    context = rpc(trytond.rpc_url, "model.res.user.get_preferences", [True, {}], token)
                    access = rpc(trytond.rpc_url, "model.ir.model.access.get_access", [models, context], token)
                    found[login] = sorted(m for m, rights in access.items() if rights.get("read"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        written = kept.with_name(f"{GRANTS}.{os.getpid()}")
        written.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
        os.replace(written, kept)
    return {login: frozenset(ms) for login, ms in json.loads(kept.read_text(encoding="utf-8")).items()}


def digest(sqlite: Path) -> dict[str, str]:
    """Table -> a digest of its rows (Tryton's bookkeeping of logins left out): two databases whose
    digests agree hold the same business data."""
    out = {}
    with sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            if table in BOOKKEEPING:
                continue
            rows = sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{table}"'))
            out[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return out


def trial_env(settings: TrytonSettings) -> dict[str, str]:
    """The tether server's settings for a trial on the Tryton ``settings`` serves (as the demo's)."""
    return {
        "TETHER_ERP_KIND": "tryton",
        "TETHER_ERP_BASE_URL": f"http://{settings.host}:{settings.port}/",
        "TETHER_ERP_TRYTON_DATABASE": settings.database,
    }
