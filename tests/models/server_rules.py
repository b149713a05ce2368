"""Each real server's request-side rules, played by the fake ``ChatServer``: given a request
body, the error that server answers (status and body as it sends them), or None when it accepts.

Taken from the servers' docs and source: DeepSeek's thinking mode (tool-calling assistant messages
must carry ``reasoning_content``) and its older deepseek-r1 rule (none may), DashScope's "thinking
only when streamed", vLLM without ``--enable-auto-tool-choice``, llama.cpp without ``--jinja`` and
its context-size refusal, an Ollama model without tool support, and Ollama's unsupported fields.
"""

from __future__ import annotations

import json
from typing import Any

from .chat_server import Reply

DEEPSEEK_DOCS = "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"


def _openai_error(status: int, message: str, type_: str, code: Any = None, **extra: Any) -> Reply:
    return Reply(
        status=status, body={"error": {"message": message, "type": type_, "param": None, "code": code, **extra}}
    )


def deepseek_thinking(body: dict[str, Any]) -> Reply | None:
    """DeepSeek thinking mode (deepseek-reasoner, V3.2+): an assistant message that made tool calls
    must be sent back with its ``reasoning_content``."""
    for index, message in enumerate(body.get("messages", [])):
        if message.get("role") == "assistant" and message.get("tool_calls") and "reasoning_content" not in message:
            return _openai_error(
                400,
                f"Missing `reasoning_content` field in the assistant message at message index {index}. "
                f"For more information, please refer to {DEEPSEEK_DOCS}",
                "invalid_request_error",
                "invalid_request_error",
            )
    return None


def deepseek_r1(body: dict[str, Any]) -> Reply | None:
    """The older deepseek-reasoner (R1) rule: ``reasoning_content`` in the input is refused."""
    if any("reasoning_content" in m for m in body.get("messages", [])):
        return _openai_error(
            400,
            "The `reasoning_content` is an intermediate result for display purposes only and will not be "
            "included in the context for inference. Please remove the `reasoning_content` from your message "
            "to reduce network traffic.",
            "invalid_request_error",
            "invalid_request_error",
        )
    return None


def dashscope(thinks_by_default: bool) -> Any:
    """DashScope: a model that thinks answers only streamed calls; ``enable_thinking`` switches it."""

    def rule(body: dict[str, Any]) -> Reply | None:
        thinking = body.get("enable_thinking", thinks_by_default)
        if thinking and not body.get("stream"):
            return _openai_error(
                400,
                "parameter.enable_thinking must be set to false for non-streaming calls",
                "invalid_request_error",
                "invalid_parameter_error",
            )
        return None

    return rule


def vllm(auto_tool_choice: bool) -> Any:
    """vLLM: tools with ``tool_choice`` auto (the default) need the server flags."""

    def rule(body: dict[str, Any]) -> Reply | None:
        if strict_template(body):
            return strict_template(body)
        if body.get("tools") and body.get("tool_choice", "auto") == "auto" and not auto_tool_choice:
            return Reply(
                status=400,
                body={
                    "object": "error",
                    "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                },
            )
        return None

    return rule


def strict_template(body: dict[str, Any]) -> Reply | None:
    """Qwen's and Llama's chat templates (vLLM, llama.cpp with --jinja): one system message, first."""
    if any(m.get("role") == "system" for m in body.get("messages", [])[1:]):
        return _openai_error(500, "Jinja Exception: System message must be at the beginning.", "server_error", 500)
    return None


def llamacpp(jinja: bool, n_ctx: int | None = None) -> Any:
    """llama.cpp's llama-server: tools need ``--jinja`` (a 500, as it answers); a prompt over
    ``n_ctx`` tokens is refused (tokens counted here as characters / 4, as good as the fake needs)."""

    def rule(body: dict[str, Any]) -> Reply | None:
        if strict_template(body):
            return strict_template(body)
        if body.get("tools") and not jinja:
            return _openai_error(500, "tools param requires --jinja flag", "server_error", 500)
        prompt = len(json.dumps(body.get("messages", []), ensure_ascii=False)) // 4
        if n_ctx is not None and prompt > n_ctx:
            return Reply(
                status=400,
                body={
                    "error": {
                        "code": 400,
                        "message": f"request ({prompt} tokens) exceeds the available context size ({n_ctx} tokens), "
                        "try increasing it",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": prompt,
                        "n_ctx": n_ctx,
                    }
                },
            )
        return None

    return rule


def ollama(model: str, tools: bool) -> Any:
    """Ollama: a model without the tools capability refuses tools. Ollama ignores ``tool_choice``
    and ``parallel_tool_calls``; the fake refuses them so a test sees tether never relies on them."""

    def rule(body: dict[str, Any]) -> Reply | None:
        if body.get("tools") and not tools:
            return _openai_error(400, f"registry.ollama.ai/library/{model} does not support tools", "api_error")
        for name in ("tool_choice", "parallel_tool_calls"):
            if name in body:
                return _openai_error(
                    400, f"fake Ollama: {name} is ignored by Ollama; tether must not rely on it", "api_error"
                )
        return None

    return rule
