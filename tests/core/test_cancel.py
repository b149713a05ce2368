"""Stopping a turn: ``Runtime.cancel`` cancels the task that drives it — the model call or the
tool in flight really stops — and the session ends CANCELLED with a TURN_FINISHED event; a
waiting session is cancelled too; a finished one is refused; the conversation goes on after."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.core.harness import ALICE, BOB, TEST_SKILL, Counters, Harness, assert_valid_transcript, harness, make_tools
from tether.core.session import Status
from tether.core.skills import Skill
from tether.core.tools import Tool, ToolContext, tool
from tether.errors import Conflict, NotFound
from tether.models.scripted import calls, text


class Gate:
    """What the long tool and the long model call saw: started, and cut off by a cancel."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = 0
        self.finished = 0


def long_tool(gate: Gate) -> Tool:
    @tool(timeout_s=60)
    async def crunch(ctx: ToolContext, seconds: float) -> Any:
        """Works for a long time."""
        gate.started.set()
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            gate.cancelled += 1
            raise
        gate.finished += 1
        return {"done": True}

    return crunch


def slow_model_of(gate: Gate) -> Any:
    """A model reply that takes 30 s unless cut off (counted in ``gate.cancelled``)."""

    async def slow_model(_request: Any) -> Any:
        gate.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            gate.cancelled += 1
            raise
        return text("too late")

    return slow_model


def tools_with(gate: Gate) -> tuple[list[Tool], list[Skill]]:
    skill = Skill(
        name=TEST_SKILL.name,
        description=TEST_SKILL.description,
        allowed_tools=(*TEST_SKILL.allowed_tools, "crunch"),
        body=TEST_SKILL.body,
        keywords=TEST_SKILL.keywords,
    )
    return [*make_tools(Counters()), long_tool(gate)], [skill]


def test_cancel_stops_the_tool_in_flight_and_the_session_goes_on_after(db_url: str) -> None:
    async def main() -> None:
        gate = Gate()
        tools, skills = tools_with(gate)
        replies = [calls(("crunch", {"seconds": 30}, "c1")), text("after the stop")]
        async with harness(db_url, replies, tools=tools, skills=skills) as h:
            s = await h.runtime.start_session(ALICE, "run the test", {}, wait=False)
            await asyncio.wait_for(gate.started.wait(), 5)
            started = asyncio.get_running_loop().time()
            stopped = await h.runtime.cancel(s.session_id, ALICE)
            assert asyncio.get_running_loop().time() - started < 5
            assert stopped.status is Status.CANCELLED
            assert gate.cancelled == 1 and gate.finished == 0  # the tool itself was cancelled

            stored = await h.load(s.session_id)
            assert stored.status is Status.CANCELLED and stored.pending_interaction is None
            assert_valid_transcript(stored)
            [step] = stored.executed_steps
            assert step.status == "FAILED" and "cancelled by the user" in step.result["error"]
            events = await h.events(s.session_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            assert events[-1].type == "TURN_FINISHED" and events[-1].data["status"] == "CANCELLED"
            failed = [e for e in events if e.type == "TOOL_EXECUTION_FAILED"]
            assert [e.data["toolCallId"] for e in failed] == ["c1"] and failed[0].data["cancelled"] is True

            # the conversation goes on with the next message
            after = await h.runtime.post_message(s.session_id, ALICE, "go on")
            assert after.status is Status.SUCCEEDED
            assert after.transcript[-1]["content"] == "after the stop"
            types = await h.types(s.session_id)
            assert types.count("USER_MESSAGE") == 1 and types[-1] == "TURN_FINISHED"

    asyncio.run(main())


async def _running_session(h: Harness) -> str:
    while True:
        listed = await h.store.list_sessions(ALICE, 1, 0)
        if listed and listed[0].status is Status.RUNNING:
            return str(listed[0].session_id)
        await asyncio.sleep(0.01)


def test_cancel_stops_the_model_call_and_a_waiting_caller_gets_the_cancelled_session(db_url: str) -> None:
    async def main() -> None:
        gate = Gate()
        slow_model = slow_model_of(gate)

        async with harness(db_url, [slow_model]) as h:
            waiting = asyncio.create_task(h.runtime.start_session(ALICE, "run the test", {}))
            await asyncio.wait_for(gate.started.wait(), 5)
            sid = await asyncio.wait_for(_running_session(h), 5)  # stored while the model answers (loop.py)
            await h.runtime.cancel(sid, ALICE)
            result = await asyncio.wait_for(waiting, 5)  # the caller that waited for the turn
            assert result.status is Status.CANCELLED and gate.cancelled == 1
            assert (await h.load(sid)).status is Status.CANCELLED

    asyncio.run(main())


def test_a_session_waiting_for_a_callback_is_cancelled_and_the_late_callback_ignored(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [calls(("slow_job", {"label": "x"}, "j1"))]) as h:
            s = await h.start()
            assert s.status is Status.WAITING_ASYNC_CALLBACK
            stopped = await h.runtime.cancel(s.session_id, ALICE)
            assert stopped.status is Status.CANCELLED and stopped.waiting_job_ids == []
            late = await h.callback(0, payload={"v": 1})
            assert late == {"ok": True, "duplicate": True}
            stored = await h.load(s.session_id)
            assert stored.status is Status.CANCELLED
            assert_valid_transcript(stored)
            assert await h.store.sessions_with_unapplied_jobs() == []

    asyncio.run(main())


def test_cancel_stops_the_round_a_callback_started(db_url: str) -> None:
    """The turn a callback resumes runs as a background driver; stopping it answers the
    cancelled session (it once answered 500: that driver's task returned nothing)."""

    async def main() -> None:
        gate = Gate()
        slow_model = slow_model_of(gate)

        async with harness(db_url, [calls(("slow_job", {"label": "x"}, "j1")), slow_model]) as h:
            s = await h.start()
            assert s.status is Status.WAITING_ASYNC_CALLBACK
            ticket = h.counters.tickets[0]
            assert await h.runtime.callback(ticket.job_id, ticket.token, "SUCCEEDED", {"v": 1}, None) == {"ok": True}
            await asyncio.wait_for(gate.started.wait(), 5)  # the round after the callback is running
            stopped = await h.runtime.cancel(s.session_id, ALICE)
            assert stopped.status is Status.CANCELLED and gate.cancelled == 1
            stored = await h.load(s.session_id)
            assert stored.status is Status.CANCELLED
            assert_valid_transcript(stored)
            with pytest.raises(Conflict):
                await h.runtime.cancel(s.session_id, ALICE)  # and once only

    asyncio.run(main())


def test_a_session_waiting_for_an_answer_is_cancelled_and_the_answer_refused(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [calls(("ask", {"question": "which month?"}, "q1"))]) as h:
            s = await h.start()
            assert s.status is Status.WAITING_USER_INPUT
            iid = s.pending_interaction["interactionId"]  # type: ignore[index]
            await h.runtime.cancel(s.session_id, ALICE)
            with pytest.raises(Conflict):
                await h.runtime.complete_interaction(s.session_id, ALICE, iid, {"answer": "March"})
            stored = await h.load(s.session_id)
            assert stored.status is Status.CANCELLED and stored.pending_interaction is None

    asyncio.run(main())


def test_cancel_is_refused_for_a_finished_session_and_hidden_from_others(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [text("done"), calls(("ask", {"question": "?"}, "q1"))]) as h:
            done = await h.start()
            with pytest.raises(Conflict):
                await h.runtime.cancel(done.session_id, ALICE)
            waiting = await h.start()
            with pytest.raises(NotFound):
                await h.runtime.cancel(waiting.session_id, BOB)
            assert (await h.load(waiting.session_id)).status is Status.WAITING_USER_INPUT
            await h.runtime.cancel(waiting.session_id, ALICE)
            with pytest.raises(Conflict):  # cancelled already
                await h.runtime.cancel(waiting.session_id, ALICE)

    asyncio.run(main())


def test_answering_by_message_and_by_interaction_is_recorded_for_clients(db_url: str) -> None:
    async def main() -> None:
        replies = [
            calls(("ask", {"question": "which month?"}, "q1")),
            text("March it is"),
            calls(("ask", {"question": "which day?"}, "q2")),
            text("the 3rd"),
        ]
        async with harness(db_url, replies) as h:
            s = await h.start()
            s = await h.runtime.post_message(s.session_id, ALICE, "March")
            assert s.status is Status.SUCCEEDED
            s = await h.runtime.post_message(s.session_id, ALICE, "and the day?")
            iid = s.pending_interaction["interactionId"]  # type: ignore[index]
            s = await h.runtime.complete_interaction(s.session_id, ALICE, iid, {"answer": "3"})
            events = await h.events(s.session_id)
            users = [e.data for e in events if e.type == "USER_MESSAGE"]
            assert [u["content"] for u in users] == ["March", "and the day?"]
            assert "interactionId" in users[0] and "interactionId" not in users[1]
            answered = [e.data for e in events if e.type == "INTERACTION_ANSWERED"]
            assert [a["result"] for a in answered] == [{"answer": "March"}, {"answer": "3"}]
            assert answered[1]["interactionId"] == iid and answered[1]["toolCallId"] == "q2"

    asyncio.run(main())


def test_cancel_closes_every_queued_interaction(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("ask", {"question": "month?"}, "q1"), ("ask", {"question": "day?"}, "q2"))]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.WAITING_USER_INPUT and len(s.pending_entries()) == 2
            await h.runtime.cancel(s.session_id, ALICE)
            stored = await h.load(s.session_id)
            assert stored.status is Status.CANCELLED and stored.pending_entries() == []
            assert_valid_transcript(stored)
            assert [st.status for st in stored.executed_steps] == ["FAILED", "FAILED"]

    asyncio.run(main())
