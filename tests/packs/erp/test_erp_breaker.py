"""The ERP circuit breaker's states on a clock the test moves: it opens after N consecutive
unreachable calls, lets exactly one probe through once ``reset_s`` has passed, and closes on any
answer from the ERP."""

from __future__ import annotations

from tether.packs.erp.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_consecutive_failures_only() -> None:
    clock = Clock()
    b = CircuitBreaker(failures=3, reset_s=5, clock=clock)
    for _ in range(2):
        assert b.admit()
        b.failed()
    assert b.admit()
    b.succeeded()  # an answer in between resets the count
    for _ in range(2):
        assert b.admit()
        b.failed()
    assert b.state == CLOSED
    assert b.admit()
    b.failed()
    assert b.state == OPEN and b.opened == 1
    assert not b.admit() and not b.admit()
    assert b.rejected == 2
    clock.now += 2.2
    assert b.retry_after_s() == 3


def test_half_open_lets_one_probe_through_and_its_outcome_decides() -> None:
    clock = Clock()
    b = CircuitBreaker(failures=1, reset_s=5, clock=clock)
    b.admit()
    b.failed()
    clock.now += 5
    assert b.state == HALF_OPEN
    assert b.admit()  # the probe
    assert not b.admit()  # everyone else fails fast while it is out
    b.failed()  # the probe failed: open for another reset_s
    assert b.state == OPEN and not b.admit()
    clock.now += 5
    assert b.admit()
    b.succeeded()
    assert b.state == CLOSED and b.admit() and b.consecutive == 0


def test_an_abandoned_probe_does_not_keep_it_half_open_forever() -> None:
    clock = Clock()
    b = CircuitBreaker(failures=1, reset_s=1, clock=clock)
    b.admit()
    b.failed()
    clock.now += 1
    assert b.admit()
    b.abandoned()  # cancelled before the ERP answered
    assert b.admit()  # the next call is the new probe
