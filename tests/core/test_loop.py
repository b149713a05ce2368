"""The turn loop, driven by a scripted model over a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.core.harness import ALICE, Harness, assert_valid_transcript, harness, tool_messages
from tether.core.loop import STORE_AFTER_S
from tether.core.session import Status
from tether.core.skills import Skill
from tether.core.tools import ToolContext, tool
from tether.core.turn import Limits
from tether.models.scripted import calls, failure, text


def body(message: dict) -> dict:
    return json.loads(message["content"])


def test_several_calls_in_one_message_run_in_order_each_answered(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("add", {"a": 1, "b": 2}, "c1"), ("echo", {"text": "hi"}, "c2")), text("3 and hi")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.SUCCEEDED
            msgs = tool_messages(s)
            assert [m["tool_call_id"] for m in msgs] == ["c1", "c2"]
            assert body(msgs[0])["data"] == {"sum": 3}
            assert body(msgs[1])["data"]["text"] == "hi"
            seen = h.model.requests[1].messages
            assert [m["tool_call_id"] for m in seen if m["role"] == "tool"] == ["c1", "c2"]
            assert_valid_transcript(s)
            h.model.assert_consumed()

    asyncio.run(main())


def test_async_call_waits_while_its_sibling_still_runs(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("slow_job", {"label": "x"}, "j1"), ("add", {"a": 2, "b": 2}, "c2")), text("done")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.WAITING_ASYNC_CALLBACK
            assert h.counters.runs["add"] == 1
            assert s.waiting_external_job_id == h.counters.tickets[0].job_id
            assert len(h.model.requests) == 1
            await h.callback(0, payload={"answer": 42})
            s = await h.load(s.session_id)
            assert s.status is Status.SUCCEEDED
            assert body(tool_messages(s)[0])["data"] == {"answer": 42}
            assert_valid_transcript(s)
            types = await h.types(s.session_id)
            assert "WAITING_ASYNC_CALLBACK" in types and "TOOL_CALLBACK_RECEIVED" in types

    asyncio.run(main())


def test_several_pending_jobs_resume_only_after_the_last(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("slow_job", {"label": "a"}, "j1"), ("slow_job", {"label": "b"}, "j2")), text("both")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.WAITING_ASYNC_CALLBACK and len(s.waiting_job_ids) == 2
            await h.callback(1, payload={"b": 1})
            s = await h.load(s.session_id)
            assert s.status is Status.WAITING_ASYNC_CALLBACK
            assert s.waiting_job_ids == [h.counters.tickets[0].job_id]
            assert len(h.model.requests) == 1  # not resumed yet
            await h.callback(0, payload={"a": 1})
            s = await h.load(s.session_id)
            assert s.status is Status.SUCCEEDED
            final_request = h.model.requests[-1].messages
            results = [body(m)["data"] for m in final_request if m["role"] == "tool"]
            assert results == [{"a": 1}, {"b": 1}]  # replaced in place, in call order
            assert len(tool_messages(s)) == 2
            assert h.counters.runs["slow_job"] == 2  # resume re-ran nothing

    asyncio.run(main())


def test_failed_job_result_goes_to_the_model(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("slow_job", {"label": "a"}, "j1")), text("the job failed, sorry")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            await h.callback(0, status="FAILED", error="upstream timeout")
            s = await h.load(s.session_id)
            assert s.status is Status.SUCCEEDED
            msg = body(tool_messages(s)[0])
            assert msg["kind"] == "error" and msg["data"]["error"] == "upstream timeout"
            assert (msg["data"]["code"], msg["data"]["params"]) == (
                "job.failed",
                {"tool": "slow_job", "reason": "upstream timeout"},
            )
            failed = [e for e in await h.events(s.session_id) if e.type == "TOOL_EXECUTION_FAILED"]
            assert failed and failed[0].data["code"] == "job.failed"  # the page says it in the person's language

    asyncio.run(main())


@pytest.mark.parametrize(
    ("call", "expected", "code"),
    [
        (("nope", {}), "unknown tool 'nope'", "tool.unknown"),
        (("hidden", {}), "not allowed in this turn", "tool.not_allowed"),
        (("add", "{not json"), "not valid JSON", "tool.bad_arguments"),
        (("add", {"a": "x", "b": 1}), "invalid arguments: a", "tool.invalid_arguments"),
        (("add", {"a": 1, "b": 2, "c": 3}), "c: Extra inputs are not permitted", "tool.invalid_arguments"),
        (("add", "[1, 2]"), "must be a JSON object", "tool.bad_arguments"),
    ],
)
def test_bad_calls_come_back_to_the_model_as_error_results(
    db_url: str, call: tuple[str, Any], expected: str, code: str
) -> None:
    async def main() -> None:
        replies = [calls((call[0], call[1], "bad")), calls(("add", {"a": 1, "b": 1}, "good")), text("fixed")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.SUCCEEDED
            first = body(tool_messages(s)[0])
            assert first["kind"] == "error" and expected in first["data"]["error"]  # the model's English
            assert (first["data"]["code"], first["data"]["params"]) == (code, {"tool": call[0]})  # a person's
            assert h.counters.runs.get("hidden", 0) == 0
            assert body(tool_messages(s)[1])["data"] == {"sum": 2}
            assert "TOOL_EXECUTION_FAILED" in await h.types(s.session_id)

    asyncio.run(main())


@pytest.mark.parametrize(("tool_name", "expected"), [("boom", "disk on fire"), ("hang", "timed out after 0.2s")])
def test_a_raising_or_hanging_tool_gives_an_error_result(db_url: str, tool_name: str, expected: str) -> None:
    async def main() -> None:
        async with harness(db_url, [calls((tool_name, {}, "t")), text("ok")]) as h:
            s = await h.start()
            assert s.status is Status.SUCCEEDED
            assert expected in body(tool_messages(s)[0])["data"]["error"]
            failed = [e for e in await h.events(s.session_id) if e.type == "TOOL_EXECUTION_FAILED"]
            assert failed and expected in failed[0].data["error"]
            # both are named for a person (code + params); the message stays the model's explanation
            coded = {k: failed[0].data.get(k) for k in ("code", "params")}
            if tool_name == "hang":
                assert coded == {"code": "tool.timeout", "params": {"tool": "hang", "seconds": "0.2"}}
                assert body(tool_messages(s)[0])["data"]["code"] == "tool.timeout"
            else:
                assert coded == {"code": "tool.failed", "params": {"tool": "boom"}}

    asyncio.run(main())


def test_model_failures_are_retried_then_the_turn_fails_readably(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [failure("503 from endpoint"), text("recovered")]) as h:
            s = await h.start()
            assert s.status is Status.SUCCEEDED and len(h.model.requests) == 2
        replies = [failure("503"), failure("503"), failure("503 again")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.FAILED
            assert s.last_error is not None and "model endpoint failed" in s.last_error and "503 again" in s.last_error
            (done,) = [e.data for e in await h.events(s.session_id) if e.type == "TURN_FINISHED"]
            assert done["code"] == "model.failed" and "503 again" in done["reason"], done
        async with harness(db_url, [failure("401 bad key", retryable=False)]) as h:
            s = await h.start()
            assert s.status is Status.FAILED and len(h.model.requests) == 1

    asyncio.run(main())


def test_guardrails_end_the_turn_with_a_reason(db_url: str) -> None:
    async def main() -> None:
        loop_forever = [calls(("add", {"a": 1, "b": 1})) for _ in range(3)]
        async with harness(db_url, loop_forever, limits=Limits(max_rounds=3)) as h:
            s = await h.start()
            assert s.status is Status.FAILED and "3 model rounds" in (s.last_error or "")
            (done,) = [e.data for e in await h.events(s.session_id) if e.type == "TURN_FINISHED"]
            assert (done["code"], done["params"]) == ("turn.max_rounds", {"rounds": 3}), done
            stored = await h.load(s.session_id)  # kept with the session: a page opened later says it too
            assert stored.last_error_code == {"code": "turn.max_rounds", "params": {"rounds": 3}}
        many = [calls(*[("add", {"a": i, "b": 0}) for i in range(5)])]
        async with harness(db_url, many, limits=Limits(max_tool_calls=3)) as h:
            s = await h.start()
            assert s.status is Status.FAILED and "3 tool calls" in (s.last_error or "")
            (done,) = [e.data for e in await h.events(s.session_id) if e.type == "TURN_FINISHED"]
            assert (done["code"], done["params"]) == ("turn.max_tool_calls", {"calls": 3}), done
            assert h.counters.runs["add"] == 3
            assert len(tool_messages(s)) == 5  # refused calls are still answered
            assert_valid_transcript(s)

        async def slow(_request: Any) -> Any:
            await asyncio.sleep(2)
            return text("late")

        async with harness(db_url, [slow], limits=Limits(turn_timeout_s=0.3)) as h:
            s = await h.start()
            assert s.status is Status.FAILED and "0.3s limit" in (s.last_error or "")
            # the person reads it in their language: the events carry the code and its params
            coded = [(e.data["code"], e.data["params"]) for e in await h.events(s.session_id) if "code" in e.data]
            assert coded == [("turn.timeout", {"seconds": "0.3"})] * 2, coded  # ERROR and TURN_FINISHED

    asyncio.run(main())


def test_question_and_proposal_pause_the_session(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("ask", {"question": "Which month?"}, "q1")), text("March it is")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.WAITING_USER_INPUT
            assert s.pending_interaction and s.pending_interaction["payload"] == {"question": "Which month?"}
            assert "QUESTION" in await h.types(s.session_id)
            s = await h.runtime.post_message(s.session_id, s.owner, "March")
            assert s.status is Status.SUCCEEDED and s.pending_interaction is None
            assert body(tool_messages(s)[0])["data"] == {"answer": "March"}
        replies = [calls(("propose", {"change": "price=10"}, "p1")), text("applied")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            assert s.status is Status.WAITING_CONFIRMATION
            assert "WRITE_PROPOSAL" in await h.types(s.session_id)
            iid = s.pending_interaction["interactionId"]  # type: ignore[index]
            s = await h.runtime.complete_interaction(s.session_id, s.owner, iid, {"opStatus": "executed"})
            assert s.status is Status.SUCCEEDED

    asyncio.run(main())


def test_events_are_persisted_with_contiguous_sequence_and_a_valid_order(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [calls(("add", {"a": 1, "b": 2})), text("3")]) as h:
            s = await h.start()
            events = await h.events(s.session_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            types = [e.type for e in events]
            assert types[:3] == ["SESSION_STARTED", "SKILLS_SELECTED", "TURN_STARTED"]
            assert types.index("TOOL_EXECUTION_STARTED") < types.index("TOOL_EXECUTION_FINISHED")
            assert types[-1] == "TURN_FINISHED" and "DSL_COMPILED" in types and "TOKEN" in types

    asyncio.run(main())


def test_credentials_never_reach_transcript_or_events(db_url: str) -> None:
    secret = "s3cr3t-credential-value"

    async def main() -> None:
        async with harness(db_url, [calls(("whoami", {})), text("you are alice")], credential=secret) as h:
            s = await h.start()
            assert body(tool_messages(s)[0])["data"]["has_credential"] is True
            dumped = json.dumps(s.transcript) + json.dumps([e.to_json() for e in await h.events(s.session_id)])
            assert secret not in dumped

    asyncio.run(main())


def test_a_second_message_while_running_is_refused(db_url: str) -> None:
    async def main() -> None:
        gate = asyncio.Event()

        async def wait_for_gate(_request: Any) -> Any:
            await gate.wait()
            return text("first")

        async with harness(db_url, [text("hello"), wait_for_gate, text("never")]) as h:
            s = await h.start()
            first = asyncio.create_task(h.runtime.post_message(s.session_id, s.owner, "one"))
            await asyncio.sleep(0.05)
            from tether.errors import Conflict

            with pytest.raises(Conflict):
                await h.runtime.post_message(s.session_id, s.owner, "two")
            gate.set()
            s = await first
            users = [m["content"] for m in s.transcript if m["role"] == "user"]
            assert users == ["run the test", "one"]

    asyncio.run(main())


def test_a_stored_but_unapplied_result_is_applied_by_a_retry_or_the_sweep(db_url: str) -> None:
    async def main() -> None:
        async with harness(
            db_url,
            [
                calls(("slow_job", {"label": "x"}, "j1")),
                calls(("slow_job", {"label": "y"}, "j2")),
                text("done"),
                text("done too"),
            ],
        ) as h:
            first = await h.start()
            second = await h.start()
            one, two = h.counters.tickets
            # the process died after storing the results, before applying them
            assert await h.store.finish_job(one.job_id, "SUCCEEDED", {"v": 1}, None)
            assert await h.store.finish_job(two.job_id, "SUCCEEDED", {"v": 2}, None)
            assert set(await h.store.sessions_with_unapplied_jobs()) == {first.session_id, second.session_id}
            retry = await h.runtime.callback(one.job_id, one.token, "SUCCEEDED", {"v": 1}, None)
            assert retry == {"ok": True, "duplicate": True}
            await h.runtime.drain()
            assert (await h.load(first.session_id)).status is Status.SUCCEEDED
            await h.runtime.recover()
            await h.runtime.drain()
            assert (await h.load(second.session_id)).status is Status.SUCCEEDED
            assert await h.store.sessions_with_unapplied_jobs() == []
            again = await h.runtime.callback(two.job_id, two.token, "SUCCEEDED", {"v": 2}, None)
            await h.runtime.drain()
            assert again["duplicate"] and len(h.model.requests) == 4

    asyncio.run(main())


def test_a_turn_longer_than_its_lease_keeps_it_renewed(db_url: str) -> None:
    """The driver renews the lease while a slow tool runs: no sweep (here or on another replica)
    takes the session as abandoned, and the turn's own commits still land."""
    seen: list[list[str]] = []

    async def main() -> None:
        @tool()
        async def slow(ctx: ToolContext) -> dict[str, bool]:
            """Takes three lease lengths."""
            for _ in range(6):
                await asyncio.sleep(0.2)
                seen.append(await h.store.expired_running())
            return {"done": True}

        skill = Skill("slow-skill", "A slow tool.", ("slow",), "Use it.", ("test",))
        replies = [calls(("slow", {}, "c1")), text("finished")]
        async with harness(db_url, replies, tools=[slow], skills=[skill]) as h:
            h.store.lease_seconds = 0.4  # a beat every 0.2 s (the shortest interval)
            s = await h.start()
            assert s.status is Status.SUCCEEDED, s.last_error
            assert json.loads(tool_messages(s)[0]["content"])["data"] == {"done": True}
            assert len(seen) == 6 and seen == [[]] * 6, f"the session lapsed while its turn ran: {seen}"
            assert await h.store.expired_running() == []

    asyncio.run(main())


async def _stored_now(h: Harness) -> tuple[str, list[str], list[str]]:
    """The newest session as the store holds it: its query, event types and tool messages."""
    listed = await h.store.list_sessions(ALICE, 1, 0)
    if not listed:
        return "", [], []
    s = await h.store.load(listed[0].session_id)
    types = [e.type for e in await h.store.events_after(s.session_id, 0, 1000)]
    return s.query, types, [str(m.get("content")) for m in s.transcript if m["role"] == "tool"]


def _count_commits(h: Harness) -> list[str]:
    """Every durable commit of a session the runtime makes from now on, by kind."""
    made: list[str] = []
    create, commit = h.store.create, h.store.commit

    async def counted_create(c: Any) -> None:
        made.append("create")
        await create(c)

    async def counted_commit(c: Any) -> None:
        made.append("commit")
        await commit(c)

    h.store.create, h.store.commit = counted_create, counted_commit  # type: ignore[method-assign, assignment]
    return made


def test_a_slow_model_call_finds_the_turns_start_stored_while_it_answers(db_url: str) -> None:
    """A model call has no side effects, so what a turn starts with rides its first round's commit
    — unless the model takes longer than STORE_AFTER_S: then it is stored while the model answers
    (listed, stoppable, shown). Read back from the store late in each slow call: the new session and
    its TURN_STARTED; after an answer, the answered tool message and the resumed turn's start."""
    found: list[tuple[str, list[str], list[str]]] = []
    rig: dict[str, Harness] = {}

    async def slow_then_read() -> None:
        await asyncio.sleep(STORE_AFTER_S * 4)
        found.append(await _stored_now(rig["h"]))

    async def first(request: Any) -> Any:
        await slow_then_read()
        return calls(("ask", {"question": "which colour?"}, "q1"))

    async def second(request: Any) -> Any:
        await slow_then_read()
        return text("blue it is")

    async def main() -> None:
        async with harness(db_url, [first, second]) as h:
            rig["h"] = h
            message = f"test durability {id(rig)}"
            s = await h.start(message)
            assert s.status is Status.WAITING_USER_INPUT and s.pending_interaction is not None
            iid = s.pending_interaction["interactionId"]
            s = await h.runtime.complete_interaction(s.session_id, ALICE, iid, {"answer": "blue"})
            assert s.status is Status.SUCCEEDED, s.last_error
            (query, types, _), (_, later, tools) = found
            assert query == message and types == ["SESSION_STARTED", "SKILLS_SELECTED", "TURN_STARTED"]
            assert later[-2:] == ["INTERACTION_ANSWERED", "TURN_STARTED"]
            assert "blue" in tools[0]

    asyncio.run(main())


def test_a_quick_round_stores_the_turns_start_with_its_result_in_one_commit(db_url: str) -> None:
    """A new session answered in one quick round is one durable commit (its creation, with the
    answer), and so is a follow-up message; the stored events are complete and in order."""

    async def main() -> None:
        async with harness(db_url, [text("first answer"), text("second answer")]) as h:
            made = _count_commits(h)
            s = await h.start()
            assert s.status is Status.SUCCEEDED and made == ["create"]
            started = [t for t in await h.types(s.session_id) if t != "TOKEN"]
            assert started[:3] == ["SESSION_STARTED", "SKILLS_SELECTED", "TURN_STARTED"]
            assert started[3:5] == ["MODEL_DECISION", "ASSISTANT_MESSAGE"] and started[-1] == "TURN_FINISHED"
            s = await h.runtime.post_message(s.session_id, ALICE, "and again")
            assert s.status is Status.SUCCEEDED and made == ["create", "commit"]
            events = await h.events(s.session_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            types = [e.type for e in events if e.type != "TOKEN"][len(started) :]
            assert types[:4] == ["USER_MESSAGE", "SKILLS_SELECTED", "TURN_STARTED", "MODEL_DECISION"]
            assert types[-1] == "TURN_FINISHED"
            assert (await h.load(s.session_id)).transcript[-1]["content"] == "second answer"

    asyncio.run(main())


def test_a_tool_with_side_effects_in_the_first_round_runs_only_once_its_session_is_stored(db_url: str) -> None:
    """Deferring the first commit never lets a tool that writes run ahead of it: the pipeline
    commits before any tool that is neither read-only nor a proposal."""
    seen: list[tuple[str, list[str], list[str]]] = []
    rig: dict[str, Harness] = {}

    @tool()
    async def write_it(ctx: ToolContext) -> Any:
        """Writes something outside."""
        seen.append(await _stored_now(rig["h"]))
        return {"written": True}

    skill = Skill("writer", "Writes.", ("write_it",), "Write it.", ("test",))

    async def main() -> None:
        replies = [calls(("write_it", {}, "w1")), text("written")]
        async with harness(db_url, replies, tools=[write_it], skills=[skill]) as h:
            rig["h"] = h
            made = _count_commits(h)
            s = await h.start("test writing")
            assert s.status is Status.SUCCEEDED, s.last_error
            [(query, types, tools)] = seen
            assert query == "test writing" and tools == []
            assert types[2:] == ["TURN_STARTED", "MODEL_DECISION", "TOOL_CALL_REQUESTED", "TOOL_EXECUTION_STARTED"]
            assert made[0] == "create" and len(made) == 3  # before the tool, after its round, the end

    asyncio.run(main())


def test_calls_cut_off_by_the_turn_limit_are_answered_and_the_conversation_goes_on(db_url: str) -> None:
    """A tool in flight when the turn reaches its time limit (and the calls after it) get an error
    result: the transcript stays one a model accepts (every call answered), the steps say FAILED,
    and the next message is a normal turn."""
    from tests.core.test_cancel import Gate, tools_with

    async def main() -> None:
        gate = Gate()
        tools, skills = tools_with(gate)
        replies = [calls(("crunch", {"seconds": 30}, "c1"), ("add", {"a": 1, "b": 2}, "c2")), text("after the limit")]
        async with harness(db_url, replies, tools=tools, skills=skills, limits=Limits(turn_timeout_s=0.5)) as h:
            s = await h.start()
            assert s.status is Status.FAILED and "0.5s limit" in (s.last_error or "")
            assert gate.cancelled == 1 and h.counters.runs.get("add", 0) == 0
            stored = await h.load(s.session_id)
            assert_valid_transcript(stored)
            errors = {m["tool_call_id"]: body(m)["data"]["error"] for m in tool_messages(stored)}
            assert "in flight" in errors["c1"] and "not run" in errors["c2"]
            assert [st.status for st in stored.executed_steps] == ["FAILED", "FAILED"]
            events = await h.events(s.session_id)
            failed = [e.data["toolCallId"] for e in events if e.type == "TOOL_EXECUTION_FAILED"]
            assert failed == ["c1", "c2"] and events[-1].type == "TURN_FINISHED"
            after = await h.runtime.post_message(s.session_id, ALICE, "go on")
            assert after.status is Status.SUCCEEDED and after.transcript[-1]["content"] == "after the limit"

    asyncio.run(main())
