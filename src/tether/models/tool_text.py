"""Tool calls a server left in ``content`` as text, read back into tool calls when they are sound.

Two shapes are recognised: the hermes / Qwen ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``
block (what vLLM's hermes parser leaves behind when it fails) and a reply that is nothing but a
JSON object naming a tool (``{"name": …, "arguments"|"parameters": {…}}``). A call is recovered
only when its JSON parses, it names a tool the request offered, and its arguments are an object
holding every required parameter; anything less is ``Unreadable`` and never executed.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from tether.core.messages import ToolCall


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Tool-call text that could not be turned into a call; ``reason`` says why (for the model)."""

    reason: str


def recover_tool_calls(blocks: list[str], tools: list[dict[str, Any]]) -> list[ToolCall] | Unreadable:
    """The calls of ``<tool_call>`` blocks, all or nothing."""
    calls: list[ToolCall] = []
    for block in blocks:
        call = _call(block, tools)
        if isinstance(call, Unreadable):
            return call
        calls.append(call)
    return calls


def bare_json_call(text: str, tools: list[dict[str, Any]]) -> ToolCall | Unreadable | None:
    """A reply that is one JSON object naming an offered tool: its call; None when the text is
    not an attempt at a tool call at all (an answer that happens to be JSON)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    if value["name"] not in _specs(tools):
        return None
    return _call(text, tools)


def _call(text: str, tools: list[dict[str, Any]]) -> ToolCall | Unreadable:
    try:
        value = json.loads(text.strip())
    except ValueError:
        return Unreadable("the tool call's JSON does not parse (cut off, or not JSON)")
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return Unreadable('a tool call must be a JSON object with "name" and "arguments"')
    specs = _specs(tools)
    name = value["name"]
    if name not in specs:
        return Unreadable(f"there is no tool named {name!r}")
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return Unreadable(f"the arguments of {name} are not valid JSON")
    if not isinstance(arguments, dict):
        return Unreadable(f"the arguments of {name} must be a JSON object")
    required = specs[name].get("required") or []
    missing = [key for key in required if key not in arguments]
    if missing:
        return Unreadable(f"{name} needs the argument(s) {', '.join(missing)}")
    return ToolCall(f"call_{uuid.uuid4().hex[:16]}", name, json.dumps(arguments, ensure_ascii=False))


def _specs(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tool name -> its parameters schema, for tools in either OpenAI's or the bare form."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = tool.get("function", tool) if tool.get("type") == "function" else tool
        if isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            out[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return out
