"""JSON bodies must hold valid Unicode: an unpaired UTF-16 surrogate is refused at the door.

JSON lets a string escape a lone surrogate (``"\\ud800"``) and Python's decoder accepts it, and
also the raw UTF-8 bytes of one (which are not UTF-8 at all); the value then travels until
something encodes it — a stored body, an audit hash, a database driver — and fails there as a
500. ``RejectUnpairedSurrogates`` reads a JSON request's body as it passes to the route and, at its
end, answers 422 when the body holds one, before any route has parsed it. Other bodies (forms,
files) pass untouched: their decoders replace what is not UTF-8.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.app.limits import BodyRefused, read_checked

UNPAIRED = "the JSON body holds an unpaired UTF-16 surrogate (\\ud800-\\udfff) in a string; send valid Unicode text"
# A \uXXXX escape of a surrogate, preceded by an even number of backslashes (\\ud800 is text).
_ESCAPED = re.compile(rb"(?<!\\)(?:\\\\)*\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_ENCODED = re.compile(rb"\xed[\xa0-\xbf]")  # a surrogate's UTF-8 form: never valid UTF-8


def unpaired_surrogate(body: bytes) -> bool:
    """Whether ``body`` (JSON text) holds a surrogate that is not half of an escaped pair."""
    if _ENCODED.search(body):
        return True
    if b"\\u" not in body:
        return False
    high_ends: int | None = None  # where the last unpaired high surrogate's escape ends
    for m in _ESCAPED.finditer(body):
        starts, high = m.end() - 6, int(m.group(1), 16) < 0xDC00
        if high:
            if high_ends is not None:
                return True  # a high one not followed by its low one
            high_ends = m.end()
        elif high_ends != starts:
            return True  # a low one without its high one right before it
        else:
            high_ends = None
    return high_ends is not None


_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_field(body: bytes) -> str:
    """Where in ``body`` the first unpaired surrogate is, as a dotted path (``globalContext.k``,
    ``messages.0.content``); ``body`` when the JSON cannot be read or the place not found."""
    try:
        value = json.loads(body)
    except ValueError:
        return "body"
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str) and _SURROGATE.search(item):
            return path or "body"
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in reversed(list(children)):
            shown = str(key).encode("utf-8", "backslashreplace").decode()  # the surrogate as \\udc00
            here = f"{path}.{shown}" if path else shown
            if isinstance(key, str) and _SURROGATE.search(key):
                return here
            stack.append((here, child))
    return "body"


class UnpairedSurrogate(BodyRefused):
    def __init__(self, field: str) -> None:
        super().__init__(422, {"error": UNPAIRED, "field": field})


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers") or ():
        if name == b"content-type":
            kind = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or kind.endswith(b"+json")
    return False


class RejectUnpairedSurrogates:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        body = bytearray()

        def check(message: Message) -> None:
            body.extend(message.get("body", b""))
            if not message.get("more_body", False) and unpaired_surrogate(bytes(body)):
                raise UnpairedSurrogate(surrogate_field(bytes(body)))

        await read_checked(self.app, scope, receive, send, check)
