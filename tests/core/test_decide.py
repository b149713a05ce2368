"""``decide``: what a round left behind -> the next step, with its payload. Pure: no store, no model."""

from __future__ import annotations

from tether.core.decision import (
    Fail,
    Final,
    Round,
    RunAgain,
    WaitCallback,
    WaitConfirmation,
    WaitUser,
    decide,
    decide_direct_call,
)

QUESTION = {"interactionId": "int-1", "kind": "question", "toolCallId": "c1", "toolId": "ask", "payload": {}}
PROPOSAL = {"interactionId": "int-2", "kind": "proposal", "toolCallId": "c2", "toolId": "propose", "payload": {}}


def test_text_is_the_final_answer_and_carries_it() -> None:
    assert decide(Round(final_text="The sum is 5.")) == Final("The sum is 5.")
    assert decide(Round(final_text="")) == Final(""), "an empty answer is still an answer, not another round"


def test_finished_calls_run_again() -> None:
    assert decide(Round()) == RunAgain()


def test_a_refusal_fails_with_its_reason_even_when_a_person_or_job_waits() -> None:
    fail = Fail("the turn used its 3 tool calls", "turn.max_tool_calls", {"calls": 3})
    step = decide(Round(refused=fail, interaction=QUESTION, job_ids=("job-1",)))
    assert step == Fail(
        "the turn used its 3 tool calls", "turn.max_tool_calls", {"calls": 3}
    )  # coded: the person's language


def test_a_question_waits_for_the_user_with_the_interaction() -> None:
    step = decide(Round(interaction=QUESTION, job_ids=("job-1",)))
    assert isinstance(step, WaitUser) and step.interaction["interactionId"] == "int-1"


def test_a_proposal_waits_for_confirmation() -> None:
    assert decide(Round(interaction=PROPOSAL)) == WaitConfirmation(PROPOSAL)


def test_a_login_waits_for_the_user() -> None:
    login = {**QUESTION, "kind": "login"}
    assert decide(Round(interaction=login)) == WaitUser(login)


def test_jobs_wait_for_their_callbacks() -> None:
    assert decide(Round(job_ids=("job-1", "job-2"))) == WaitCallback(("job-1", "job-2"))


def test_a_direct_call_ends_its_session() -> None:
    assert decide_direct_call(Round(), "add", None) == Final("add finished")
    assert decide_direct_call(Round(), "add", "disk on fire") == Fail("disk on fire")
    assert decide_direct_call(Round(), "add", "") == Fail("add failed"), "an error without text still fails"
    assert decide_direct_call(Round(interaction=PROPOSAL), "add", None) == WaitConfirmation(PROPOSAL)
    assert decide_direct_call(Round(job_ids=("j",)), "add", None) == WaitCallback(("j",))
