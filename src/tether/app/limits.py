"""Size limits on what a caller may send, enforced before anything is buffered or stored.

- ``LimitRequestBody``: an ASGI middleware in front of every route. A ``Content-Length`` over
  ``TETHER_MAX_BODY_BYTES`` is refused at once, before the body is read; a body without one
  (chunked) is counted as its ``http.request`` chunks arrive and refused as soon as the count
  passes the limit. Either way the answer is 413 ``{"error": …}`` and the connection closes, so
  at most the limit plus one chunk is ever held — also for routes that need no token (the async
  callback), and before any route decides the request is a 404.
- ``check_context``: a session's ``globalContext`` within its size, nesting depth and key count
  (422 naming ``globalContext``). The context becomes part of the session's system prompt,
  which goes to the model on every round; the prompt takes a bounded excerpt of it as well
  (``tether.core.prompt.prompt_context``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.errors import InvalidInput


class BodyRefused(HTTPException):
    """A request body refused while it is read: raised from ``receive``, so the route that reads
    the body gets it (FastAPI re-raises an ``HTTPException`` met while reading a body, and the
    app's error handler answers ``response()``); ``read_checked`` answers it itself when nothing
    has answered yet."""

    def __init__(self, status: int, body: dict[str, str], headers: dict[str, str] | None = None) -> None:
        super().__init__(status, body["error"], headers=headers)
        self.body = body

    def response(self) -> JSONResponse:
        return JSONResponse(self.body, status_code=self.status_code, headers=self.headers)


class BodyTooLarge(BodyRefused):
    def __init__(self, limit: int) -> None:
        super().__init__(413, {"error": too_large(limit)}, headers={"Connection": "close"})


async def read_checked(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, check: Callable[[Message], None]
) -> None:
    """Run ``app`` with every ``http.request`` message passed to ``check`` as it is received
    (which raises ``BodyRefused``); a refusal no one answered yet is answered here."""
    started = False

    async def checked() -> Message:
        message = await receive()
        if message["type"] == "http.request":
            check(message)
        return message

    async def watched(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
        await send(message)

    try:
        await app(scope, checked, watched)
    except BodyRefused as exc:
        if started:
            raise
        await exc.response()(scope, receive, send)


def too_large(limit: int) -> str:
    return f"request body too large: at most {limit} bytes are accepted (TETHER_MAX_BODY_BYTES)"


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length itself
    return None


class LimitRequestBody:
    """Refuse request bodies over ``max_bytes`` with 413, counting as they arrive."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await BodyTooLarge(self.max_bytes).response()(scope, receive, send)
            return
        received = 0

        def count(message: Message) -> None:
            nonlocal received
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise BodyTooLarge(self.max_bytes)

        await read_checked(self.app, scope, receive, send, count)


def context_shape(value: Any, max_depth: int) -> tuple[int, int]:
    """(nesting depth, number of object keys) of a JSON value, without recursion; the walk stops
    once the depth passes ``max_depth``. ``{"a": 1}`` is depth 1, ``{"a": {"b": [1]}}`` depth 3."""
    deepest, keys = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
            keys += len(item)
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > max_depth:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest, keys


def check_context(context: dict[str, Any], *, max_bytes: int, max_depth: int, max_keys: int) -> None:
    """``InvalidInput`` (field ``globalContext``) for a context over any of its limits."""
    depth, keys = context_shape(context, max_depth)
    if depth > max_depth:
        raise InvalidInput(
            f"globalContext nests more than {max_depth} levels deep; at most {max_depth} are accepted",
            field="globalContext",
        )
    if keys > max_keys:
        raise InvalidInput(f"globalContext has {keys} keys; at most {max_keys} are accepted", field="globalContext")
    size = len(json.dumps(context, ensure_ascii=False, separators=(",", ":")).encode())
    if size > max_bytes:
        raise InvalidInput(
            f"globalContext is {size} bytes as JSON; at most {max_bytes} are accepted "
            "(keep large data in the business system and pass its id)",
            field="globalContext",
        )
