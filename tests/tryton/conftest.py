"""A real Tryton for the tests: ``tryton_prepared`` prepares the demo database once per pytest run
through ``tether tryton prepare`` (kept in pytest's cache, keyed by the code that builds it, so a
repeated local run reuses it; ``TETHER_TEST_TRYTON_CACHE=0`` builds it afresh in a temporary
folder), and ``trytond`` gives each test its own copy served by its own ``trytond`` on a free port.
``tryton_postgres`` prepares the same demo on the PostgreSQL server (``TETHER_TEST_TRYTON_PG``,
default the machine's) in a database of this run's own, once, serves it and drops it at the end;
a server that cannot be reached skips its tests loudly."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tether.errors import ConfigError
from tether.tryton.server import RunningTrytond, copy_database, free_port, start_trytond
from tether.tryton.settings import TrytonSettings

BUILT_BY = ("prepare.py", "seed.py", "demo_data.py", "settings.py")  # in src/tether/tryton
PG_SERVER = os.environ.get("TETHER_TEST_TRYTON_PG", "postgresql://postgres@127.0.0.1:5432/")
OUTPUT = "prepare-output.txt"  # what `tether tryton prepare` printed when it built the database


@dataclass(frozen=True)
class PreparedTryton:
    data_dir: Path  # holds <database>.sqlite: copy it (tether.tryton.server.copy_database), never write to it
    settings: TrytonSettings
    output: str  # the output of the `tether tryton prepare` that built it (on an empty folder)


def tether(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _cache_key() -> str:
    import trytond

    from tether import tryton

    digest = hashlib.sha256(trytond.__version__.encode())
    for name in BUILT_BY:
        digest.update((Path(tryton.__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def tryton_prepared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> PreparedTryton:
    pytest.importorskip("trytond", reason="Tryton is the `tryton` dependency group: make tryton")
    if os.environ.get("TETHER_TEST_TRYTON_CACHE") == "0":
        where = tmp_path_factory.mktemp("tryton-prepared")
    else:
        where = request.config.cache.mkdir(f"tryton-{_cache_key()}")
        for stale in where.parent.glob("tryton-*"):  # built by older code
            if stale != where:
                shutil.rmtree(stale, ignore_errors=True)
    settings = TrytonSettings(data_dir=where)
    if not (where / OUTPUT).exists():
        shutil.rmtree(where, ignore_errors=True)
        done = tether("tryton", "prepare", env={"TETHER_TRYTON_DATA_DIR": str(where)})
        assert done.returncode == 0, f"tether tryton prepare failed:\n{done.stdout}\n{done.stderr[-3000:]}"
        (where / OUTPUT).write_text(done.stdout, encoding="utf-8")
    return PreparedTryton(where, settings, (where / OUTPUT).read_text(encoding="utf-8"))


@pytest.fixture
def trytond(tryton_prepared: PreparedTryton, tmp_path: Path) -> Iterator[RunningTrytond]:
    """A fresh copy of the prepared database served by its own trytond: a ``RunningTrytond`` with
    ``.url`` (http://127.0.0.1:PORT/), ``.rpc_url`` (``.url`` + database + /rpc/), ``.database``,
    ``.data_dir``, ``.settings`` (the copy's TrytonSettings), ``.log_tail()``, ``.stop()``."""
    settings = copy_database(tryton_prepared.data_dir, tmp_path / "tryton", settings=tryton_prepared.settings)
    running = start_trytond(settings)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def tryton_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTrytond]:
    """The demo prepared on PostgreSQL (``tether tryton prepare`` with ``TETHER_TRYTON_DATABASE_URL``)
    in ``tether_tryton_<pid>``, served by one trytond for the run, dropped afterwards. Its tests
    share it: they compare with what Tryton itself answers, not with a fresh database's counts."""
    pytest.importorskip("trytond", reason="Tryton is the `tryton` dependency group: make tryton")
    from tether.tryton.prepare import _postgres_connect

    where = tmp_path_factory.mktemp("tryton-postgres")
    settings = TrytonSettings(data_dir=where, database=f"tether_tryton_{os.getpid()}", database_url=PG_SERVER)
    try:
        _postgres_connect(settings).close()
    except ConfigError as e:
        pytest.skip(f"!!! PostgreSQL cannot be reached ({e}) — Tryton on PostgreSQL tests SKIPPED")
    env = {
        "TETHER_TRYTON_DATA_DIR": str(where),
        "TETHER_TRYTON_DATABASE": settings.database,
        "TETHER_TRYTON_DATABASE_URL": PG_SERVER,
    }
    try:
        done = tether("tryton", "prepare", env=env, timeout=1500)  # 3 min on a quiet 2-core machine
        assert done.returncode == 0, (
            f"tether tryton prepare on PostgreSQL failed:\n{done.stdout}\n{done.stderr[-3000:]}"
        )
        assert f"prepared {settings.database} at " in done.stdout, done.stdout
        with start_trytond(settings.model_copy(update={"port": free_port()})) as running:
            yield running
    finally:
        _drop(settings)


def _drop(settings: TrytonSettings) -> None:
    from psycopg import sql

    from tether.tryton.prepare import _postgres_connect

    with _postgres_connect(settings) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(settings.database)))
