"""Store fixtures: every behavioural test runs on SQLite, PostgreSQL, MariaDB and in memory.

The SQL variants take a fresh database from the shared fixtures in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tether.store import MemoryStore, SqlStore

from .builders import FakeClock

LEASE = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
        "memory",
    ]
)
async def store(request: pytest.FixtureRequest, clock: FakeClock) -> AsyncIterator[SqlStore | MemoryStore]:
    """An open store of each kind, on a fresh database, with a controllable clock."""
    if request.param == "memory":
        yield MemoryStore(lease_seconds=LEASE, clock=clock)
        return
    url = request.getfixturevalue(f"{request.param}_url")
    sql = SqlStore(url, lease_seconds=LEASE, clock=clock)
    await sql.open()
    try:
        yield sql
    finally:
        await sql.close()
