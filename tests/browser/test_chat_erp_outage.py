"""The chat page when the ERP behind the login is down: tether pointed at a separate
``tether erp serve`` that is stopped (SIGTERM) under a logged-in page. The page shows
"ERP 暂时无法访问" in its banner — not the login dialog, no re-login button — retries by itself,
and shows the same conversation again once the ERP is back, with the same login.
Run alone with ``pytest -m browser``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import BROWSER, chat_env
from tests.packs.erp.conftest import AGENT_KEY
from tests.servers import ErpProcess, ServerProcess
from tether.erp_demo import facts

pytestmark = BROWSER

BANNER = "#banner:not([hidden])"


@pytest.fixture(scope="module")
def apart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ErpProcess, ServerProcess]]:
    erp = ErpProcess(tmp_path_factory.mktemp("erp-alone"), AGENT_KEY).start(timeout=120)
    workdir = tmp_path_factory.mktemp("chat-erp-apart")
    env = chat_env(
        workdir,
        "tether.packs.erp.pack",
        **erp.tether_env(),
        TETHER_ERP_ME_CACHE_S="0",
        TETHER_ERP_HTTP_TIMEOUT_S="2",
        TETHER_ERP_BREAKER_FAILURES="2",
        TETHER_ERP_BREAKER_RESET_S="2",
    )
    server = ServerProcess(workdir, env, stop_timeout=15.0).start(timeout=120)
    try:
        yield erp, server
    finally:
        server.stop()
        erp.stop()
    server.assert_no_server_errors()


def test_a_stopped_erp_shows_the_outage_banner_not_the_login_and_the_page_recovers_by_itself(
    chat: Any, apart: tuple[ErpProcess, ServerProcess]
) -> None:
    erp, server = apart
    s = chat(server)
    s.open()
    s.login_erp("fin01", facts.PASSWORD)
    s.ask("列出超期90天以上的应收")
    s.wait_status("SUCCEEDED")
    sid = s.session_id()
    answer = s.page.inner_text("#messages")

    erp.terminate()
    s.open(f"/chat?c={sid}")  # a reload: the conversation and the list are read again
    s.page.wait_for_selector(BANNER, timeout=30_000)
    page = s.page
    assert "ERP 暂时无法访问" in page.inner_text("#banner-text")
    assert not page.is_visible("#banner-login")  # nothing to log in again for
    assert page.evaluate("document.getElementById('login').open") is False
    assert page.evaluate("sessionStorage.getItem('tether.token')")  # the login is kept
    assert not page.query_selector(".toast")  # the banner says it; no error toast besides
    s.shot("erp-down")

    erp.start(timeout=120)
    page.wait_for_selector("#banner", state="hidden", timeout=40_000)  # retried by itself
    page.wait_for_function(
        "t => document.getElementById('messages').innerText.includes(t)", arg=answer.strip()[:20], timeout=30_000
    )
    assert sid in page.inner_text("#conversations") or page.query_selector(f'[data-id="{sid}"]')
    assert page.evaluate("document.getElementById('login').open") is False
    s.shot("erp-back")
