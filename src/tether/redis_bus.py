"""``RedisBus``: wake-ups of SSE readers across replicas through Redis pub/sub.

The store stays the only truth: a reader always reads events from the store by seq, and what
Redis carries is a hint that there is something to read — ``"<replica> <seq>"`` on the channel
``tether:wake:<session id>``. Each replica subscribes (on one pub/sub connection) to the sessions
its own readers follow and ignores its own messages (its readers were woken in-process already).
A publish never blocks or fails the runtime: wake-ups are queued and sent in batches by a task of
their own, and dropped while Redis is down. Readers then fall back to re-reading the store every
``TETHER_SSE_POLL_S``, so an outage adds latency, never a lost or repeated event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from tether.bus import InProcessBus, Subscription
from tether.core.events import RuntimeEvent

log = logging.getLogger("tether.bus")
PREFIX = "tether:wake:"
MAX_QUEUED = 10_000  # wake-ups waiting to be sent; beyond that they are dropped (readers poll)
LISTEN_S = 0.05  # how long one read of the pub/sub connection waits (new subscriptions wait at most this)


class RedisBus(InProcessBus):
    def __init__(self, url: str, replica_id: str) -> None:
        super().__init__()
        self.replica_id = replica_id
        self._url = url
        self._redis: aioredis.Redis | None = None
        self._out: asyncio.Queue[tuple[str, int]] = asyncio.Queue(MAX_QUEUED)
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()
        self.listening = False  # the pub/sub connection is up
        self.dropped = 0  # wake-ups not sent (Redis down or the queue full)
        self._said: dict[str, float] = {}

    async def start(self) -> None:
        self._redis = aioredis.from_url(
            self._url, decode_responses=True, socket_connect_timeout=2.0, socket_timeout=5.0
        )
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._send()), loop.create_task(self._listen())]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        if self._redis is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._redis.aclose()
            self._redis = None

    async def check(self) -> str | None:
        if self._redis is None:
            return "the Redis bus is not started"
        try:
            await asyncio.wait_for(self._redis.ping(), 2.0)
        except (RedisError, OSError, TimeoutError) as e:
            return f"Redis is not reachable: {type(e).__name__}"
        return None

    # -- publishing -----------------------------------------------------------------------------

    def publish(self, event: RuntimeEvent) -> None:
        super().publish(event)
        try:
            self._out.put_nowait((event.session_id, event.seq))
        except asyncio.QueueFull:
            self.dropped += 1

    async def _send(self) -> None:
        while True:
            first = await self._out.get()
            latest = {first[0]: first[1]}  # one wake-up per session and batch: its highest seq
            while not self._out.empty():
                sid, seq = self._out.get_nowait()
                latest[sid] = max(seq, latest.get(sid, 0))
            try:
                assert self._redis is not None
                async with self._redis.pipeline(transaction=False) as pipe:
                    for sid, seq in latest.items():
                        pipe.publish(PREFIX + sid, f"{self.replica_id} {seq}")
                    await pipe.execute()
            except (RedisError, OSError) as e:
                self.dropped += len(latest)
                self._say(
                    "send", f"Redis publish failed ({type(e).__name__}); readers on other replicas poll the store"
                )
                await asyncio.sleep(0.5)

    # -- listening ------------------------------------------------------------------------------

    def subscribe(self, session_id: str) -> Subscription:
        sub = super().subscribe(session_id)
        self._changed.set()
        return sub

    async def _listen(self) -> None:
        while True:
            assert self._redis is not None
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                await self._follow(pubsub)
            except (RedisError, OSError) as e:
                self.listening = False
                self._say("listen", f"Redis pub/sub lost ({type(e).__name__}); readers poll the store until it is back")
                await asyncio.sleep(0.5)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()

    async def _follow(self, pubsub: Any) -> None:
        subscribed: set[str] = set()
        await self._redis.ping()  # type: ignore[union-attr]  # fail fast while Redis is down
        if not self.listening:
            log.info("Redis pub/sub connected: SSE readers are woken across replicas")
        self.listening = True
        while True:
            wanted = set(self.subscribers)
            if wanted - subscribed:
                await pubsub.subscribe(*(PREFIX + s for s in wanted - subscribed))
            if subscribed - wanted:
                await pubsub.unsubscribe(*(PREFIX + s for s in subscribed - wanted))
            subscribed = wanted
            if not subscribed:
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 1.0)
                continue
            message = await pubsub.get_message(timeout=LISTEN_S)
            if message is not None and message.get("type") == "message":
                self._deliver(str(message["channel"]), str(message["data"]))

    def _deliver(self, channel: str, data: str) -> None:
        replica, _, seq = data.rpartition(" ")
        if replica == self.replica_id or not seq.isdigit():
            return  # our own: the readers here were woken when it was published
        self.wake(channel.removeprefix(PREFIX), int(seq))

    def _say(self, what: str, message: str) -> None:
        """Log an outage once per 30 s, not once per wake-up."""
        now = time.monotonic()
        if now - self._said.get(what, 0.0) > 30.0:
            self._said[what] = now
            log.warning(message)
