"""In-process event bus: live fan-out of events that are already persisted.

Subscribers get a queue per session; a slow subscriber never blocks the runtime (queues are
unbounded and a stream that falls behind re-reads from the store by sequence number).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from tether.core.events import RuntimeEvent


class Subscription:
    def __init__(self, bus: InProcessBus, session_id: str) -> None:
        self.bus = bus
        self.session_id = session_id
        self.queue: asyncio.Queue[RuntimeEvent] = asyncio.Queue()

    async def get(self, timeout: float) -> RuntimeEvent | None:
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
    def __init__(self) -> None:
        self.subscribers: dict[str, set[Subscription]] = defaultdict(set)

    def publish(self, event: RuntimeEvent) -> None:
        for sub in self.subscribers.get(event.session_id, ()):
            sub.queue.put_nowait(event)

    def subscribe(self, session_id: str) -> Subscription:
        sub = Subscription(self, session_id)
        self.subscribers[session_id].add(sub)
        return sub
