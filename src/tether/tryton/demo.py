"""``make demo-tryton`` / ``tether tryton demo``: the ERP assistant on Tryton. Prepares the local
Tryton if needed, serves it (``trytond``), starts ``tether serve`` talking to it
(``TETHER_ERP_KIND=tryton``, tether's own database ``./var/tether-tryton.db`` unless
``TETHER_DATABASE_URL`` names one), logs in as each demo role through tether — a Tryton login —
and asks each a few questions, printing the answers; then leaves both running for the chat page
until Ctrl-C (``--once``: stops after the questions). It talks to tether over HTTP only."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tether.errors import ConfigError

QUESTIONS = (
    ("sales", ("草稿状态的销售订单有几张", "每个客户的销售订单含税合计", "有哪些采购订单")),
    ("stock", ("产品P003的库存数量", "有哪些发票")),
    ("accountant", ("未收金额最多的发票", "已过账的发票有几张")),
    ("manager", ("有哪些采购订单", "最近一张销售订单")),
)


def _tether(url: str, port: int, host: str, database: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "TETHER_PACKS": os.environ.get("TETHER_PACKS", "tether.erp_demo.pack,tether.packs.erp.pack"),
        "TETHER_ERP_KIND": "tryton",
        "TETHER_ERP_BASE_URL": url,
        "TETHER_ERP_TRYTON_DATABASE": database,  # the one prepared (TETHER_TRYTON_DATABASE), SQLite or PostgreSQL
        "TETHER_DATABASE_URL": os.environ.get("TETHER_DATABASE_URL", "sqlite:///./var/tether-tryton.db"),
        "TETHER_PUBLIC_URL": f"http://{host}:{port}",
    }
    Path("var").mkdir(exist_ok=True)
    command = [sys.executable, "-m", "tether.cli", "serve", "--host", host, "--port", str(port)]
    with Path("var/tether-tryton.log").open("ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)


def _wait(base: str, process: subprocess.Popen[bytes], timeout_s: float = 240.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConfigError(f"tether serve exited ({process.returncode}): see var/tether-tryton.log")
        try:
            if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise ConfigError(f"tether serve did not answer at {base} within {timeout_s:.0f} s: see var/tether-tryton.log")


def _answer(base: str, token: str, question: str) -> dict[str, Any]:
    r = httpx.post(
        f"{base}/api/agent/sessions",
        json={"message": question},
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
    r.raise_for_status()
    body: dict[str, Any] = r.json()
    return body


def ask_each_role(base: str, passwords: dict[str, str], out: Any = sys.stdout) -> int:
    """The demo questions, each role's through its own Tryton login. -> how many were answered."""
    answered = 0
    for login, questions in QUESTIONS:
        r = httpx.post(f"{base}/api/auth/login", json={"username": login, "password": passwords[login]}, timeout=60)
        r.raise_for_status()
        token = str(r.json()["token"])
        out.write(f"\n== {login} (Tryton login) ==\n")
        for question in questions:
            session = _answer(base, token, question)
            text = str(session["transcript"][-1].get("content") or "")
            answered += session.get("outcome") == "answered"
            out.write(f"\n> {question}   [{session.get('outcome')}]\n{text}\n")
    return answered


def run(host: str, port: int, once: bool) -> int:
    from tether.tryton import demo_data
    from tether.tryton.commands import _prepare, _settings
    from tether.tryton.server import start_trytond

    settings = _settings()
    _prepare(settings, fresh=False)
    print(f"tether tryton demo: starting trytond at http://{settings.host}:{settings.port}/ …", flush=True)
    with start_trytond(settings) as trytond:
        base = f"http://{host}:{port}"
        print(f"tether tryton demo: starting tether at {base} (TETHER_ERP_KIND=tryton) …", flush=True)
        tether = _tether(trytond.url, port, host, trytond.database)
        try:
            _wait(base, tether)
            passwords = {u.login: u.password for u in demo_data.USERS}
            answered = ask_each_role(base, passwords)
            total = sum(len(q) for _, q in QUESTIONS)
            print(f"\ntether tryton demo: {answered} of {total} questions answered (the others: refused or asked)")
            if once:
                return 0
            print(f"\nchat page: {base}/chat — log in as sales / {passwords['sales']} (a Tryton login); Ctrl-C stops")
            tether.wait()
            return 0
        except KeyboardInterrupt:
            return 0
        finally:
            tether.terminate()
            try:
                tether.wait(15)
            except subprocess.TimeoutExpired:
                tether.kill()
