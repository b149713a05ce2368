"""Shared fixtures for the ERP pack's tests: a live ``tether serve`` with the demo ERP mounted at
``/erp`` and the ERP pack talking to it over HTTP — the embedded default's production path.

``ErpServer.login(user)`` logs in through tether (``POST /api/auth/login``, which proxies the
ERP) and returns a client holding that user's ERP token; ``erp_direct(token)`` talks to the ERP
itself, bypassing tether, to prove what the ERP alone would hand out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import ServerProcess, get_session, runtime_events, wait_status
from tether.erp_demo import facts

PACKS = "tether.erp_demo.pack,tether.packs.erp.pack"
AGENT_KEY = "test-agent-key"  # TETHER_ERP_AGENT_KEY: what the ERP's execStaging requires of tether
SEED_SCALE = "0.3"

__all__ = ["ErpServer", "answer_of", "erp_rows", "facts", "get_session", "runtime_events", "wait_status"]


@pytest.fixture(autouse=True)
def _clean_erp_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("TETHER_ERP_"):
            monkeypatch.delenv(key)


class ErpServer(ServerProcess):
    def __init__(self, workdir: Path, **env: str) -> None:
        super().__init__(
            workdir,
            {
                "TETHER_PACKS": PACKS,
                "TETHER_ERP_SEED_SCALE": SEED_SCALE,
                "TETHER_LOG_LEVEL": "INFO",
                "TETHER_ERP_AGENT_KEY": AGENT_KEY,
                **env,
            },
            stop_timeout=15.0,
        )
        self.tokens: list[str] = []  # every token handed out, for the leak checks

    def token(self, user: str, password: str = facts.PASSWORD) -> str:
        r = httpx.post(f"{self.url}/api/auth/login", json={"username": user, "password": password}, timeout=30)
        assert r.status_code == 200, r.text
        token = str(r.json()["token"])
        self.tokens.append(token)
        return token

    def login(self, user: str) -> httpx.Client:
        return self.client(self.token(user), timeout=60.0)

    def erp_direct(self, token: str, agent: bool = False) -> httpx.Client:
        """The ERP as ``token``'s user; ``agent``: also holding the agent backend's key (as tether
        does, or the ERP's own executor would)."""
        headers = {"Authorization": token, **({"X-Agent-Key": AGENT_KEY} if agent else {})}
        return httpx.Client(base_url=f"{self.url}/erp", headers=headers, timeout=30)

    def ask(self, client: httpx.Client, message: str) -> dict[str, Any]:
        r = client.post("/api/agent/sessions", json={"message": message})
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def tool(self, client: httpx.Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
        r = client.post(f"/tools/{name.replace('_', '-')}", json=args)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body


def tether_cli(server: ServerProcess, home: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``tether <args>`` in a subprocess against ``server``, its login kept under ``home``."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(home), "TETHER_URL": server.url}
    env.pop("TETHER_TOKEN", None)

    def tether(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "tether.cli", *args]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)

    return tether


def erp_rows(erp: httpx.Client, form_id: str, **params: Any) -> dict[str, Any]:
    """One page of a form read from the ERP directly (bypassing tether): what the ERP alone hands out."""
    r = erp.post("/getBusinessDataByFormcustomId", json={"sFormId": form_id, "pageNum": 1, "pageSize": 50, **params})
    assert r.status_code == 200, r.text
    dataset: dict[str, Any] = r.json()["dataset"]
    return dataset


def answer_of(session: dict[str, Any]) -> str:
    return str(session["transcript"][-1].get("content") or "")


@pytest.fixture(scope="module")
def erp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    server = ErpServer(tmp_path_factory.mktemp("erp-server"), TETHER_ERP_ME_CACHE_S="1").start(timeout=120)
    try:
        yield server
    finally:
        server.stop()
