"""The turn loop driving the OpenAI-compatible adapter against a local Chat Completions server:
streamed tool-call deltas become tool calls, content deltas become TOKEN events."""

from __future__ import annotations

import asyncio
import json

from tests.core.harness import ALICE, harness, tool_messages
from tests.models.chat_server import ChatServer, Reply, chunk, text_stream, tool_call_delta
from tether.core.session import Status
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
            async with harness(db_url, []) as h:
                h.deps.model = model
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
