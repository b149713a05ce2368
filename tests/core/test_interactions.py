"""ask_user and several interactions of one assistant message: each answered by its id, in any
order; answering one twice is 409 (Conflict); a tool's answer check (422) leaves the session
waiting; the model sees every answer in place of its call's tool message."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.core.harness import ALICE, harness
from tether.core.session import Status
from tether.errors import Conflict, InvalidInput, NotFound
from tether.models.scripted import calls, text


def _tool_data(s: Any) -> dict[str, Any]:
    return {m["tool_call_id"]: json.loads(m["content"])["data"] for m in s.transcript if m.get("role") == "tool"}


def test_ask_user_is_always_allowed_and_its_answer_is_the_tool_result(db_url: str) -> None:
    async def main() -> None:
        ask = ("ask_user", {"question": "哪个客户？", "options": ["C0001", "C0002"]}, "a1")
        async with harness(db_url, [calls(ask), text("好的，C0002")]) as h:
            s = await h.runtime.start_session(ALICE, "run the test", {})
            assert s.status is Status.WAITING_USER_INPUT
            pending = s.pending_interaction or {}
            assert pending["payload"] == {
                "question": "哪个客户？",
                "options": ["C0001", "C0002"],
                "allowFreeText": True,
            }
            events = await h.events(s.session_id)
            question = next(e for e in events if e.type == "QUESTION")
            assert question.data["kind"] == "question" and question.data["interactionId"] == pending["interactionId"]
            with pytest.raises(InvalidInput):  # an empty answer is refused; the session keeps waiting
                await h.runtime.complete_interaction(s.session_id, ALICE, pending["interactionId"], {"answer": " "})
            assert (await h.store.load(s.session_id)).status is Status.WAITING_USER_INPUT
            s = await h.runtime.post_message(s.session_id, ALICE, "C0002")  # the next message answers it
            assert s.status is Status.SUCCEEDED
            assert _tool_data(s)["a1"] == {"answer": "C0002"}
            assert len([m for m in s.transcript if m.get("role") == "user"]) == 1  # not a new request
            with pytest.raises(Conflict):
                await h.runtime.complete_interaction(s.session_id, ALICE, pending["interactionId"], {"answer": "x"})

    asyncio.run(main())


def test_several_interactions_of_one_message_are_answered_by_id_each(sqlite_url: str) -> None:
    async def main() -> None:
        reply = calls(
            ("ask", {"question": "Which month?"}, "q1"),
            ("propose", {"change": "price=10"}, "p1"),
            ("ask", {"question": "Which region?"}, "q2"),
        )
        async with harness(sqlite_url, [reply, text("all answered")]) as h:
            s = await h.start()
            assert s.status is Status.WAITING_USER_INPUT
            ids = {e["payload"].get("question", "proposal"): e["interactionId"] for e in s.pending_entries()}
            assert len(ids) == 3 and (await h.types(s.session_id)).count("QUESTION") == 2
            s = await h.runtime.complete_interaction(s.session_id, ALICE, ids["Which region?"], {"answer": "east"})
            assert s.status is Status.WAITING_USER_INPUT and len(s.pending_entries()) == 2
            with pytest.raises(Conflict):
                await h.runtime.complete_interaction(s.session_id, ALICE, ids["Which region?"], {"answer": "west"})
            with pytest.raises(NotFound):
                await h.runtime.complete_interaction(s.session_id, ALICE, "int-unknown", {"answer": "x"})
            s = await h.runtime.post_message(s.session_id, ALICE, "March")  # answers the head (q1)
            assert s.status is Status.WAITING_CONFIRMATION  # the proposal is what is left
            s = await h.runtime.complete_interaction(s.session_id, ALICE, ids["proposal"], {"state": "done"})
            assert s.status is Status.SUCCEEDED and s.pending_interaction is None
            assert _tool_data(s) == {"q1": {"answer": "March"}, "p1": {"state": "done"}, "q2": {"answer": "east"}}
            h.model.assert_consumed()

    asyncio.run(main())
