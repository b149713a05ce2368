"""``RedisBus`` against a private ``redis-server``: a wake-up crosses replicas, a replica ignores
its own, and a Redis outage costs only wake-ups (publishing never fails, readiness says why)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.bus import Wake
from tether.core.events import RuntimeEvent
from tether.redis_bus import RedisBus

from .cluster import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


def _event(session_id: str, seq: int) -> RuntimeEvent:
    return RuntimeEvent(seq, session_id, "turn-1", "TOOL_EXECUTION_FINISHED", 1.0, {})


async def _get(sub: object, timeout: float = 3.0) -> object:
    return await sub.get(timeout)  # type: ignore[attr-defined]


async def test_a_wake_up_reaches_readers_on_another_replica_and_not_their_own(redis_server: RedisServer) -> None:
    a, b = RedisBus(redis_server.url, "a"), RedisBus(redis_server.url, "b")
    await a.start()
    await b.start()
    try:
        on_b, other_on_b, on_a = b.subscribe("s-1"), b.subscribe("s-2"), a.subscribe("s-1")
        await asyncio.sleep(0.3)  # the listeners subscribe to the sessions their readers follow
        a.publish(_event("s-1", 7))
        assert await _get(on_b) == Wake("s-1", 7)
        local = await _get(on_a)
        assert isinstance(local, RuntimeEvent) and local.seq == 7  # in-process, the event itself
        assert await _get(on_a, 0.5) is None  # and not again through Redis
        assert await _get(other_on_b, 0.5) is None  # another session's reader is not woken
        assert await a.check() is None
    finally:
        await a.stop()
        await b.stop()


async def test_with_redis_down_publishing_goes_on_and_readiness_says_why(redis_server: RedisServer) -> None:
    a = RedisBus(redis_server.url, "a")
    await a.start()
    try:
        sub = a.subscribe("s-1")
        redis_server.kill()
        a.publish(_event("s-1", 1))  # never raises: the local reader is still woken at once
        woken = await _get(sub)
        assert isinstance(woken, RuntimeEvent) and woken.seq == 1
        reason = await a.check()
        assert reason is not None and "Redis is not reachable" in reason
        await asyncio.sleep(0.7)
        assert a.dropped >= 1 and not a.listening
    finally:
        await a.stop()
