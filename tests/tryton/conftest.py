"""A real Tryton for the tests: ``tryton_prepared`` prepares the demo database once per pytest run
through ``tether tryton prepare`` (kept in pytest's cache, keyed by the code that builds it, so a
repeated local run reuses it; ``TETHER_TEST_TRYTON_CACHE=0`` builds it afresh in a temporary
folder), and ``trytond`` gives each test its own copy served by its own ``trytond`` on a free port."""

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

from tether.tryton.server import RunningTrytond, copy_database, start_trytond
from tether.tryton.settings import TrytonSettings

BUILT_BY = ("prepare.py", "seed.py", "demo_data.py", "settings.py")  # in src/tether/tryton
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
