"""OpenTelemetry traces exported over OTLP/HTTP to a local receiver that decodes the protobuf
(tests/otlp_receiver.py): a span per turn, model call and tool call, GenAI attributes, session and
user ids, the parent-child shape, content only when opted in, credentials never."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.app.conftest import TetherServer, make_server, post_callback, wait_status
from tests.core.harness import ALICE, harness
from tests.models.chat_server import ChatServer, completion
from tests.otlp_receiver import OtlpReceiver
from tether.core.session import Status
from tether.models.openai_compat import build_openai_model
from tether.telemetry.tracing import Tracing, parse_headers, traces_url

ORDER_QUESTION = "What is order A-1001 in EUR, and can I get a shipping quote?"
BASIC = "Basic dGVzdC1way10ZXN0LXNr"  # what a Langfuse set-up sends (base64 of pk:sk)


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


def test_settings_helpers() -> None:
    assert traces_url("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_url("https://lf.example/api/public/otel/") == "https://lf.example/api/public/otel/v1/traces"
    assert traces_url("http://h:4318/v1/traces") == "http://h:4318/v1/traces"
    assert parse_headers("Authorization=Basic YQ==, x-a=b") == {"Authorization": "Basic YQ==", "x-a": "b"}


@pytest.mark.slow
def test_a_live_server_exports_turn_model_and_tool_spans(tmp_path: Path, receiver: OtlpReceiver) -> None:
    server: TetherServer = make_server(
        tmp_path, TETHER_OTEL_ENDPOINT=receiver.url, TETHER_OTEL_HEADERS=f"Authorization={BASIC}"
    ).start()
    try:
        with server.client("dev-alice") as alice:
            s = alice.post("/api/agent/sessions", json={"message": ORDER_QUESTION}).json()
            assert s["status"] == "WAITING_ASYNC_CALLBACK"
            job_id = s["waitingExternalJobId"]
            token = server.ticket(job_id)["callbackToken"]
            assert post_callback(alice, job_id, token, payload={"carrier": "SF", "price": 36}).status_code == 200
            wait_status(alice, s["sessionId"], "SUCCEEDED")
        turns = receiver.wait_for("tether.turn", 2)
    finally:
        server.stop()
    sid = s["sessionId"]
    assert {t.attributes["tether.turn.outcome"] for t in turns} == {"WAITING_ASYNC_CALLBACK", "SUCCEEDED"}
    for t in turns:
        assert t.attributes["tether.session.id"] == sid and t.attributes["enduser.id"] == "alice"
        assert t.resource["service.name"] == "tether"
        assert t.attributes["gen_ai.operation.name"] == "invoke_agent"
    models = receiver.named("chat")
    assert len(models) >= 2
    for m in models:
        assert m.attributes["gen_ai.operation.name"] == "chat"
        assert m.attributes["gen_ai.provider.name"] == "planner"
        assert m.attributes["gen_ai.request.model"] == "planner"
        assert m.attributes["tether.session.id"] == sid
        assert m.kind == 3  # SPAN_KIND_CLIENT
    tools = {t.attributes["gen_ai.tool.name"]: t for t in receiver.named("execute_tool")}
    assert {"lookup_order", "start_shipping_quote"} <= set(tools)
    by_id = {t.span_id: t for t in turns}
    for span in [*models, *tools.values()]:  # each a child of its turn's span, in the same trace
        parent = by_id[span.parent_span_id]
        assert parent.trace_id == span.trace_id
        assert span.attributes["gen_ai.operation.name"] in ("chat", "execute_tool")
        assert span.attributes["enduser.id"] == "alice"
    assert tools["start_shipping_quote"].attributes["tether.tool.outcome"] == "async_job"
    # content is off by default: no prompt, no completion, no tool data — and never a credential
    everything = b"".join(receiver.raw)
    assert b"A-1001" not in everything and b"gen_ai.input.messages" not in everything
    assert b"dev-alice" not in everything
    assert {k.lower(): v for k, v in receiver.headers[0].items()}.get(
        "authorization"
    ) == BASIC  # the exporter's headers reach the collector
    assert "dGVzdC1way10ZXN0LXNr" not in server.log_text()
    server.assert_no_server_errors()


def test_model_spans_carry_usage_and_content_only_when_captured(tmp_path: Path, receiver: OtlpReceiver) -> None:
    replies = [
        completion(tool_calls=[("call_1", "add", '{"a": 2, "b": 3}')], usage=(11, 7)),
        completion("The sum is 5.", usage=(23, 4)),
    ]
    with ChatServer(replies) as chat:

        async def main() -> None:
            model = build_openai_model(
                provider="custom", base_url=chat.base_url, model="m", api_key="sk-test-secret", stream=False
            )
            tracing = Tracing(OTLPSpanExporter(endpoint=traces_url(receiver.url)), capture_content=True)
            async with harness(f"sqlite:///{tmp_path / 't.db'}", [], model=model, telemetry=tracing) as h:
                h.deps.pipeline.telemetry = tracing
                s = await h.runtime.start_session(ALICE, "run the test: add 2 and 3", {})
                assert s.status is Status.SUCCEEDED
            await model.aclose()
            assert tracing.flush()
            tracing.shutdown()

        asyncio.run(main())
    models = sorted(receiver.wait_for("chat m", 2), key=lambda m: m.attributes["gen_ai.usage.input_tokens"])
    assert [
        (m.attributes["gen_ai.usage.input_tokens"], m.attributes["gen_ai.usage.output_tokens"]) for m in models
    ] == [
        (11, 7),
        (23, 4),
    ]
    first = models[0].attributes
    assert first["gen_ai.provider.name"] == "custom" and first["gen_ai.request.model"] == "m"
    assert first["gen_ai.response.model"] == "test-model"
    assert first["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert "add 2 and 3" in first["gen_ai.input.messages"]
    assert json.loads(models[1].attributes["gen_ai.output.messages"])[0]["content"] == "The sum is 5."
    (add,) = receiver.named("execute_tool add")
    assert json.loads(add.attributes["gen_ai.tool.call.arguments"]) == {"a": 2, "b": 3}
    assert '"sum": 5' in add.attributes["gen_ai.tool.call.result"]
    assert b"sk-test-secret" not in b"".join(receiver.raw)
