"""Database URLs as SQLAlchemy's asyncio docs spell them run on the drivers tether ships."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import sqlalchemy as sa

from tether.errors import ConfigError
from tether.store import database
from tether.store.database import normalize_url
from tether.store.migrate import upgrade

ASYNC = {
    "sqlite+aiosqlite": "sqlite",
    "postgresql+asyncpg": "postgresql+psycopg",
    "mysql+aiomysql": "mysql+pymysql",
    "mysql+asyncmy": "mysql+pymysql",
}


def _async_spelling(url: str) -> str:
    u = sa.make_url(url)
    return str(
        u.set(
            drivername={"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}.get(
                u.get_backend_name(), "mysql+asyncmy"
            )
        )
    ).replace("***", u.password or "")


@pytest.mark.parametrize(("given", "used"), ASYNC.items())
def test_async_driver_urls_map_to_the_shipped_drivers(
    given: str, used: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database._say_mapped.cache_clear()
    where = f"/{tmp_path / 'x.db'}" if given.startswith("sqlite") else "u:pw@db.example:1234/app"
    caplog.set_level(logging.INFO, logger="tether.store")
    for _ in range(3):  # three engines on one URL: still one line
        u = normalize_url(f"{given}://{where}")
    assert u.drivername == used
    lines = [r.getMessage() for r in caplog.records if r.name == "tether.store"]
    assert len(lines) == 1 and given in lines[0] and used in lines[0], lines
    if used == "mysql+pymysql":
        assert u.query["charset"] == "utf8mb4"
    if not given.startswith("sqlite"):
        assert (u.username, u.password, u.host, u.port, u.database) == ("u", "pw", "db.example", 1234, "app")


def test_asyncpg_ssl_option_becomes_sslmode() -> None:
    u = normalize_url("postgresql+asyncpg://u@h/db?ssl=require")
    assert dict(u.query) == {"sslmode": "require"}


@pytest.mark.parametrize("url", ["postgresql+pg8000://u@h/db", "mysql+mysqldb://u@h/db", "oracle+oracledb://u@h/db"])
def test_other_drivers_keep_the_clear_error(url: str) -> None:
    with pytest.raises(ConfigError, match="unsupported database URL scheme"):
        normalize_url(url)


def test_migrations_run_on_the_async_spelling(db_url: str) -> None:
    """What start-up does (migrate the store) on each real database, given the async spelling."""
    url = _async_spelling(db_url)
    assert "+aiosqlite" in url or "+asyncpg" in url or "+asyncmy" in url
    upgrade(url)
    engine = sa.create_engine(db_url)
    try:
        assert sa.inspect(engine).has_table("agent_session")
    finally:
        engine.dispose()
