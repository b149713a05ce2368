"""Shared fixtures: real databases (SQLite file, PostgreSQL, MariaDB), each test on a fresh one.

A server that cannot be reached skips its tests with a loud reason; nothing is mocked.
No test may reach a network model: the OpenAI adapter is tested against a local server.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator

import pytest

PG_ADMIN = os.environ.get("TETHER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MARIADB_ADMIN = os.environ.get("TETHER_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306/test")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _fresh_postgres() -> Iterator[str]:
    if not _port_open(5432):
        pytest.skip("!!! PostgreSQL is not reachable on 127.0.0.1:5432 — PostgreSQL tests SKIPPED")
    import sqlalchemy as sa

    name = f"tether_t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as c:
            c.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def _fresh_mariadb() -> Iterator[str]:
    if not _port_open(3306):
        pytest.skip("!!! MariaDB is not reachable on 127.0.0.1:3306 — MariaDB tests SKIPPED")
    import sqlalchemy as sa

    name = f"tether_t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(MARIADB_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    try:
        yield MARIADB_ADMIN.rsplit("/", 1)[0] + f"/{name}?charset=utf8mb4"
    finally:
        with admin.connect() as c:
            c.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        admin.dispose()


@pytest.fixture
def sqlite_url(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return f"sqlite:///{tmp_path / 'tether.db'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    yield from _fresh_postgres()


@pytest.fixture
def mariadb_url() -> Iterator[str]:
    yield from _fresh_mariadb()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def db_url(request, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A fresh, empty database of each supported kind: the same test runs on all three."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tether.db'}"
    elif request.param == "postgres":
        yield from _fresh_postgres()
    else:
        yield from _fresh_mariadb()


@pytest.fixture(autouse=True)
def _no_network_models(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for var in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "QWEN_API_KEY", "TETHER_MODEL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
