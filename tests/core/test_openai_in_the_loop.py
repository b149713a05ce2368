"""The turn loop driving the OpenAI-compatible adapter against a local Chat Completions server:
streamed tool-call deltas become tool calls, content deltas become TOKEN events."""

from __future__ import annotations

import asyncio
import json
import time

from tests.core.harness import ALICE, harness, tool_messages
from tests.models.chat_server import ChatServer, Reply, chunk, error, text_stream, tool_call_delta
from tether.core.session import AgentSession, Status
from tether.core.turn import Limits
from tether.models.openai_compat import build_openai_model


def test_streamed_tool_calls_and_tokens_through_a_real_http_endpoint(db_url: str) -> None:
    streamed_call = Reply(
        events=[
            chunk({"role": "assistant", "content": None}),
            chunk(tool_call_delta(0, id="call_1", name="add", arguments='{"a": ')),
            chunk(tool_call_delta(0, arguments="2, ")),
            chunk(tool_call_delta(0, arguments='"b": 3}')),
            chunk({}, finish_reason="tool_calls"),
        ]
    )
    with ChatServer([streamed_call, text_stream(["The ", "sum ", "is ", "5."])]) as server:

        async def main() -> None:
            model = build_openai_model(provider="custom", base_url=server.base_url, model="m", api_key="sk-test-key")
            async with harness(db_url, [], model=model) as h:
                s = await h.runtime.start_session(ALICE, "run the test: add 2 and 3", {})
                assert s.status is Status.SUCCEEDED
                assert json.loads(tool_messages(s)[0]["content"])["data"] == {"sum": 5}
                assert s.transcript[-1] == {"role": "assistant", "content": "The sum is 5."}
                events = await h.events(s.session_id)
                tokens = [e.data["delta"] for e in events if e.type == "TOKEN"]
                assert "".join(tokens) == "The sum is 5."
                assert "sk-test-key" not in json.dumps([e.to_json() for e in events])
            await model.aclose()

        asyncio.run(main())
        second = server.bodies[1]
        assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["tool_call_id"] == "call_1"
        assert [t["function"]["name"] for t in server.bodies[0]["tools"]].count("add") == 1


def test_one_retry_policy_the_turns_honouring_retry_after(db_url: str) -> None:
    """The adapter tries once and the turn retries (TETHER_MODEL_RETRIES): a 429 with Retry-After 0
    and a busy 503 are retried at once although the turn's own back-off is 30 s; four 500s fail
    after exactly three requests (not the nine of two nested policies)."""
    busy = [error(429, "slow down", headers={"retry-after": "0"}), error(503, "busy", headers={"retry-after": "0"})]
    with ChatServer([*busy, text_stream(["fine"])]) as server:

        async def main() -> Status:
            model = build_openai_model(provider="custom", base_url=server.base_url, model="m")
            async with harness(db_url, [], limits=Limits(model_retries=2, model_backoff_s=30), model=model) as h:
                started = time.monotonic()
                s = await h.runtime.start_session(ALICE, "run the test", {})
                assert time.monotonic() - started < 10
                retries = [e.data["message"] for e in await h.events(s.session_id) if e.type == "ERROR"]
                assert [m.split(":")[0] for m in retries] == [
                    "model call failed, retrying (1)",
                    "model call failed, retrying (2)",
                ]
            await model.aclose()
            return s.status

        assert asyncio.run(main()) is Status.SUCCEEDED
        assert len(server.requests) == 3
    with ChatServer([error(500, "down", headers={"retry-after": "0"}) for _ in range(4)]) as server:

        async def failing() -> AgentSession:
            model = build_openai_model(provider="custom", base_url=server.base_url, model="m")
            async with harness(db_url, [], limits=Limits(model_retries=2, model_backoff_s=0.01), model=model) as h:
                s = await h.runtime.start_session(ALICE, "run the test", {})
            await model.aclose()
            return s

        s = asyncio.run(failing())
        assert s.status is Status.FAILED and "(500): down" in (s.last_error or "")
        assert len(server.requests) == 3
