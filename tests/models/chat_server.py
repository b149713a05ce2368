"""A real local HTTP server that speaks the Chat Completions protocol, for tests.

It runs uvicorn in a background thread on a free 127.0.0.1 port, records every request it gets
(path, headers, JSON body) and answers each from a script: plain JSON completions, SSE streams
(``data: {chunk}`` … ``data: [DONE]``), HTTP errors, and slow responses. Any test that needs an
OpenAI-compatible endpoint (the adapter, the turn loop, the API) can use it::

    with ChatServer([completion("hi")]) as server:
        model = build_openai_model("test", base_url=server.base_url, model="m", api_key="sk-test")
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MODEL = "test-model"


@dataclass
class Reply:
    """One scripted answer: a JSON body, or SSE events (dicts become JSON), after ``delay_s``."""

    status: int = 200
    body: dict[str, Any] | None = None
    events: Sequence[dict[str, Any] | str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    event_delay_s: float = 0.0
    done: bool = True  # end an SSE stream with ``data: [DONE]``
    raw: str | None = None  # a recorded SSE body sent as it is (comments, blank ids and all)


@dataclass
class Recorded:
    """A request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def completion(
    content: str | None = None,
    tool_calls: list[tuple[str, str, str]] | None = None,
    usage: tuple[int, int] | None = None,
    finish_reason: str | None = None,
) -> Reply:
    """A non-streamed completion; ``tool_calls`` are ``(id, name, arguments_json)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in tool_calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage:
        body["usage"] = _usage(*usage)
    return Reply(body=body)


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``delta=None`` makes a chunk with no choices (the usage chunk)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": choices,
        **extra,
    }


def usage_chunk(prompt: int, completion_tokens: int) -> dict[str, Any]:
    return chunk(None, usage=_usage(prompt, completion_tokens))


def text_stream(pieces: Iterable[str], usage: tuple[int, int] | None = None, event_delay_s: float = 0.0) -> Reply:
    """A streamed text answer, one content delta per piece."""
    events: list[dict[str, Any] | str] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in pieces]
    events.append(chunk({}, finish_reason="stop"))
    if usage:
        events.append(usage_chunk(*usage))
    return Reply(events=events, event_delay_s=event_delay_s)


def tool_call_delta(
    index: int, id: str | None = None, name: str | None = None, arguments: str | None = None
) -> dict[str, Any]:
    """A delta carrying one tool-call fragment."""
    call: dict[str, Any] = {"index": index}
    if id is not None:
        call["id"], call["type"] = id, "function"
    function = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    if function:
        call["function"] = function
    return {"tool_calls": [call]}


def error(status: int, message: str, headers: dict[str, str] | None = None, code: str | None = None) -> Reply:
    """An HTTP error with an OpenAI-style ``{"error": {...}}`` body."""
    err: dict[str, Any] = {"message": message, "type": "test_error", "param": None, "code": code}
    return Reply(status=status, body={"error": err}, headers=headers or {})


def unused_port() -> int:
    """A 127.0.0.1 port nothing listens on (for connection-refused tests)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Rules = Callable[[Any], "Reply | None"]


class ChatServer:
    """The fake endpoint. ``base_url`` ends in ``/v1``; ``requests`` lists what arrived.

    ``rules`` plays a real server's request-side checks: it sees each request body first and
    returns the error that server would answer (the script is not consumed then), or None.
    ``models`` is what ``GET /v1/models`` lists."""

    def __init__(
        self, script: Iterable[Reply] = (), rules: Rules | None = None, models: list[dict[str, Any]] | None = None
    ) -> None:
        self.rules = rules
        self.models = models  # what GET /v1/models lists (None: 404, as some servers answer)
        self.refused: list[Reply] = []
        self.script: list[Reply] = list(script)
        self.requests: list[Recorded] = []
        self.unexpected = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        routes = [
            Route("/v1/chat/completions", self._handle, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ]
        app = Starlette(routes=routes)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._socket = socket.socket()
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = int(self._socket.getsockname()[1])
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def start(self) -> ChatServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("chat server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    def assert_consumed(self) -> None:
        assert not self.script, f"chat server: {len(self.script)} scripted replies were never requested"
        assert not self.unexpected, f"chat server: {self.unexpected} requests arrived with no reply scripted"

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _models(self, request: Request) -> Response:
        if self.models is None:
            return JSONResponse({"error": {"message": "Not Found"}}, status_code=404)
        return JSONResponse({"object": "list", "data": self.models})

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        refusal = self.rules(body) if self.rules is not None else None
        with self._lock:
            self.requests.append(Recorded(request.method, request.url.path, dict(request.headers), body))
            if refusal is not None:
                self.refused.append(refusal)
                reply: Reply | None = refusal
            else:
                reply = self.script.pop(0) if self.script else None
            if reply is None:
                self.unexpected += 1
        if reply is None:
            return JSONResponse({"error": {"message": "chat server: no reply scripted"}}, status_code=418)
        await self._sleep(reply.delay_s)
        if reply.raw is not None:
            return Response(reply.raw, status_code=reply.status, headers=reply.headers, media_type="text/event-stream")
        if reply.events is None:
            return JSONResponse(reply.body or {}, status_code=reply.status, headers=reply.headers)
        return StreamingResponse(
            self._sse(reply), status_code=reply.status, headers=reply.headers, media_type="text/event-stream"
        )

    async def _sse(self, reply: Reply) -> AsyncIterator[str]:
        for event in reply.events or []:
            await self._sleep(reply.event_delay_s)
            data = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
            yield f"data: {data}\n\n"
        if reply.done:
            yield "data: [DONE]\n\n"

    async def _sleep(self, seconds: float) -> None:
        # Sleep in slices so stop() is not held up by a deliberately slow reply.
        deadline = time.monotonic() + seconds
        while not self._stopping.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def _usage(prompt: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": prompt + completion_tokens}
