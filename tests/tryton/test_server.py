"""``tether.tryton.server`` and ``tether tryton prepare | serve`` against a real ``trytond``: the
served copy answers Tryton's JSON-RPC login for a demo user, each copy is its own database, and
the commands say what they did, or what is wrong, in one line."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.tryton.conftest import PreparedTryton, tether
from tether.tryton import demo_data
from tether.tryton.server import RunningTrytond, copy_database, free_port

pytest.importorskip("trytond", reason="Tryton is the `tryton` dependency group: make tryton")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SALES = next(u for u in demo_data.USERS if u.login == "sales")


def rpc(url: str, method: str, params: list[Any], session: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Session {session}"} if session else {}
    return httpx.post(url, json={"id": 1, "method": method, "params": params}, headers=headers, timeout=30)


def login(server: RunningTrytond, user: str, password: str) -> str:
    r = rpc(server.rpc_url, "common.db.login", [user, {"password": password}])
    assert r.status_code == 200, r.text
    user_id, token, _bus = r.json()["result"]
    return base64.b64encode(f"{user}:{user_id}:{token}".encode()).decode()


def test_the_served_copy_logs_in_a_demo_user_and_refuses_a_wrong_password(trytond: RunningTrytond) -> None:
    assert trytond.url == f"http://127.0.0.1:{trytond.settings.port}/" and trytond.database == "tether_demo"
    session = login(trytond, "sales", SALES.password)
    me = rpc(trytond.rpc_url, "model.res.user.get_preferences", [True, {}], session)
    assert me.status_code == 200 and me.json()["result"]["language"] == "zh_CN", me.text
    assert rpc(trytond.rpc_url, "common.db.login", ["sales", {"password": "not-the-password"}]).status_code == 401


def _party_names(sqlite_file: Path | None) -> set[str]:
    import sqlite3

    assert sqlite_file is not None
    with sqlite3.connect(sqlite_file) as db:
        return {name for (name,) in db.execute("SELECT name FROM party_party")}


def test_a_write_into_one_copy_is_not_seen_in_another(
    trytond: RunningTrytond, tryton_prepared: PreparedTryton, tmp_path: Path
) -> None:
    other = copy_database(tryton_prepared.data_dir, tmp_path / "other", settings=tryton_prepared.settings)
    assert other.port != trytond.settings.port and (tmp_path / "other" / "trytond.conf").exists()
    session = login(trytond, "admin", demo_data.ADMIN_PASSWORD)
    made = rpc(trytond.rpc_url, "model.party.party.create", [[{"name": "只在这一份里的客户"}], {}], session)
    assert made.status_code == 200 and "error" not in made.json(), made.text

    assert "只在这一份里的客户" in _party_names(trytond.settings.sqlite_file)
    assert "只在这一份里的客户" not in _party_names(other.sqlite_file)
    assert "只在这一份里的客户" not in _party_names(tryton_prepared.settings.sqlite_file)


def test_prepare_on_an_empty_folder_says_what_it_seeded(tryton_prepared: PreparedTryton) -> None:
    # the session fixture ran `tether tryton prepare` on an empty folder (in this run, or in the run
    # that built this cached database from the same code)
    assert "prepared tether_demo at" in tryton_prepared.output
    assert "seeded 32 parties, 42 products, 2 warehouses, 4 users, 12 sales, 4 purchases" in tryton_prepared.output


def test_prepare_on_a_prepared_folder_keeps_it(tryton_prepared: PreparedTryton, tmp_path: Path) -> None:
    copy = copy_database(tryton_prepared.data_dir, tmp_path / "copy", settings=tryton_prepared.settings)
    done = tether("tryton", "prepare", env={"TETHER_TRYTON_DATA_DIR": str(copy.data_dir)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tether tryton: already prepared at {copy.sqlite_file} (--fresh rebuilds it)"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql://root@127.0.0.1/", "TETHER_TRYTON_DATABASE_URL must be postgresql://"),
        ("postgresql://nobody:secret-pw@127.0.0.1:1/", "cannot reach PostgreSQL at 127.0.0.1:1/"),
    ],
)
def test_a_bad_database_url_is_one_clear_line(url: str, said: str, tmp_path: Path) -> None:
    env = {"TETHER_TRYTON_DATABASE_URL": url, "TETHER_TRYTON_DATA_DIR": str(tmp_path)}
    done = tether("tryton", "prepare", env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"tether: {said}") and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and "secret-pw" not in done.stderr + done.stdout


def test_without_the_tryton_group_the_command_says_how_to_get_it(tmp_path: Path) -> None:
    hide = "import sys; sys.modules['trytond'] = None; from tether.cli import main; raise SystemExit(main())"
    done = subprocess.run(
        [sys.executable, "-c", hide, "tryton", "prepare"],
        capture_output=True,
        text=True,
        env={**os.environ, "TETHER_TRYTON_DATA_DIR": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "run `make tryton`" in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())  # nothing was started


def test_serve_runs_trytond_in_the_foreground_and_prints_the_url_and_logins(
    tryton_prepared: PreparedTryton, tmp_path: Path
) -> None:
    port = free_port()
    copy = copy_database(tryton_prepared.data_dir, tmp_path / "served", settings=tryton_prepared.settings, port=port)
    env = {**os.environ, "TETHER_TRYTON_DATA_DIR": str(copy.data_dir), "TETHER_TRYTON_PORT": str(port)}
    serve = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "tryton", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert serve.stdout is not None
        said = serve.stdout.readline() + serve.stdout.readline()
        assert f"serving tether_demo at http://127.0.0.1:{port}/" in said, said
        assert f"sales / {SALES.password}" in said and f"admin / {demo_data.ADMIN_PASSWORD}" in said
        deadline = time.monotonic() + 120
        while True:
            try:
                r = rpc(
                    f"http://127.0.0.1:{port}/tether_demo/rpc/",
                    "common.db.login",
                    ["sales", {"password": SALES.password}],
                )
                break
            except httpx.TransportError:
                assert serve.poll() is None and time.monotonic() < deadline, "trytond did not start"
                time.sleep(0.3)
        assert r.status_code == 200 and r.json()["result"][0] > 0, r.text
        taken = tether(
            "tryton", "serve", env={"TETHER_TRYTON_DATA_DIR": str(copy.data_dir), "TETHER_TRYTON_PORT": str(port)}
        )
        assert (
            taken.returncode == 2
            and taken.stderr.strip() == f"tether: 127.0.0.1:{port} is taken: set TETHER_TRYTON_PORT to a free port"
        )
    finally:
        serve.terminate()  # `tether tryton serve` became trytond: this stops it
        serve.wait(20)
