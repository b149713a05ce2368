"""The chat page's login form when a guesser has locked a username out: the person sees what
happened and when to try again, not a bare failure."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import BROWSER, ERP, Session, start_server
from tests.servers import ServerProcess

pytestmark = BROWSER


@pytest.fixture
def locked_server(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_server(tmp_path, ERP, TETHER_LOGIN_MAX_FAILURES="3")
    try:
        yield server
    finally:
        server.stop()


def test_a_locked_out_user_reads_why_and_when_on_the_login_form(
    locked_server: ServerProcess, chat: Callable[[ServerProcess], Session]
) -> None:
    for i in range(3):  # someone guessed sales05's password
        r = httpx.post(f"{locked_server.url}/api/auth/login", json={"username": "sales05", "password": f"g{i}"})
        assert r.status_code == 401
    s = chat(locked_server)
    s.open()
    page = s.page
    page.wait_for_selector("#login[open]")
    page.click("#tab-password")
    page.fill("#login-user", "sales05")
    page.fill("#login-pass", "666666")
    page.click("#login-submit")
    error = page.locator("#login-error")
    error.wait_for(state="visible")
    s.wait_for(lambda: "too many failed logins" in error.inner_text(), what="the lock-out message")
    text = error.inner_text()
    assert "登录失败" in text and "locked out for 1 min" in text and "up to 1 h)" in text and "try again at" in text, (
        text
    )
    assert page.is_visible("#login")  # still on the login form, nothing logged in
    s.shot("locked-out")
