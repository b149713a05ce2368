"""Browser tests of the chat page: Playwright drives Debian's Chromium (``/usr/bin/chromium``,
installed by ``make chromium``; never Playwright's own download) against a live ``tether serve``.

Every request that is not to the server under test is aborted and fails the test: the page must
work offline. Screenshots of each state land in ``<pytest basetemp>/chat-screenshots``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.servers import ServerProcess

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
CHATPACK = ROOT / "tests" / "app" / "chatpack"
SLOWPACK = ROOT / "tests" / "app" / "slowpack"
FINANCE = "tether.packs.finance_cs.pack"
ERP = "tether.erp_demo.pack,tether.packs.erp.pack"
TOKENS = {
    "dev-alice": {"userId": "alice", "tenant": "finance-demo", "grants": []},
    "dev-bob": {"userId": "bob", "tenant": "finance-demo", "grants": []},
}
MAIN_QUESTION = "请分析最近30天贵金属规则调整相关的客服问题并生成报告"
BROWSER = [pytest.mark.browser, pytest.mark.slow]  # each module's pytestmark: `pytest -m browser` selects them


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


def chat_env(workdir: Path, packs: str, **env: str) -> dict[str, str]:
    return {
        "TETHER_DATABASE_URL": f"sqlite:///{workdir / 'tether.db'}",
        "TETHER_PACKS": packs,
        "TETHER_DEV_TOKENS": json.dumps(TOKENS),
        "TETHER_SSE_HEARTBEAT_S": "1",
        "TETHER_PLANNER_STREAM": "true",
        **env,
    }


def start_server(workdir: Path, packs: str, **env: str) -> ServerProcess:
    return ServerProcess(workdir, chat_env(workdir, packs, **env), stop_timeout=15.0).start(timeout=120)


@pytest.fixture(scope="session")
def chat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The finance pack (a small seeded data set), the chat test pack and the slow test pack."""
    server = start_server(
        tmp_path_factory.mktemp("chat"),
        f"{FINANCE},{CHATPACK},{SLOWPACK}",
        TETHER_FINANCE_SEED="yes",
        TETHER_FINANCE_SEED_ROWS="3000",
        TETHER_FINANCE_SEED_DAYS="120",
    )
    try:
        yield server
    finally:
        server.stop()
    server.assert_no_server_errors()


@pytest.fixture(scope="session")
def erp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The demo ERP and the ERP pack; /me is asked on every request (no cache), so a revoked
    token is refused at once."""
    server = start_server(tmp_path_factory.mktemp("erp"), ERP, TETHER_ERP_ME_CACHE_S="0")
    try:
        yield server
    finally:
        server.stop()
    server.assert_no_server_errors()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "chat-screenshots"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Per module: Playwright's sync API runs an event loop in this thread while it is open, and
    the tests after these ones call ``asyncio.run``."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `make chromium` installs it (apt-get install -y chromium, as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Session:
    """One browser context on one server: the page, what was blocked, what the page logged."""

    server: ServerProcess
    context: Any
    page: Any
    shots: Path
    name: str
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    count: int = 0

    def shot(self, label: str, page: Any = None) -> Path:
        self.count += 1
        path = self.shots / f"{self.name}-{self.count:02d}-{label}.png"
        (page or self.page).screenshot(path=str(path))
        return path

    def open(self, path: str = "/chat") -> None:
        self.page.goto(self.server.url + path)

    def login_token(self, token: str = "dev-alice") -> None:
        page = self.page
        page.wait_for_selector("#login[open]")
        page.click("#tab-token")
        page.fill("#login-token", token)
        page.click("#login-submit")
        page.wait_for_selector("#login", state="hidden")

    def login_erp(self, username: str, password: str) -> None:
        page = self.page
        page.wait_for_selector("#login[open]")
        page.click("#tab-password")
        page.fill("#login-user", username)
        page.fill("#login-pass", password)
        page.click("#login-submit")
        page.wait_for_selector("#login", state="hidden")

    def ask(self, text: str) -> None:
        self.page.fill("#composer-input", text)
        self.page.press("#composer-input", "Enter")

    def wait_status(self, status: str, timeout: float = 60_000) -> None:
        self.page.wait_for_selector(f'#chat-status[data-status="{status}"]', timeout=timeout)

    def wait_for(self, fn: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
        """Poll ``fn`` while Playwright keeps running: the route guard answers the page's requests
        only while this thread is inside a Playwright call, so a plain sleep would stall them."""
        deadline = time.monotonic() + timeout
        while True:
            value = fn()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
            self.page.wait_for_timeout(50)

    def session_id(self) -> str:
        value = self.wait_for(lambda: self.page.evaluate("new URLSearchParams(location.search).get('c')"), what="c=")
        return str(value)


@pytest.fixture
def chat(browser: Any, shots: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[ServerProcess], Session]]:
    """``chat(server)`` opens a fresh browser context (its own sessionStorage) on ``server``."""
    opened: list[Session] = []

    def open_on(server: ServerProcess) -> Session:
        context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="zh-CN")
        page = context.new_page()
        here = urlsplit(server.url).netloc
        name = f"{request.node.name}{'-' + str(len(opened) + 1) if opened else ''}"
        s = Session(server, context, page, shots, name)

        def guard(route: Any) -> None:
            url = route.request.url
            if urlsplit(url).netloc == here:
                route.continue_()
            else:
                s.blocked.append(url)
                route.abort()

        context.route("**/*", guard)
        page.on("pageerror", lambda e: s.errors.append(f"pageerror: {e}"))
        page.on("request", lambda r: s.requests.append(r))
        opened.append(s)
        return s

    yield open_on
    failed = request.node.stash.get(FAILED, False)
    for s in opened:
        if failed:
            for n, page in enumerate(s.context.pages):
                page.screenshot(path=str(s.shots / f"{s.name}-FAILED-{n}.png"))
        s.context.close()
    for s in opened:
        assert not s.blocked, f"the page tried to reach other hosts: {s.blocked}"
        assert not s.errors, f"the page threw: {s.errors}"
