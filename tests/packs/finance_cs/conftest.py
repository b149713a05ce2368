"""Shared fixtures for the finance pack's wiring tests.

- ``FinanceServer``: a real ``tether serve`` subprocess with the finance pack only, in its own
  working directory, so the data files land under its ``./var`` (``var/tether.db``,
  ``var/finance.db``, ``var/reports/``) exactly as for a user. It can be SIGKILLed and started
  again on the same port and databases. The in-process analysis worker calls back over HTTP to
  ``TETHER_PUBLIC_URL``, which points at the server's own port.
- ``finance_server``: one such server (a small seeded data set) shared by the end-to-end and
  direct-API tests.
- ``CallbackSink``: a real HTTP server that records the analysis worker's callbacks, for the
  tests that drive ``AnalysisWorker.run_once`` without tether around it.
- ``make_finance``: ``open_finance`` + ``prepare`` on a given database, with a small data set.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.servers import ServerProcess
from tests.servers import get_session as get_session  # re-exported for the tests here
from tests.servers import runtime_events as runtime_events
from tests.servers import wait_status as wait_status
from tests.servers import wait_until as wait_until
from tether.packs.finance_cs.generator import generate
from tether.packs.finance_cs.pack import open_finance, prepare
from tether.packs.finance_cs.settings import FinanceSettings
from tether.packs.finance_cs.tools import Finance

T = TypeVar("T")
PACK = "tether.packs.finance_cs.pack"
SEED_ROWS = 3000
MAIN_QUESTION = "请分析最近30天贵金属规则调整相关的客服问题并生成报告"
FOLLOW_UP = "只分析高净值客户，并按渠道拆分"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _clean_finance_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pack's settings read TETHER_FINANCE_*; a developer's shell must not leak in."""
    for key in list(os.environ):
        if key.startswith("TETHER_FINANCE_"):
            monkeypatch.delenv(key)


# ---- a live server --------------------------------------------------------------------------------


class FinanceServer(ServerProcess):
    """``tether serve`` with the finance pack only and a small seeded data set."""

    def __init__(self, workdir: Path, **env: str) -> None:
        super().__init__(
            workdir,
            {
                "TETHER_PACKS": PACK,
                "TETHER_FINANCE_SEED": "yes",
                "TETHER_FINANCE_SEED_ROWS": str(SEED_ROWS),
                "TETHER_FINANCE_SEED_DAYS": "120",
                **env,
            },
            stop_timeout=15.0,
        )

    def client(self, token: str | None = "dev-alice", timeout: float = 60.0) -> httpx.Client:
        return super().client(token, timeout)

    def jobs(self) -> list[dict[str, Any]]:
        """The pack's analysis job queue, read straight from ``var/finance.db``."""
        path = self.workdir / "var" / "finance.db"
        if not path.exists():
            return []
        with sqlite3.connect(path) as db:
            db.row_factory = sqlite3.Row
            try:
                return [dict(r) for r in db.execute("SELECT * FROM cs_analysis_job ORDER BY created_at")]
            except sqlite3.OperationalError:  # not created yet
                return []


@pytest.fixture(scope="session")
def finance_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FinanceServer]:
    """One server with a small seeded data set for the examples and the direct API tests."""
    server = FinanceServer(tmp_path_factory.mktemp("finance")).start()
    try:
        yield server
    finally:
        server.stop()
    server.assert_no_server_errors()


# ---- session helpers ------------------------------------------------------------------------------


def tool_results(session: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool messages' bodies ({tool, kind, data}), in order."""
    return [json.loads(m["content"]) for m in session["transcript"] if m["role"] == "tool"]


def final_answer(session: dict[str, Any]) -> str:
    texts = [m["content"] for m in session["transcript"] if m["role"] == "assistant" and m.get("content")]
    assert texts, f"no assistant answer in {session['transcript']}"
    return str(texts[-1])


# ---- the worker without tether: a callback sink and a prepared Finance ---------------------------


class CallbackSink:
    """A real HTTP server on a free port that records every POST (path, headers, JSON body)."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.received: list[dict[str, Any]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                sink.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(sink.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok": true}')

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.received]


@pytest.fixture
def sink() -> Iterator[CallbackSink]:
    s = CallbackSink()
    try:
        yield s
    finally:
        s.close()


def make_finance(database_url: str, tmp_path: Path, rows: int = 800, **settings: Any) -> Finance:
    """``open_finance`` + ``prepare`` on ``database_url`` with a small generated data set."""
    fin = open_finance(
        "http://127.0.0.1:9",
        FinanceSettings(database_url=database_url, seed="no", report_dir=str(tmp_path / "reports"), **settings),
    )
    prepare(fin)
    generate(fin.repo.engine, rows=rows, days=60)
    return fin
