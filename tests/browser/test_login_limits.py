"""The chat page's login form when a guesser has locked a username out: the person sees what
happened and when to try again, in the page's language, not a bare failure."""

from __future__ import annotations

import re
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
    s.wait_for(lambda: "锁定" in error.inner_text(), what="the lock-out message")
    text = error.inner_text()
    # in the page's language (the 429's code and params), the time as the person's local time
    assert re.fullmatch(
        r"登录失败：这个用户名登录失败的次数过多，已暂时锁定，请于 \d\d/\d\d \d\d:\d\d 之后再试。", text
    ), text
    assert page.is_visible("#login")  # still on the login form, nothing logged in
    s.shot("locked-out")
    page.evaluate("localStorage.setItem('tether.lang', 'en')")  # the same refusal on the English page
    page.reload()
    page.wait_for_selector("#login[open]")
    page.click("#tab-password")
    page.fill("#login-user", "sales05")
    page.fill("#login-pass", "666666")
    page.click("#login-submit")
    s.wait_for(lambda: "locked out" in error.inner_text(), what="the English lock-out message")
    text = error.inner_text()
    assert "Too many failed logins for this username: it is locked out; try again at" in text, text
    assert not re.search(r"[\u4e00-\u9fff]", text.split(":", 1)[1]), text
