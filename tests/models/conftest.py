"""Fixtures for the model adapter tests: a running fake endpoint per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .chat_server import ChatServer


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
