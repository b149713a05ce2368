"""Shared fixtures: real databases (SQLite file, PostgreSQL, MariaDB), each test on a fresh one.

A server that cannot be reached skips its tests with a loud reason; nothing is mocked.
No test may reach a network model: the OpenAI adapter is tested against a local server.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

PG_ADMIN = os.environ.get("TETHER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MARIADB_ADMIN = os.environ.get("TETHER_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306/test")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# kind -> (admin URL, port, CREATE DATABASE suffix, DROP DATABASE suffix, URL query, quote)
_SERVERS = {
    "postgres": (PG_ADMIN, 5432, "", " WITH (FORCE)", "", '"'),
    "mariadb": (MARIADB_ADMIN, 3306, " CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", "", "?charset=utf8mb4", "`"),
}
DB_KINDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mariadb", marks=pytest.mark.mariadb),
]


def _fresh_server_database(kind: str) -> Iterator[str]:
    admin_url, port, create, drop, query, q = _SERVERS[kind]
    if not _port_open(port):
        pytest.skip(f"!!! {kind} is not reachable on 127.0.0.1:{port} — {kind} tests SKIPPED")
    import sqlalchemy as sa

    name = f"tether_t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f"CREATE DATABASE {q}{name}{q}{create}")
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}{query}"
    finally:
        with admin.connect() as c:
            c.exec_driver_sql(f"DROP DATABASE IF EXISTS {q}{name}{q}{drop}")
        admin.dispose()


def fresh_database(kind: str, folder: Path) -> Generator[str, None, None]:
    """A fresh, empty database of ``kind`` (a SQLite file in ``folder``), dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'tether.db'}"
    else:
        yield from _fresh_server_database(kind)


@pytest.fixture
def sqlite_url(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return f"sqlite:///{tmp_path / 'tether.db'}"


@pytest.fixture
def postgres_url(tmp_path: Path) -> Iterator[str]:
    yield from fresh_database("postgres", tmp_path)


@pytest.fixture
def mariadb_url(tmp_path: Path) -> Iterator[str]:
    yield from fresh_database("mariadb", tmp_path)


@pytest.fixture(params=DB_KINDS)
def db_url(request, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A fresh, empty database of each supported kind: the same test runs on all three."""
    yield from fresh_database(request.param, tmp_path)


@pytest.fixture(autouse=True)
def _no_network_models(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for var in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "QWEN_API_KEY", "TETHER_MODEL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
