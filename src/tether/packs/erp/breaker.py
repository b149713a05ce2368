"""The ERP's circuit breaker: after a few consecutive calls that could not reach the ERP, calls
fail at once (no 15 s waits holding a worker each) until one probe gets through.

States: ``closed`` (calls go through; consecutive unreachable calls are counted), ``open`` (every
call fails fast until ``reset_s`` has passed), ``half_open`` (exactly one call — the probe — goes
through; the others keep failing fast while it is out). The probe's success closes the breaker,
its failure opens it again for another ``reset_s``.

Only *unreachability* counts (a connection refused or reset, a timeout, a gateway's 502/503/504):
an ERP that answers — 401, a refusal, a validation error — is up, and its answer closes the
breaker. That is why this is our own small class and not a library breaker: those count every
exception a call raises unless told otherwise, and let every waiting caller through in half-open,
which against a hung ERP would hold each of them for the full timeout again. It holds no token and
no data, only counts and times, and never raises by itself: the client asks ``admit()`` and
reports ``succeeded()`` / ``failed()``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
STATES = (CLOSED, OPEN, HALF_OPEN)


class CircuitBreaker:
    def __init__(self, failures: int = 3, reset_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.failures = failures  # consecutive unreachable calls that open it
        self.reset_s = reset_s  # how long it stays open before one probe is let through
        self.clock = clock
        self.consecutive = 0
        self.opened_at: float | None = None
        self.probing = False
        self.rejected = 0  # calls failed fast, since start (for /metrics)
        self.opened = 0  # times it opened, since start

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return CLOSED
        if self.probing or self.clock() - self.opened_at >= self.reset_s:
            return HALF_OPEN
        return OPEN

    def admit(self) -> bool:
        """May a call go to the ERP now? True in closed; in half-open, for the one probe only."""
        state = self.state
        if state == CLOSED:
            return True
        if state == HALF_OPEN and not self.probing:
            self.probing = True
            return True
        self.rejected += 1
        return False

    def succeeded(self) -> None:
        """The ERP answered (whatever it said): closed again."""
        self.consecutive = 0
        self.opened_at = None
        self.probing = False

    def failed(self) -> None:
        """The call could not reach the ERP."""
        self.consecutive += 1
        if self.probing or (self.opened_at is None and self.consecutive >= self.failures):
            self.opened_at = self.clock()
            self.opened += 1
        self.probing = False

    def abandoned(self) -> None:
        """The call was cancelled before the ERP answered: neither a success nor a failure, but a
        probe that never came back must not keep the breaker half-open forever."""
        self.probing = False

    def retry_after_s(self) -> int:
        """Whole seconds until a call is worth trying again (at least 1)."""
        if self.opened_at is None:
            return max(1, math.ceil(self.reset_s))
        return max(1, math.ceil(self.opened_at + self.reset_s - self.clock()))


class BreakerMetrics:
    """A Prometheus collector reading the breaker at scrape time: ``tether_erp_circuit_state``
    (1 on the current state's label), consecutive failures, calls failed fast, times opened."""

    def __init__(self, breaker: CircuitBreaker) -> None:
        self.breaker = breaker

    def collect(self) -> Iterator[Any]:
        b = self.breaker
        state = GaugeMetricFamily(
            "tether_erp_circuit_state", "The ERP circuit breaker's state (1 on the current one)", labels=["state"]
        )
        current = b.state
        for name in STATES:
            state.add_metric([name], 1.0 if name == current else 0.0)
        yield state
        yield GaugeMetricFamily(
            "tether_erp_circuit_failures", "Consecutive ERP calls that could not reach it", value=b.consecutive
        )
        yield CounterMetricFamily(
            "tether_erp_circuit_rejected", "ERP calls failed fast by the open breaker", value=b.rejected
        )
        yield CounterMetricFamily("tether_erp_circuit_opened", "Times the ERP breaker opened", value=b.opened)
