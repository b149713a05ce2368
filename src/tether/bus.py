"""In-process event bus: live fan-out of events that are already persisted.

Subscribers get a queue per session; a slow subscriber never blocks the runtime (queues are
unbounded and a stream that falls behind re-reads from the store by sequence number). What a
subscriber gets is only a wake-up: the event itself, or, from another replica through Redis
(``redis_bus.py``), a ``Wake`` naming the session and the seq that was stored.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass

from tether.core.events import RuntimeEvent


@dataclass(frozen=True, slots=True)
class Wake:
    """Another replica stored the session's events up to ``seq``: read them from the store."""

    session_id: str
    seq: int


Live = RuntimeEvent | Wake


class Subscription:
    def __init__(self, bus: InProcessBus, session_id: str) -> None:
        self.bus = bus
        self.session_id = session_id
        self.queue: asyncio.Queue[Live] = asyncio.Queue()

    async def get(self, timeout: float) -> Live | None:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None

    def close(self) -> None:
        subs = self.bus.subscribers.get(self.session_id)
        if subs is not None:
            subs.discard(self)
            if not subs:
                del self.bus.subscribers[self.session_id]


class InProcessBus:
    """One process: every reader is woken by the runtime that stored the event."""

    def __init__(self) -> None:
        self.subscribers: dict[str, set[Subscription]] = defaultdict(set)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def check(self) -> str | None:
        """Why readers on other replicas would not be woken (readiness), or None."""
        return None

    def wake(self, session_id: str, seq: int) -> None:
        for sub in self.subscribers.get(session_id, ()):
            sub.queue.put_nowait(Wake(session_id, seq))

    def publish(self, event: RuntimeEvent) -> None:
        for sub in self.subscribers.get(event.session_id, ()):
            sub.queue.put_nowait(event)

    def subscribe(self, session_id: str) -> Subscription:
        sub = Subscription(self, session_id)
        self.subscribers[session_id].add(sub)
        return sub
