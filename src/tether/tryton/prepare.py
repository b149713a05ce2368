"""Prepare the local Tryton: trytond's configuration, the database (SQLite under ``data_dir`` by
default, PostgreSQL when ``database_url`` is set), the modules activated and zh_CN / en loaded
(``trytond-admin``), then the demo company (``seed``). A SQLite database is built beside its place
and moved there only when complete, so a crash never leaves a half-seeded database to reuse."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tether.errors import ConfigError
from tether.tryton import demo_data
from tether.tryton.settings import TrytonSettings

MODULES = ("sale", "purchase", "stock", "account_invoice")
LANGUAGES = ("zh_CN", "en")


def write_config(settings: TrytonSettings, data_dir: Path | None = None) -> Path:
    """trytond's configuration file for ``settings`` (the SQLite files in ``data_dir``). -> its path."""
    where = (data_dir or settings.data_dir).resolve()
    where.mkdir(parents=True, exist_ok=True)
    uri = settings.database_url or "sqlite://"
    text = (
        f"[database]\nuri = {uri}\npath = {where}\nlanguage = en\n\n"
        f"[web]\nlisten = {settings.host}:{settings.port}\n\n"
        # the demo's known passwords are short; the tests log in often from one address
        "[password]\nlength = 8\n\n[session]\nmax_attempt = 20\n"
    )
    path = where / "trytond.conf"
    path.write_text(text, encoding="utf-8")
    return path


def tryton_script(name: str) -> str:
    """The path of a script that trytond installs (``trytond``, ``trytond-admin``) in this environment."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise ConfigError(f"{name} is not installed: run `make tryton` (uv sync --frozen --inexact --group tryton)")
    return found


def is_prepared(settings: TrytonSettings) -> bool:
    sqlite = settings.sqlite_file
    return sqlite.exists() if sqlite is not None else _postgres_has(settings)


def prepare(settings: TrytonSettings, *, fresh: bool = False) -> dict[str, int] | None:
    """Build the database unless it exists (``fresh``: rebuild it). -> the records seeded, or None
    when it was already there."""
    if is_prepared(settings) and not fresh:
        write_config(settings)
        return None
    sqlite = settings.sqlite_file
    if sqlite is None:
        _postgres_recreate(settings)
        return _build(settings, write_config(settings))
    building = settings.data_dir / ".building"
    shutil.rmtree(building, ignore_errors=True)
    config = write_config(settings, building)
    (building / sqlite.name).touch()
    counts = _build(settings, config)
    # the seed's last transactions may still sit in SQLite's write-ahead log beside the file: move it too
    for suffix in ("", "-wal", "-shm", "-journal"):
        target = sqlite.with_name(sqlite.name + suffix)
        target.unlink(missing_ok=True)
        if (built := building / target.name).exists():
            os.replace(built, target)
    shutil.rmtree(building, ignore_errors=True)
    write_config(settings)
    return counts


def _build(settings: TrytonSettings, config: Path) -> dict[str, int]:
    passfile = config.parent / ".admin-password"
    passfile.write_text(demo_data.ADMIN_PASSWORD + "\n", encoding="utf-8")
    env = {**os.environ, "TRYTONPASSFILE": str(passfile)}
    command = [tryton_script("trytond-admin"), "-c", str(config), "-d", settings.database]
    # one run: a new database gets ir and res first, then the modules and their dependencies
    steps = (
        [
            *command,
            "-u",
            "ir",
            "res",
            *MODULES,
            "--activate-dependencies",
            "-l",
            *LANGUAGES,
            "--email",
            "admin@example.com",
        ],
    )
    try:
        for step in steps:
            done = subprocess.run(step, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ConfigError(f"trytond-admin failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    finally:
        passfile.unlink(missing_ok=True)
    from tether.tryton.seed import seed

    return seed(settings.database, config)


def _postgres_connect(settings: TrytonSettings) -> Any:
    import psycopg

    url = str(settings.database_url)
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError("TETHER_TRYTON_DATABASE_URL must be postgresql://user:password@host:port/ (or unset: SQLite)")
    try:
        return psycopg.connect(url, dbname="postgres", autocommit=True)
    except psycopg.Error as e:  # the message names host and port, never the password
        raise ConfigError(
            f"cannot reach PostgreSQL at {url.split('@')[-1]}: {str(e).strip().splitlines()[0]}"
        ) from None


def _postgres_has(settings: TrytonSettings) -> bool:
    with _postgres_connect(settings) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (settings.database,)).fetchone() is not None


def _postgres_recreate(settings: TrytonSettings) -> None:
    from psycopg import sql

    with _postgres_connect(settings) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(settings.database)))
        conn.execute(sql.SQL("CREATE DATABASE {} ENCODING 'UTF8'").format(sql.Identifier(settings.database)))
