"""AG-UI at ``POST /api/agui`` against a live server with the demo ERP: every streamed event is
validated with the ``ag-ui-protocol`` package's own models; a question interrupt is answered by a
resume, a form and then a write proposal are interrupts, and resuming the proposal confirms its op
(one bill), all on one tether session whose id is the thread id."""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, RunAgentInput
from pydantic import TypeAdapter

from tests.packs.erp.conftest import ErpServer, get_session, wait_status
from tests.packs.erp.test_erp_ops import erp_total, wait_op

pytestmark = pytest.mark.slow

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def run(
    c: httpx.Client, thread_id: str, text: str | None = None, resume: list[dict[str, Any]] | None = None
) -> list[Any]:
    body: dict[str, Any] = {
        "threadId": thread_id,
        "runId": f"run-{secrets.token_hex(4)}",
        "messages": [{"id": "m1", "role": "user", "content": text}] if text else [],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    if resume:
        body["resume"] = resume
    RunAgentInput.model_validate(body)  # what we send is a valid input
    events = []
    with c.stream("POST", "/api/agui", json=body, headers={"Accept": "text/event-stream"}, timeout=60) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_json(line[6:]))  # every event is a valid AG-UI event
    types = [e.type.value for e in events]
    assert types[0] == "RUN_STARTED" and types[-1] in ("RUN_FINISHED", "RUN_ERROR"), types
    assert types[-2] == "STATE_SNAPSHOT"
    assert events[0].thread_id == thread_id and events[0].run_id == body["runId"]
    return events


def interrupts(events: list[Any]) -> list[Any]:
    last = events[-1]
    assert last.type.value == "RUN_FINISHED" and last.outcome is not None and last.outcome.type == "interrupt"
    return list(last.outcome.interrupts)


def test_a_question_interrupt_and_its_resume(erp_server: ErpServer) -> None:
    thread = f"thread-{secrets.token_hex(6)}"
    with erp_server.login("sales01") as c:
        first = run(c, thread, "给恒达自动化报价：深沟球轴承 2个，单价18")
        types = [e.type.value for e in first]
        assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"} <= set(
            types
        )  # a call that asks has no result yet
        (question,) = interrupts(first)
        assert question.reason == "tether.question" and "深沟球轴承" in (question.message or "")
        snapshot = first[-2].snapshot
        assert snapshot["sessionId"] == thread and snapshot["status"] == "WAITING_USER_INPUT"
        assert get_session(c, thread)["pendingInteraction"]["interactionId"] == question.id  # the same session

        second = run(
            c, thread, resume=[{"interruptId": question.id, "status": "resolved", "payload": {"answer": "M0002"}}]
        )
        # the answer proposes again with the chosen material: the run ends on the proposal's interrupt
        assert second[-1].type.value == "RUN_FINISHED" and second[-1].outcome.type == "interrupt"
        (proposal,) = interrupts(second)
        assert proposal.reason == "tether.proposal" and proposal.id != question.id
        assert second[-2].snapshot["status"] == "WAITING_CONFIRMATION"
        op_id = get_session(c, thread)["pendingInteraction"]["payload"]["opId"]
        assert c.post(f"/api/ops/{op_id}/cancel").json()["state"] == "cancelled"
        assert wait_status(c, thread, "SUCCEEDED")["sessionId"] == thread

        # an answered interrupt cannot be answered again; another user's thread does not exist for them
        again = c.post(
            "/api/agui",
            json={
                "threadId": thread,
                "runId": "r",
                "messages": [],
                "resume": [{"interruptId": question.id, "status": "resolved"}],
            },
        )
        events = [EVENTS.validate_json(line[6:]) for line in again.text.splitlines() if line.startswith("data: ")]
        assert events[-1].type.value == "RUN_ERROR"
        # a read: its tool call and result, the answer as text, the session SUCCEEDED
        read = run(c, f"thread-{secrets.token_hex(6)}", "恒达自动化最近的销售订单")
        results = [e for e in read if e.type.value == "TOOL_CALL_RESULT"]
        started = {e.tool_call_id for e in read if e.type.value == "TOOL_CALL_START"}
        assert results and {r.tool_call_id for r in results} <= started
        assert read[-1].type.value == "RUN_FINISHED" and read[-2].snapshot["status"] == "SUCCEEDED"
    with erp_server.login("sales02") as other:
        r = other.post(
            "/api/agui",
            json={
                "threadId": thread,
                "runId": "r",
                "messages": [],
                "resume": [{"interruptId": "x", "status": "resolved"}],
            },
        )
        assert r.status_code == 404


def test_a_form_then_a_proposal_then_its_confirm_through_resume(erp_server: ErpServer) -> None:
    admin = erp_server.token("admin")
    before = erp_total(erp_server, admin, "2001")
    thread = f"thread-{secrets.token_hex(6)}"
    with erp_server.login("sales01") as c:
        (form,) = interrupts(run(c, thread, "新建一张报价单给恒达自动化"))
        assert (
            form.reason == "tether.form" and "customer_id" in form.response_schema["properties"]["values"]["properties"]
        )
        values = {"交期(天)": 10, "details": [{"物料": "M0003", "数量": 4, "单价": 45}]}
        proposed = run(
            c, thread, resume=[{"interruptId": form.id, "status": "resolved", "payload": {"values": values}}]
        )
        (proposal,) = interrupts(proposed)
        assert proposal.reason == "tether.proposal"
        op_id = proposal.metadata["tether"]["payload"]["opId"]
        assert c.get(f"/api/ops/{op_id}").json()["state"] == "draft"
        assert erp_total(erp_server, admin, "2001") == before  # the proposal executed nothing

        confirmed = run(c, thread, resume=[{"interruptId": proposal.id, "status": "resolved"}])
        assert confirmed[-1].type.value == "RUN_FINISHED" and confirmed[-1].outcome.type == "success", confirmed[-1]
        custom = {e.name: e.value for e in confirmed if e.type.value == "CUSTOM"}
        assert custom["tether.OP_RESULT"]["opId"] == op_id
        done = wait_op(c, op_id, {"done", "failed"})
        assert done["state"] == "done", done
        text = "".join(e.delta for e in confirmed if e.type.value == "TEXT_MESSAGE_CONTENT")
        assert done["billNo"] in text
    assert erp_total(erp_server, admin, "2001") == before + 1
    assert not any(t in json.dumps(erp_server.log_text()) for t in erp_server.tokens)
    erp_server.assert_no_server_errors()
