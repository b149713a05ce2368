"""``trytond`` as a child process on a prepared database: ``start_trytond`` runs it on the port its
settings name and returns once it answers JSON-RPC; ``copy_database`` gives each test or eval
trial its own copy of a prepared SQLite database (and a configuration with its own port), so
nothing one trial writes is seen by another. It never prepares a database itself (``prepare``)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tether.errors import ConfigError
from tether.store.sqlite_copy import backup_sqlite
from tether.tryton.prepare import tryton_script, write_config
from tether.tryton.settings import TrytonSettings

LOG_NAME = "trytond.log"  # trytond's stderr, in the data dir


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class RunningTrytond:
    """A ``trytond`` started by ``start_trytond``; ``stop()`` ends it (also on leaving ``with``)."""

    settings: TrytonSettings
    data_dir: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def url(self) -> str:
        """``http://host:port/`` (the database's JSON-RPC is at ``url + database + "/rpc/"``)."""
        return f"http://{self.settings.host}:{self.settings.port}/"

    @property
    def database(self) -> str:
        return self.settings.database

    @property
    def rpc_url(self) -> str:
        return f"{self.url}{self.database}/rpc/"

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.data_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")[-chars:].strip()
        except OSError:
            return ""

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> RunningTrytond:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_trytond(
    settings: TrytonSettings, data_dir: Path | None = None, *, timeout_s: float = 120.0
) -> RunningTrytond:
    """Run ``trytond -c <conf> -d <database>`` on the prepared database in ``data_dir`` (default
    ``settings.data_dir``), listening on ``settings.host:settings.port``. Returns once its JSON-RPC
    answers and lists the database; a failure raises ``ConfigError`` with trytond's stderr tail."""
    where = (data_dir or settings.data_dir).resolve()
    settings = settings.model_copy(update={"data_dir": where})
    if settings.sqlite_file is not None and not settings.sqlite_file.exists():
        raise ConfigError(f"no Tryton database at {settings.sqlite_file}: run `tether tryton prepare` first")
    config = write_config(settings, where)
    command = [tryton_script("trytond"), "-c", str(config), "-d", settings.database]
    with (where / LOG_NAME).open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=where)
    running = RunningTrytond(settings, where, process)
    try:
        _wait_until_serving(running, timeout_s)
    except BaseException:
        running.stop()
        raise
    return running


def _rpc(url: str, method: str, params: list[Any]) -> Any:
    r = httpx.post(url, json={"id": 0, "method": method, "params": params}, timeout=5)
    r.raise_for_status()
    return r.json().get("result")


def _wait_until_serving(running: RunningTrytond, timeout_s: float) -> None:
    # trytond loads the database's modules before it listens: once /rpc/ answers, the database is served
    deadline = time.monotonic() + timeout_s
    while True:
        if (code := running.process.poll()) is not None:
            raise ConfigError(f"trytond exited ({code}) before it answered: {running.log_tail()}")
        try:
            listed = _rpc(running.url + "rpc/", "common.db.list", [])
        except httpx.HTTPError:
            listed = None
        if listed is not None:
            if running.database not in listed:
                raise ConfigError(f"trytond at {running.url} does not serve {running.database!r} (it lists {listed})")
            return
        if time.monotonic() > deadline:
            raise ConfigError(f"trytond did not answer at {running.url} within {timeout_s:.0f} s: {running.log_tail()}")
        time.sleep(0.2)


def copy_database(
    prepared_dir: Path,
    into_dir: Path,
    *,
    settings: TrytonSettings | None = None,
    port: int | None = None,
) -> TrytonSettings:
    """Copy the prepared SQLite database in ``prepared_dir`` (its name and host from ``settings``,
    default ``TrytonSettings()``) into ``into_dir`` with its files, and write the copy's
    ``trytond.conf`` listening on ``port`` (default: a free one). -> the copy's settings."""
    base = settings or TrytonSettings()
    if base.database_url:
        raise ConfigError("copy_database copies a SQLite database; TETHER_TRYTON_DATABASE_URL names a server")
    source = prepared_dir / f"{base.database}.sqlite"
    if not source.exists():
        raise ConfigError(f"no prepared Tryton database at {source}: run `tether tryton prepare` first")
    into_dir.mkdir(parents=True, exist_ok=True)
    copy = base.model_copy(update={"data_dir": into_dir.resolve(), "port": port or free_port(base.host)})
    backup_sqlite(source, into_dir / source.name)
    if (files := prepared_dir / base.database).is_dir():  # trytond's filestore (attachments), if any
        shutil.copytree(files, into_dir / base.database, dirs_exist_ok=True)
    write_config(copy)
    return copy
