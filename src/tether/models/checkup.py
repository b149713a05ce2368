"""``tether doctor``: probe an OpenAI-compatible endpoint for what tether needs from it.

Each check is one small request, timed, with the adapter tether itself uses (so the server's
profile shapes it as in a real turn): the endpoint answers, it serves the model (and says its
context length, where it does), a plain answer, a streamed one, one forced tool call, two
parallel calls, whether reasoning comes back, and the second round of a tool-calling exchange
with that reasoning sent back the way the server requires. A failed check carries one line of
advice. The endpoint is fit for tether when the checks marked ``needed`` pass.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tether.core.messages import ModelRequest, ToolCall
from tether.errors import ModelError
from tether.models.endpoint_errors import ModelEndpointError
from tether.models.openai_compat import OpenAICompatModel
from tether.models.openai_config import OpenAICompatConfig

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers and return their sum.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
SYSTEM = {"role": "system", "content": "You are being checked by tether doctor. Follow the instruction exactly."}
ASK_ADD = "Use the add tool to add 2 and 3."


@dataclass(slots=True)
class Check:
    name: str
    needed: bool  # the endpoint is unfit for tether when this fails
    result: str = "skipped"  # ok | failed | warn | none (not returned) | skipped
    detail: str = ""
    advice: str = ""
    latency_ms: float | None = None

    @property
    def blocks(self) -> bool:
        return self.needed and self.result == "failed"


@dataclass(slots=True)
class Report:
    target: str
    checks: list[Check] = field(default_factory=list)

    @property
    def fit(self) -> bool:
        return not any(c.blocks for c in self.checks)

    def table(self) -> str:
        rows = [("check", "result", "time", "detail")]
        for c in self.checks:
            took = f"{c.latency_ms:.0f} ms" if c.latency_ms is not None else ""
            rows.append((c.name, c.result, took, c.detail))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [f"tether doctor: {self.target}", ""]
        lines += ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
        advice = list(dict.fromkeys(c.advice for c in self.checks if c.advice))  # each line once
        if advice:
            lines += ["", "advice:"] + [f"- {a}" for a in advice]
        lines += ["", "fit for tether: " + ("yes" if self.fit else "no")]
        return "\n".join(line.rstrip() for line in lines)


async def run_checkup(config: OpenAICompatConfig, context_tokens: int | None = None) -> Report:
    """Every check in order; a check that needs an earlier one's result is skipped without it.
    ``context_tokens`` (TETHER_CONTEXT_TOKENS) is compared with the server's window when it says it."""
    whole = OpenAICompatModel(replace(config, stream=False))
    streamed = OpenAICompatModel(replace(config, stream=True))
    report = Report(f"{config.provider}:{config.model} at {config.display_url}")
    try:
        await _Checkup(config, whole, streamed, report, context_tokens).run()
    finally:
        await whole.aclose()
        await streamed.aclose()
    return report


class _Checkup:
    def __init__(
        self,
        config: OpenAICompatConfig,
        whole: OpenAICompatModel,
        streamed: OpenAICompatModel,
        report: Report,
        context_tokens: int | None,
    ) -> None:
        self.config, self.whole, self.streamed, self.report = config, whole, streamed, report
        self.context_tokens = context_tokens
        self.reasoning: list[str] = []
        self.call: ToolCall | None = None
        self.call_reasoning: str | None = None

    def _saw(self, reasoning: str | None) -> None:
        if reasoning:
            self.reasoning.append(reasoning)

    def check(self, name: str, needed: bool) -> Check:
        self.report.checks.append(Check(name, needed))
        return self.report.checks[-1]

    async def run(self) -> None:
        reachable = self.check("reachable", True)
        served = self.check("model served", True)
        window = self.check("context length", False)
        await self._models(reachable, served, window)
        if reachable.result == "failed":
            for name in ("plain answer", "streaming", "forced tool call", "parallel tool calls", "reasoning"):
                self.check(name, False)
            self.check("reasoning round trip", False)
            return
        await self._timed(self.check("plain answer", True), self._plain)
        await self._timed(self.check("streaming", self.config.stream), self._streaming)
        await self._timed(self.check("forced tool call", True), self._forced_call)
        await self._timed(self.check("parallel tool calls", False), self._parallel_calls)
        self._reasoning(self.check("reasoning", self.config.thinking == "on"))
        trip = self.check("reasoning round trip", True)
        if self.call is not None:
            await self._timed(trip, self._round_trip)
        else:
            trip.detail = "needs the forced tool call"

    async def _timed(self, check: Check, probe: Callable[[Check], Awaitable[None]]) -> None:
        started = time.perf_counter()
        try:
            await probe(check)
        except ModelError as exc:
            said = exc.message.split(" — ")[0].replace(f"model endpoint {self.config.display_url} ", "")
            check.result, check.detail = "failed", said[:160]
            check.advice = check.advice or _advice(exc.message)
        check.latency_ms = (time.perf_counter() - started) * 1000

    async def _models(self, reachable: Check, served: Check, window: Check) -> None:
        started = time.perf_counter()
        try:
            models = await self.whole.list_models()
        except ModelEndpointError as err:
            reachable.latency_ms = (time.perf_counter() - started) * 1000
            if err.status is None or err.status in (401, 403):
                reachable.result, reachable.detail = "failed", err.message[:160]
                reachable.advice = _reach_advice(self.config, err.status)
                return
            reachable.result, reachable.detail = "ok", f"no model list ({err.status})"
            served.detail = "the server lists no models; the plain answer shows whether it serves this one"
            return
        reachable.latency_ms = (time.perf_counter() - started) * 1000
        reachable.result, reachable.detail = "ok", f"{len(models)} model(s) listed"
        ids = [str(m.get("id")) for m in models]
        names = {self.config.model, f"{self.config.model}:latest"}  # Ollama's untagged name is :latest
        if names & set(ids) or self.config.provider == "llamacpp":  # llama.cpp serves one, any name
            served.result, served.detail = "ok", self.config.model
        else:
            served.result = "failed"
            served.detail = f"not among {', '.join(ids[:5]) or 'none'}"
            pull = f"run `ollama pull {self.config.model}`, or " if self.config.provider == "ollama" else ""
            served.advice = f"model {self.config.model} is not served here: {pull}set TETHER_MODEL_NAME to a served one"
        context = next((_context_length(m) for m in models if str(m.get("id")) == self.config.model), None)
        context = context or next((n for m in models if (n := _context_length(m))), None)
        if context:
            trained = "" if self.config.provider != "llamacpp" else " (trained; llama-server's -c may set less)"
            window.result, window.detail = "ok", f"{context} tokens{trained}"
            if self.context_tokens and self.context_tokens > context * 3 // 4:
                window.result = "warn"
                window.advice = (
                    f"TETHER_CONTEXT_TOKENS={self.context_tokens} leaves no room for the reply in a {context}-token "
                    f"window: set TETHER_CONTEXT_TOKENS={context * 3 // 4} or less"
                )
        else:
            window.result, window.detail = "none", "the server does not say"

    async def _plain(self, check: Check) -> None:
        reply = await self.whole.chat(
            ModelRequest([SYSTEM, {"role": "user", "content": "Answer with one word: ready"}], [])
        )
        self._saw(reply.reasoning)
        if reply.content and reply.content.strip():
            check.result, check.detail = "ok", _short(reply.content)
        else:
            check.result, check.detail = "failed", "an empty answer"
            check.advice = "the model gave no answer text: check that the model is a chat (instruct) model"

    async def _streaming(self, check: Check) -> None:
        deltas: list[str] = []

        async def on_token(delta: str) -> None:
            deltas.append(delta)

        request = ModelRequest([SYSTEM, {"role": "user", "content": "Count from 1 to 5."}], [], on_token=on_token)
        reply = await self.streamed.chat(request)
        self._saw(reply.reasoning)
        if deltas:
            check.result, check.detail = "ok", f"{len(deltas)} piece(s)"
        else:
            check.result, check.detail = "failed", "no streamed text"
            check.advice = "the server streams no content: set TETHER_MODEL_STREAM=false"

    async def _forced_call(self, check: Check) -> None:
        forced = {"type": "function", "function": {"name": "add"}}
        messages = [SYSTEM, {"role": "user", "content": ASK_ADD}]
        draft = await self.whole.complete(messages, [ADD], tool_choice=forced)
        self._saw(draft.reasoning)
        calls = [c for c in draft.tool_calls if c.name == "add"]
        if calls and _arguments(calls[0]) == {"a": 2, "b": 3}:
            self.call, self.call_reasoning = calls[0], draft.reasoning or None
            check.result, check.detail = "ok", f"add({calls[0].arguments})"
            return
        check.result = "failed"
        if draft.call_blocks:
            check.detail = "the call came back as <tool_call> text"
            check.advice = _parser_advice(self.config)
        elif calls:
            check.detail = f"wrong arguments {calls[0].arguments}"
            check.advice = "the model calls tools unreliably: use a larger model"
        else:
            check.detail = f"no tool call; answered {_short(draft.content or draft.held)!r}"
            check.advice = _no_call_advice(self.config)

    async def _parallel_calls(self, check: Check) -> None:
        ask = "Add 1 and 2, and also 3 and 4: make two add calls in this one reply."
        draft = await self.whole.complete([SYSTEM, {"role": "user", "content": ask}], [ADD], parallel_tool_calls=True)
        self._saw(draft.reasoning)
        n = len([c for c in draft.tool_calls if c.name == "add"])
        check.result = "ok" if n >= 2 else "none"
        check.detail = f"{n} call(s) in one reply" + ("" if n >= 2 else "; tether then calls one tool per round")

    def _reasoning(self, check: Check) -> None:
        if self.reasoning:
            check.result, check.detail = "ok", f"returned ({max(len(r) for r in self.reasoning)} characters)"
        else:
            check.result, check.detail = ("failed" if check.needed else "none"), "none returned"
            if check.needed:
                check.advice = "TETHER_MODEL_THINKING=on but no reasoning came back: check the model thinks"

    async def _round_trip(self, check: Check) -> None:
        assert self.call is not None
        assistant: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [self.call.to_message()]}
        if self.call_reasoning:
            assistant["reasoning_content"] = self.call_reasoning
        messages = [
            SYSTEM,
            {"role": "user", "content": ASK_ADD},
            assistant,
            {"role": "tool", "tool_call_id": self.call.id, "content": json.dumps({"sum": 5})},
        ]
        reply = await self.whole.chat(ModelRequest(messages, [ADD]))
        if reply.content or reply.tool_calls:
            learned = self.whole.learned_echo
            echo = learned or self.config.profile.echo_for(self.config.model)
            sent = "sent back" if self.call_reasoning and echo != "never" else "not needed"
            if learned:  # the server's 400 named its rule; the adapter follows it from now on
                asked = "asked for it" if learned == "tool_calls" else "refused it"
                sent = f"{'sent back' if learned == 'tool_calls' else 'stripped'}: the server {asked} with a 400; learned for this endpoint and model"
            check.result, check.detail = "ok", f"second round answered (reasoning {sent})"
        else:
            check.result, check.detail = "failed", "an empty second round"


def _context_length(model: dict[str, Any]) -> int | None:
    for key in ("max_model_len", "context_length", "context_window"):  # vLLM, LM Studio / others
        if isinstance(model.get(key), int):
            return int(model[key])
    meta = model.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("n_ctx_train"), int):  # llama.cpp
        return int(meta["n_ctx_train"])
    return None


def _arguments(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return None


def _short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= 60 else one[:57] + "..."


def _advice(message: str) -> str:
    _, _, advice = message.partition(" — ")
    return advice


def _reach_advice(config: OpenAICompatConfig, status: int | None) -> str:
    if status in (401, 403):
        return "the endpoint refused the key: set TETHER_MODEL_API_KEY"
    if config.provider == "ollama":
        return "start Ollama (`ollama serve`) or set TETHER_MODEL_BASE_URL to where it listens"
    return f"nothing answers at {config.display_url}: start the server or set TETHER_MODEL_BASE_URL"


def _parser_advice(config: OpenAICompatConfig) -> str:
    if config.provider == "vllm":
        return "vLLM did not parse the call: start it with --tool-call-parser hermes (Qwen) or your model's parser"
    return "the server left the call in the text (tether recovers sound ones): enable its tool-call parser"


def _no_call_advice(config: OpenAICompatConfig) -> str:
    if config.provider == "ollama":
        return (
            f"Ollama model {config.model} did not call the tool: use qwen2.5:14b, qwen3:14b or another model "
            "with the tools tag"
        )
    return f"model {config.model} did not call the tool: use a model trained for tool calls"
