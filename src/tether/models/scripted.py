"""``ScriptedModel``: a ``ChatModel`` for tests that replays a fixed script of replies.

Each call takes the next entry: a ``ModelReply``, a callable that gets the ``ModelRequest`` (so
a test can assert on what the model saw) and returns a reply, or an exception to raise (a
``ModelError`` simulates a failing endpoint). A call past the end of the script fails loudly with
``ScriptExhausted``; ``assert_consumed()`` fails if entries were never used. Never for production.
Requests with ``purpose="summary"`` (the rolling summary, core/summary.py) take the next entry of
``summaries`` when one is given, so a test need not predict when the window folds.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any, TypeAlias

from tether.core.messages import ModelReply, ModelRequest, ToolCall, Usage
from tether.errors import ModelError

ReplyFn: TypeAlias = Callable[[ModelRequest], "ModelReply | Awaitable[ModelReply]"]
ScriptEntry: TypeAlias = "ModelReply | ReplyFn | BaseException"
CallSpec: TypeAlias = "tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str]"


class ScriptExhausted(AssertionError):
    """The code under test called the model more often than the script allows."""


class ScriptedModel:
    """Replays ``replies`` in order; ``fail_times=n`` makes the first n calls raise ``ModelError``.

    ``.requests`` holds a snapshot of every request received (failed calls included), with the
    messages copied as they were at call time. Content is fed to ``request.on_token`` word by word.
    """

    def __init__(
        self,
        replies: Iterable[ScriptEntry] = (),
        *,
        summaries: Iterable[ScriptEntry] | None = None,
        fail_times: int = 0,
        fail_retryable: bool = True,
        name: str = "scripted",
    ) -> None:
        failures: list[ScriptEntry] = [
            failure(f"scripted endpoint failure {i + 1} of {fail_times}", retryable=fail_retryable)
            for i in range(fail_times)
        ]
        self._script: list[ScriptEntry] = failures + list(replies)
        self._next = 0
        self._summaries = None if summaries is None else list(summaries)
        self.name = name
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        """How many script entries have not been used yet."""
        return len(self._script) - self._next

    async def chat(self, request: ModelRequest) -> ModelReply:
        self.requests.append(_snapshot(request))
        entry = self._take(request)
        if isinstance(entry, BaseException):
            raise entry
        reply = entry(request) if callable(entry) else entry
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, ModelReply):
            raise TypeError(f"script entry #{self._next} returned {type(reply).__name__}, not ModelReply")
        if request.on_token is not None and reply.content:
            for piece in re.findall(r"\s*\S+|\s+$", reply.content):
                await request.on_token(piece)
        return reply

    def _take(self, request: ModelRequest) -> ScriptEntry:
        if request.purpose == "summary" and self._summaries is not None:
            if not self._summaries:
                raise ScriptExhausted(f"ScriptedModel {self.name!r} got a summary request past its summaries")
            return self._summaries.pop(0)
        if self._next >= len(self._script):
            raise ScriptExhausted(
                f"ScriptedModel {self.name!r} got call #{len(self.requests)} but its script has only "
                f"{len(self._script)} entries; the last message was {_last_message(request)}"
            )
        self._next += 1
        return self._script[self._next - 1]

    def assert_consumed(self) -> None:
        """Fail if the code under test stopped before using the whole script."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel {self.name!r}: {self.remaining} of {len(self._script)} script entries "
                f"were never requested (got {len(self.requests)} calls)"
            )


def text(content: str, usage: Usage | None = None) -> ModelReply:
    """A final-answer reply."""
    return ModelReply(content=content, usage=usage)


def calls(*specs: CallSpec, content: str | None = None) -> ModelReply:
    """A tool-call reply: each spec is ``(name, args)`` or ``(name, args, id)``; ``args`` is a dict
    (encoded as JSON) or a raw string (to feed the loop malformed arguments)."""
    tool_calls = []
    for spec in specs:
        name, args = spec[0], spec[1]
        call_id = spec[2] if len(spec) == 3 else f"call_{uuid.uuid4().hex[:12]}"
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        tool_calls.append(ToolCall(id=call_id, name=name, arguments=raw))
    return ModelReply(content=content, tool_calls=tool_calls)


def failure(message: str = "scripted endpoint failure", retryable: bool = True) -> ModelError:
    """A script entry that makes that call raise ``ModelError``."""
    return ModelError(message, retryable=retryable)


def _snapshot(request: ModelRequest) -> ModelRequest:
    return replace(request, messages=copy.deepcopy(request.messages), tools=list(request.tools))


def _last_message(request: ModelRequest) -> str:
    if not request.messages:
        return "(none)"
    shown = json.dumps(request.messages[-1], ensure_ascii=False, default=str)
    return shown if len(shown) <= 200 else shown[:200] + "…"
