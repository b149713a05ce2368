"""Reading a Chat Completions answer, streamed or whole, into a ``Draft`` the adapter settles.

What real servers send differs in small ways, and each is read here: reasoning in
``reasoning_content`` (DeepSeek, DashScope, llama.cpp) or ``reasoning`` (Ollama, newer vLLM) or
as ``<think>`` tags in the content; tool-call ids with and without ``call_``, or ``""`` on every
chunk (DashScope); a whole call in one chunk (Ollama); a name without an ``arguments`` key (vLLM);
``content: null`` or ``""``; usage only in a final ``choices: []`` chunk. Content goes through a
``ContentSplitter``, so a streamed ``TOKEN`` never carries a ``<think>`` or ``<tool_call>`` tag.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from tether.core.messages import ToolCall, Usage
from tether.models.endpoint_errors import ModelEndpointError
from tether.models.tagged_content import ContentSplitter, split_content


@dataclass(slots=True)
class Draft:
    """One answer as the server sent it, before the adapter decides what it means."""

    content: str  # the visible text (tags taken out; ``held`` not included)
    reasoning: str
    tool_calls: list[ToolCall]
    call_blocks: list[str]  # ``<tool_call>`` blocks left in the content
    held: str  # visible text that began with "{", kept back in case it is a tool call
    finish_reason: str | None
    model: str | None
    usage: Usage | None

    def cut_off_in_a_call(self) -> bool:
        """The output limit cut a tool call: its arguments end before their JSON does."""
        if self.finish_reason != "length":
            return False
        if self.call_blocks and not _parses(self.call_blocks[-1]):
            return True
        if self.held and not _parses(self.held) and '"name"' in self.held[:40]:  # a bare JSON call, cut
            return True
        return any(not _parses(call.arguments) for call in self.tool_calls)

    def cut_off_while_thinking(self) -> bool:
        """The output limit came before any answer or call: the model spent it thinking."""
        nothing = not (self.content or self.held or self.tool_calls or self.call_blocks)
        return self.finish_reason == "length" and nothing


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Folds ``ChatCompletionChunk``s into a ``Draft``: content through the splitter, reasoning
    deltas, tool-call fragments by ``index`` (id and name arrive once, arguments in pieces), usage."""

    def __init__(self, starts_thinking: bool = False) -> None:
        self._split = ContentSplitter(starts_thinking)
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._usage: Usage | None = None
        self._finish_reason: str | None = None
        self._model: str | None = None

    def add(self, chunk: Any) -> str:
        """Take one chunk; return the visible text that may be streamed now ("" for none)."""
        self._model = self._model or getattr(chunk, "model", None)
        if getattr(chunk, "usage", None) is not None:
            self._usage = _usage(chunk.usage)
        visible: list[str] = []
        for choice in getattr(chunk, "choices", None) or []:
            if choice.finish_reason:
                self._finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            reasoning = _reasoning_of(delta)
            if reasoning:
                self._reasoning.append(reasoning)
                visible.append(self._split.not_thinking())  # the server parses reasoning itself
            for fragment in delta.tool_calls or []:
                self._add_call_fragment(fragment)
            if delta.content:
                visible.append(self._split.feed(delta.content))
        return "".join(visible)

    def close(self) -> str:
        """The end of the stream: the visible text kept back for a possible tag."""
        return self._split.close()

    def _add_call_fragment(self, fragment: Any) -> None:
        index = fragment.index
        if index is None:  # some servers omit it: a new id starts a call, anything else continues
            known = {c.id for c in self._calls.values()}
            fresh = fragment.id and fragment.id not in known
            index = len(self._calls) if fresh or not self._calls else max(self._calls)
        call = self._calls.setdefault(index, _PartialCall())
        if fragment.id and not call.id:
            call.id = fragment.id
        function = fragment.function
        if function is not None:
            if function.name and not call.name:
                call.name = function.name
            if function.arguments:
                call.arguments.append(function.arguments)

    def draft(self) -> Draft:
        """The assembled answer; a tool call that never got a name is an error of the endpoint."""
        calls = []
        for index in sorted(self._calls):
            part = self._calls[index]
            if not part.name:
                raise ModelEndpointError(
                    f"model endpoint streamed tool call #{index} without a function name", retryable=True
                )
            calls.append(ToolCall(part.id or new_call_id(), part.name, "".join(part.arguments) or "{}"))
        reasoning = "".join(self._reasoning) + self._split.reasoning
        split = self._split
        return Draft(
            split.visible, reasoning, calls, split.calls, split.held, self._finish_reason, self._model, self._usage
        )


def parse_completion(completion: Any, starts_thinking: bool = False) -> Draft:
    """A non-streamed ``ChatCompletion`` as a ``Draft``."""
    if not completion.choices:
        raise ModelEndpointError("model endpoint returned no choices", retryable=True)
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCall(call.id or new_call_id(), call.function.name, call.function.arguments or "{}")
        for call in message.tool_calls or []
        if getattr(call, "function", None) is not None
    ]
    field_reasoning = _reasoning_of(message)
    split = split_content(message.content or "", starts_thinking and not field_reasoning)
    usage = _usage(completion.usage) if completion.usage is not None else None
    reasoning = (field_reasoning or "") + split.reasoning
    return Draft(
        split.visible, reasoning, calls, split.calls, split.held, choice.finish_reason, completion.model, usage
    )


def _reasoning_of(message: Any) -> str | None:
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _usage(raw: Any) -> Usage:
    return Usage(prompt_tokens=raw.prompt_tokens or 0, completion_tokens=raw.completion_tokens or 0)


def _parses(text: str) -> bool:
    try:
        json.loads(text or "{}")
    except ValueError:
        return False
    return True


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
