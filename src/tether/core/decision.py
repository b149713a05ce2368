"""What a round of the turn decides, as a value that carries its payload.

Acting on the model's reply (running tools, emitting events) is ``Turn.act``; it returns a
``Round``, the facts the round left behind. ``decide`` reads those facts, and nothing else, into
the next step — the same shape as openai-agents' ``NextStepFinalOutput | NextStepRunAgain |
NextStepInterruption``. ``Turn.finish`` then ends the turn as the step says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tether.core.session import Status
from tether.core.tools import InteractionKind


@dataclass(frozen=True, slots=True)
class Round:
    """What acting on one model reply left behind."""

    final_text: str | None = None  # the model answered in text (no tool calls)
    refused: Fail | None = None  # a guardrail refused a call (the tool-call budget): the turn fails so
    interaction: dict[str, Any] | None = None  # the interaction the session now waits for, if any
    job_ids: tuple[str, ...] = ()  # async jobs this round started


@dataclass(frozen=True, slots=True)
class RunAgain:
    """Every call finished: the model gets another round."""


@dataclass(frozen=True, slots=True)
class Final:
    """The model answered: the turn succeeds with ``text``."""

    text: str


@dataclass(frozen=True, slots=True)
class Fail:
    """The turn fails for ``reason``, a sentence a person can read; ``code`` and ``params`` say it
    in the person's language (``core/error_messages.py``, the page's ``err_<code>``)."""

    reason: str
    code: str | None = None
    params: dict[str, Any] | None = None

    def coded(self) -> dict[str, Any]:
        """The ``code`` and ``params`` an event carries beside the reason ({} when uncoded)."""
        return {} if self.code is None else {"code": self.code, "params": self.params or {}}


@dataclass(frozen=True, slots=True)
class WaitUser:
    """A call asked a person (a question, a form, a lapsed login): wait for ``interaction``."""

    interaction: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WaitConfirmation:
    """A call proposed a write: wait for a person to confirm or cancel ``interaction``."""

    interaction: dict[str, Any]


@dataclass(frozen=True, slots=True)
class WaitCallback:
    """A call started an async job: wait for the callbacks of ``job_ids``."""

    job_ids: tuple[str, ...]


NextStep = RunAgain | Final | Fail | WaitUser | WaitConfirmation | WaitCallback
WAITS = (WaitUser, WaitConfirmation, WaitCallback)


def waiting_status(interaction: dict[str, Any]) -> Status:
    """The status a session waits in for ``interaction`` (see ``tools.InteractionKind``)."""
    kind: InteractionKind = interaction["kind"]
    return Status.WAITING_CONFIRMATION if kind == "proposal" else Status.WAITING_USER_INPUT


def decide(done: Round) -> NextStep:
    """The next step after a round, from what the round left behind. A refusal outranks a wait,
    a person outranks a job (the job's callback is applied when the person has answered)."""
    if done.final_text is not None:
        return Final(done.final_text)
    if done.refused is not None:
        return done.refused
    if done.interaction is not None:
        if waiting_status(done.interaction) is Status.WAITING_CONFIRMATION:
            return WaitConfirmation(done.interaction)
        return WaitUser(done.interaction)
    if done.job_ids:
        return WaitCallback(done.job_ids)
    return RunAgain()


def decide_direct_call(done: Round, tool_id: str, failed: str | None) -> NextStep:
    """The step after a session's only call, made directly by another protocol (no model runs):
    a wait as ``decide`` says; otherwise the call's error (``failed``) fails the session, and a
    result ends it."""
    step = decide(done)
    if not isinstance(step, RunAgain):
        return step
    if failed is not None:
        return Fail(failed or f"{tool_id} failed")
    return Final(f"{tool_id} finished")
