"""The chat page's files: served from the package with a strict CSP, nothing from another host,
nothing outside the static folder."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.app.conftest import TetherServer

pytestmark = pytest.mark.slow
STATIC = Path(__file__).resolve().parents[2] / "src" / "tether" / "app" / "static" / "chat"


def test_the_page_and_its_modules_are_served_with_a_strict_policy(api_server: TetherServer) -> None:
    page = httpx.get(api_server.url + "/chat")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "default-src 'none'" in csp
    assert 'src="/chat/app.js"' in page.text
    for name in ("app.js", "api.js", "view.js", "cards.js", "markdown.js", "dom.js", "i18n.js"):
        r = httpx.get(f"{api_server.url}/chat/{name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript"), name
    css = httpx.get(api_server.url + "/chat/chat.css")
    assert css.headers["content-type"].startswith("text/css")
    assert httpx.get(api_server.url + "/", follow_redirects=False).headers["location"] == "/chat"


@pytest.mark.parametrize("path", ["/chat/..%2Fmain.py", "/chat/nope.js", "/chat/index.html.bak", "/chat/.hidden.js"])
def test_nothing_else_is_served(api_server: TetherServer, path: str) -> None:
    assert httpx.get(api_server.url + path).status_code == 404


def test_no_file_loads_anything_from_another_host() -> None:
    remote = re.compile(r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import|from\s+["']https?:""")
    for path in STATIC.iterdir():
        text = path.read_text()
        assert not remote.search(text), f"{path.name} refers to another host"
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text and "document.write" not in text, path.name
