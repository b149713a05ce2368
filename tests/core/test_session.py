"""The status machine: legal transitions pass, illegal ones raise."""

from __future__ import annotations

import pytest

from tether.core.session import AgentSession, Owner, Status, can_transition
from tether.errors import IllegalTransition

LEGAL = [
    (Status.RUNNING, Status.SUCCEEDED),
    (Status.RUNNING, Status.WAITING_ASYNC_CALLBACK),
    (Status.WAITING_ASYNC_CALLBACK, Status.RUNNING),
    (Status.WAITING_USER_INPUT, Status.RUNNING),
    (Status.WAITING_CONFIRMATION, Status.RUNNING),
    (Status.SUCCEEDED, Status.RUNNING),
    (Status.CANCELLED, Status.RUNNING),  # the user stopped a turn, then sends a new message
    (Status.WAITING_USER_INPUT, Status.CANCELLED),
]
ILLEGAL = [
    (Status.SUCCEEDED, Status.FAILED),
    (Status.SUCCEEDED, Status.WAITING_ASYNC_CALLBACK),
    (Status.CANCELLED, Status.SUCCEEDED),
    (Status.WAITING_USER_INPUT, Status.SUCCEEDED),
    (Status.WAITING_ASYNC_CALLBACK, Status.SUCCEEDED),
    (Status.RUNNING, Status.RUNNING),
]


@pytest.mark.parametrize(("a", "b"), LEGAL)
def test_legal(a: Status, b: Status) -> None:
    s = AgentSession.new(Owner("u", "t"), "q", {})
    s.status = a
    s.transition(b)
    assert s.status is b


@pytest.mark.parametrize(("a", "b"), ILLEGAL)
def test_illegal_raises_and_keeps_the_status(a: Status, b: Status) -> None:
    s = AgentSession.new(Owner("u", "t"), "q", {})
    s.status = a
    assert not can_transition(a, b)
    with pytest.raises(IllegalTransition):
        s.transition(b)
    assert s.status is a
