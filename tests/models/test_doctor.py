"""``tether doctor`` as a user runs it, against fake servers that answer as the real ones do: the
table, one line of advice per failure, and the exit code (0 only when the endpoint is fit)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any

from .chat_server import ChatServer, Reply, chunk, completion, text_stream, unused_port
from .server_rules import deepseek_thinking, ollama, vllm


def doctor(**env: str) -> subprocess.CompletedProcess[str]:
    """``tether doctor`` with no pack in an empty folder: its lines are the database's (not created
    yet), the approval policy's (none) and the model's, then the model's checkup table."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    with tempfile.TemporaryDirectory() as empty:
        return subprocess.run(
            [sys.executable, "-m", "tether.cli", "doctor", "--timeout", "10"],
            env={**clean, "TETHER_MODEL": "openai", "TETHER_PACKS": "", **env},
            cwd=empty,
            capture_output=True,
            text=True,
            timeout=120,
        )


def row(out: str, name: str) -> str:
    """The table row of check ``name`` (its result and detail), or fail."""
    for line in out.splitlines():
        if line.startswith(name + "  "):
            return " ".join(line[len(name) :].split())
    raise AssertionError(f"no row {name!r} in:\n{out}")


def thinking(content: str | None = None, calls: list[tuple[str, str, str]] | None = None) -> Reply:
    reply = completion(content, tool_calls=calls)
    assert reply.body is not None
    reply.body["choices"][0]["message"]["reasoning_content"] = "Thinking about " + (content or "a call")
    return reply


def stream_with_reasoning(text: str) -> Reply:
    return Reply(events=[chunk({"reasoning_content": "counting"}), *[chunk({"content": c}) for c in text]])


ADD_2_3 = ("call_00_a", "add", '{"a": 2, "b": 3}')
DEEPSEEK_SCRIPT = [
    thinking("ready"),  # plain answer
    stream_with_reasoning("12345"),  # streaming
    thinking(None, [ADD_2_3]),  # forced tool call
    thinking(None, [ADD_2_3, ("call_00_b", "add", '{"a": 3, "b": 4}')]),  # parallel calls
    thinking("2 + 3 = 5"),  # the second round, with the reasoning sent back
]
DEEPSEEK_MODELS = [{"id": "deepseek-reasoner", "object": "model", "owned_by": "deepseek"}]


def deepseek_env(server: ChatServer, provider: str) -> dict[str, str]:
    return {
        "TETHER_MODEL_PROVIDER": provider,
        "TETHER_MODEL_BASE_URL": server.base_url,
        "TETHER_MODEL_NAME": "deepseek-reasoner",
        "TETHER_MODEL_API_KEY": "sk-doctor-test-0123456789",
    }


def test_a_deepseek_thinking_endpoint_is_fit() -> None:
    with ChatServer(DEEPSEEK_SCRIPT, rules=deepseek_thinking, models=DEEPSEEK_MODELS) as server:
        result = doctor(**deepseek_env(server, "deepseek"))
        server.assert_consumed()
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert out.startswith("tether doctor\nok   database ") and "every check ok" in out
    assert f"ok   model            deepseek:deepseek-reasoner at {server.base_url}: fit for tether" in out
    assert f"\ntether doctor: deepseek:deepseek-reasoner at {server.base_url}\n" in out  # then the table
    assert row(out, "reachable").startswith("ok") and "1 model(s) listed" in row(out, "reachable")
    assert row(out, "model served").startswith("ok")
    assert row(out, "context length") == "none the server does not say"
    assert row(out, "plain answer").startswith("ok") and row(out, "plain answer").endswith("ready")
    assert row(out, "streaming").endswith("5 piece(s)")
    assert 'add({"a": 2, "b": 3})' in row(out, "forced tool call")
    assert "2 call(s) in one reply" in row(out, "parallel tool calls")
    assert row(out, "reasoning").startswith("ok") and "returned" in row(out, "reasoning")
    assert row(out, "reasoning round trip").endswith("second round answered (reasoning sent back)")
    assert "advice:" not in out and out.rstrip().endswith("fit for tether: yes")
    assert "sk-doctor-test" not in out + result.stderr
    assert server.bodies[2]["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert server.bodies[4]["messages"][2]["reasoning_content"] == "Thinking about a call"


def test_behind_a_gateway_doctor_says_the_rule_it_learned_from_the_server() -> None:
    with ChatServer(DEEPSEEK_SCRIPT, rules=deepseek_thinking, models=DEEPSEEK_MODELS) as server:
        result = doctor(**deepseek_env(server, "custom"))
        server.assert_consumed()
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert row(out, "reasoning round trip").endswith(
        "second round answered (reasoning sent back: the server asked for it with a 400; learned for this endpoint and model)"
    )
    assert len(server.refused) == 1 and out.rstrip().endswith("fit for tether: yes")
    assert server.bodies[-1]["messages"][2]["reasoning_content"] == "Thinking about a call"


def test_an_ollama_model_without_tools_is_unfit_and_says_which_to_use() -> None:
    script = [completion("ready"), text_stream(["re", "ady"])]
    with ChatServer(script, rules=ollama("qwen2.5:7b", tools=False), models=[{"id": "qwen2.5:7b"}]) as server:
        result = doctor(
            TETHER_MODEL_PROVIDER="ollama", TETHER_MODEL_BASE_URL=server.base_url, TETHER_MODEL_NAME="qwen2.5:7b"
        )
        server.assert_consumed()
    out = result.stdout
    assert result.returncode == 1 and "FAIL model" in out and "not fit for tether" in out
    assert row(out, "plain answer").startswith("ok") and row(out, "forced tool call").startswith("failed")
    assert "- Ollama model qwen2.5:7b does not support tools: use qwen2.5:14b, qwen3:14b" in out
    assert row(out, "reasoning round trip") == "skipped needs the forced tool call"
    assert not any("tool_choice" in body or "parallel_tool_calls" in body for body in server.bodies)


def test_vllm_without_auto_tool_choice_names_the_flags_and_its_context_length() -> None:
    script: list[Any] = [completion("ready"), text_stream(["ok"]), completion(None, tool_calls=[ADD_2_3])]
    models = [{"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 32768}]
    with ChatServer(script, rules=vllm(auto_tool_choice=False), models=models) as server:
        result = doctor(
            TETHER_MODEL_PROVIDER="vllm", TETHER_MODEL_BASE_URL=server.base_url, TETHER_MODEL_NAME="Qwen/Qwen3-8B"
        )
    out = result.stdout
    assert result.returncode == 1
    assert row(out, "context length") == "ok 32768 tokens"  # TETHER_CONTEXT_TOKENS 24000 fits
    assert row(out, "forced tool call").startswith("ok")  # a named tool_choice needs no flag
    assert row(out, "reasoning round trip").startswith("failed")
    assert "- vLLM serves tools only when started with --enable-auto-tool-choice and --tool-call-parser" in out


def test_a_model_the_server_does_not_list_and_a_server_that_is_not_there() -> None:
    with ChatServer([], models=[{"id": "qwen3:14b"}], rules=lambda body: completion("x")) as server:
        result = doctor(
            TETHER_MODEL_PROVIDER="ollama", TETHER_MODEL_BASE_URL=server.base_url, TETHER_MODEL_NAME="qwen3:32b"
        )
    assert result.returncode == 1
    assert "- model qwen3:32b is not served here: run `ollama pull qwen3:32b`" in result.stdout
    gone = f"http://127.0.0.1:{unused_port()}/v1"
    result = doctor(TETHER_MODEL_PROVIDER="vllm", TETHER_MODEL_BASE_URL=gone, TETHER_MODEL_NAME="m")
    assert result.returncode == 1 and row(result.stdout, "reachable").startswith("failed")
    assert f"- nothing answers at {gone}: start the server or set TETHER_MODEL_BASE_URL" in result.stdout
    assert row(result.stdout, "plain answer") == "skipped"


def test_a_window_smaller_than_tether_asks_for_says_what_to_set() -> None:
    script = [completion("ready"), text_stream(["ok"]), completion(None, tool_calls=[ADD_2_3]), completion("5")]
    script.insert(3, completion(None, tool_calls=[ADD_2_3]))
    models = [{"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 8192}]
    with ChatServer(script, rules=vllm(auto_tool_choice=True), models=models) as server:
        result = doctor(
            TETHER_MODEL_PROVIDER="vllm", TETHER_MODEL_BASE_URL=server.base_url, TETHER_MODEL_NAME="Qwen/Qwen3-8B"
        )
    assert row(result.stdout, "context length") == "warn 8192 tokens"
    assert (
        "- TETHER_CONTEXT_TOKENS=24000 leaves no room for the reply in a 8192-token window: set TETHER_CONTEXT_TOKENS=6144"
        in result.stdout
    )
    assert result.returncode == 0  # advice, not unfit: tether folds and retries smaller windows itself
