"""The chat page at ``/chat``: plain ES modules and CSS shipped in the package
(``tether/app/static/chat``), no build step, nothing fetched from any other host.

The page keeps its bearer token in ``sessionStorage`` and sends it on every API request; the
files here need none. A strict Content-Security-Policy allows scripts, styles, images and
connections from this origin only.
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from tether.errors import NotFound

STATIC = Path(__file__).resolve().parent.parent / "static" / "chat"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\.(js|css|svg)$")
TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8", "svg": "image/svg+xml"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = APIRouter(tags=["chat"], include_in_schema=False)


@router.get("/")
async def root() -> RedirectResponse:
    return RedirectResponse("/chat")


@router.get("/chat")
async def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8", headers=HEADERS)


@router.get("/chat/{name}")
async def asset(name: str) -> FileResponse:
    match = NAME.match(name)
    path = STATIC / name
    if match is None or not path.is_file():
        raise NotFound(f"no chat asset {name!r}")
    return FileResponse(path, media_type=TYPES[match.group(1)], headers=HEADERS)
