"""What each known model server needs from tether: one ``Provider`` profile per server.

A profile holds the preset (base URL, default model, placeholder key) and the server's rules on
the wire: whether an assistant message's reasoning must be sent back (DeepSeek thinking mode with
tool calls: yes, or it answers 400; the older deepseek-r1 rule: never, or it answers 400), which
request fields it rejects or ignores, how thinking is switched on or off, and whether thinking
needs a stream (DashScope). The adapter asks the profile; the turn loop never names a provider.
Nothing here imports the ``openai`` SDK or reads the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Thinking = Literal["auto", "on", "off"]
THINKING_VALUES: tuple[Thinking, ...] = ("auto", "on", "off")

# ``reasoning_echo``: which assistant messages carry their reasoning back to the server.
#   "never"      - stripped from every message (most servers ignore or reject it)
#   "tool_calls" - kept on assistant messages that made tool calls ("" when none was stored and
#                  thinking is on), stripped from the rest (DeepSeek thinking mode)
Echo = Literal["never", "tool_calls"]

ThinkingSwitch = Callable[[bool], dict[str, Any]]  # thinking on/off -> fields merged into the body

# Models whose chat template opens <think> in the prompt, so that served without a reasoning parser
# their output starts inside the thinking and shows only </think> (name fragments, lower case).
PROMPT_OPENS_THINKING = ("deepseek-r1", "qwq", "-thinking")


@dataclass(frozen=True, slots=True)
class Provider:
    """One server's preset and wire rules; ``resolve_openai_config`` fills a config from it."""

    name: str
    base_url: str | None  # None: the caller must give one
    model: str | None  # None: the caller must give one
    api_key: str | None = None  # only for servers that ignore the key
    reasoning_echo: Echo = "never"
    never_echo_models: tuple[str, ...] = ()  # model-name prefixes under an older rule: never send it back
    ignored_params: frozenset[str] = frozenset()  # never sent (the server rejects or ignores them)
    thinking_switch: ThinkingSwitch | None = None
    thinking_needs_stream: bool = False  # thinking on only in streamed calls (DashScope)
    thinks_by_default: Callable[[str], bool] = lambda model: False  # "auto": does this model think?
    raw_thinking_models: tuple[str, ...] = PROMPT_OPENS_THINKING  # () where the server parses reasoning

    def starts_thinking(self, model: str) -> bool:
        """Whether this model's output may begin inside a ``<think>`` it never opened."""
        return any(fragment in model.lower() for fragment in self.raw_thinking_models)

    def echo_for(self, model: str) -> Echo:
        """The reasoning round-trip rule for ``model`` on this server."""
        if model.lower().startswith(self.never_echo_models):
            return "never"
        return self.reasoning_echo

    def thinking_fields(self, thinking: Thinking, stream: bool) -> dict[str, Any]:
        """The body fields that switch thinking as asked (none for ``auto`` unless the server
        would otherwise refuse the request, as DashScope does for a thinking model unstreamed)."""
        if self.thinking_switch is None:
            return {}
        if thinking == "auto":
            if self.thinking_needs_stream and not stream:
                return self.thinking_switch(False)
            return {}
        return self.thinking_switch(thinking == "on")

    def thinking_on(self, thinking: Thinking, model: str) -> bool:
        return thinking == "on" or (thinking == "auto" and self.thinks_by_default(model))


def _deepseek(on: bool) -> dict[str, Any]:
    return {"thinking": {"type": "enabled" if on else "disabled"}}


def _dashscope(on: bool) -> dict[str, Any]:
    return {"enable_thinking": on}


def _chat_template(on: bool) -> dict[str, Any]:
    # vLLM and llama.cpp pass these to the model's chat template (Qwen3, DeepSeek-R1 distills)
    return {"chat_template_kwargs": {"enable_thinking": on}}


def _ollama(on: bool) -> dict[str, Any]:
    # Ollama's /v1 maps reasoning_effort to its ``think`` switch; "none" turns thinking off
    return {"reasoning_effort": "medium" if on else "none"}


PROVIDERS: dict[str, Provider] = {
    "deepseek": Provider(
        "deepseek",
        "https://api.deepseek.com/v1",
        "deepseek-chat",
        reasoning_echo="tool_calls",
        never_echo_models=("deepseek-r1",),  # the older rule: reasoning_content in the input is a 400
        raw_thinking_models=(),
        thinking_switch=_deepseek,
        thinks_by_default=lambda model: "reasoner" in model.lower(),
    ),
    "qwen": Provider(
        "qwen",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "qwen-plus",
        thinking_switch=_dashscope,
        thinking_needs_stream=True,
        raw_thinking_models=(),
    ),
    "ollama": Provider(
        "ollama",
        "http://127.0.0.1:11434/v1",
        None,
        api_key="ollama",
        ignored_params=frozenset({"tool_choice", "parallel_tool_calls"}),
        thinking_switch=_ollama,
    ),
    "vllm": Provider("vllm", "http://127.0.0.1:8000/v1", None, api_key="no-key", thinking_switch=_chat_template),
    "llamacpp": Provider(
        "llamacpp", "http://127.0.0.1:8080/v1", "default", api_key="no-key", thinking_switch=_chat_template
    ),
    "openai": Provider("openai", "https://api.openai.com/v1", "gpt-4o-mini", raw_thinking_models=()),
}


# What a server says when its reasoning round-trip rule is not the one tether followed: DeepSeek
# thinking mode asks for the reasoning back (V3.2's words, then V4's); the older deepseek-r1 rule
# refuses it in the input. Behind a gateway (LiteLLM, one-api) these come whatever the provider name.
_ASKS_FOR_REASONING = re.compile(
    r"Missing `?reasoning_content`? field|reasoning_content`? in the thinking mode must be passed back", re.I
)
_REFUSES_REASONING = re.compile(
    r"remove the `?reasoning_content`? from your message|reasoning_content`? is an intermediate result", re.I
)


def echo_asked_for(refusal: str) -> Echo | None:
    """The round-trip rule a server's 400 asks for, when its words name one."""
    if _ASKS_FOR_REASONING.search(refusal):
        return "tool_calls"
    if _REFUSES_REASONING.search(refusal):
        return "never"
    return None


def provider_profile(name: str) -> Provider:
    """The profile of a known server, or the plain OpenAI-protocol one for any other label."""
    return PROVIDERS.get(name, Provider(name, None, None))


def outgoing_messages(messages: list[dict[str, Any]], echo: Echo, thinking_on: bool) -> list[dict[str, Any]]:
    """The transcript's messages as this server must get them: ``reasoning_content`` kept only
    where ``echo`` says (filled with "" on a tool-calling message when thinking is on and none
    was stored, which DeepSeek accepts), dropped everywhere else."""
    out: list[dict[str, Any]] = []
    for message in _one_system_message(messages):
        keep = echo == "tool_calls" and message.get("role") == "assistant" and bool(message.get("tool_calls"))
        if "reasoning_content" not in message and not (keep and thinking_on):
            out.append(message)
            continue
        trimmed = {k: v for k, v in message.items() if k != "reasoning_content"}
        if keep:
            trimmed["reasoning_content"] = message.get("reasoning_content") or ""
        out.append(trimmed)
    return out


def _one_system_message(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The leading system messages (the prompt, the rolling summary) as one: Qwen's and Llama's
    chat templates on vLLM and llama.cpp refuse a system message anywhere but first."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system":
        lead += 1
    if lead < 2 or not all(isinstance(m.get("content"), str) for m in messages[:lead]):
        return messages
    merged = "\n\n".join(m["content"] for m in messages[:lead])
    return [{"role": "system", "content": merged}, *messages[lead:]]
