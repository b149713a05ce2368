"""What flows between the loop and a model: requests, replies, tool calls, usage.

Transcript messages themselves are OpenAI-style dicts (role/content/tool_calls/tool_call_id), so
they serialise as they are and any provider accepts them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model sent it

    def to_message(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(slots=True)
class ModelReply:
    """``reasoning``: the model's thinking, never the answer. It stays on the transcript's
    assistant message as ``reasoning_content``; each adapter decides whether its server gets it back."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    reasoning: str | None = None

    def to_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_message() for c in self.tool_calls]
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        return msg


TokenSink = Callable[[str], Awaitable[None]]


@dataclass(slots=True)
class Fold:
    """What a ``purpose="summary"`` request folds: the summary so far and the transcript messages
    (whole turns) that left the prompt window. ``messages`` of the request carry the same as text."""

    previous: str | None
    messages: list[dict[str, Any]]
    max_tokens: int


@dataclass(slots=True)
class ModelRequest:
    """One model call. ``skills``, ``global_context`` and ``fold`` let the offline planner follow
    skill plans and summarise; network adapters only send ``messages`` and ``tools``."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    skills: list[Any] = field(default_factory=list)
    global_context: dict[str, Any] = field(default_factory=dict)
    on_token: TokenSink | None = None
    purpose: str = "turn"  # "turn" | "route" | "summary"
    fold: Fold | None = None  # purpose "summary" only


def tool_message(tool_call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}
