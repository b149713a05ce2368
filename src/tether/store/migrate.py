"""Schema migrations, run programmatically: ``upgrade(url)`` brings a database to the latest revision.

The Alembic ``Config`` is built in code with ``script_location`` inside this package, so it works
from an installed wheel and from any working directory; no alembic.ini is needed. The version
table is ``tether_alembic_version`` so packs can keep their own Alembic history in the same
database. This module must never create tables by any other means than the revisions.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from tether.errors import ConfigError
from tether.store.database import create_read_engine, normalize_url

if TYPE_CHECKING:
    from alembic.config import Config

VERSION_TABLE = "tether_alembic_version"
SCRIPT_LOCATION = str(Path(__file__).resolve().parent / "migrations")
HEAD = "0009"  # the newest revision in migrations/versions (a test keeps the two equal)


@cache
def known_revisions() -> frozenset[str]:
    """The revisions this tether ships (the ``NNNN_`` prefixes in migrations/versions)."""
    return frozenset(f.name[:4] for f in (Path(SCRIPT_LOCATION) / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def at_head(conn: sa.Connection) -> bool:
    """True when the database is already at ``HEAD``: start-up then skips Alembic (seconds of imports).
    ``ConfigError`` when a newer tether migrated it: this code would write rows that schema does not
    expect (and miss what it keeps, such as the audit head), so it refuses to run rather than guess."""
    if not sa.inspect(conn).has_table(VERSION_TABLE):
        return False
    versions = {row[0] for row in conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}"))}
    unknown = sorted(versions - known_revisions())
    if unknown:
        raise ConfigError(
            f"the database is at schema revision {', '.join(unknown)}, which this tether does not know (it knows "
            f"up to {HEAD}): a newer tether migrated it. Run that version, or restore the backup taken before it."
        )
    return versions == {HEAD}


def check(url: str) -> None:
    """Refuse (``ConfigError``) a database a newer tether migrated, or one that cannot be reached,
    before a server starts (one query)."""
    u = normalize_url(url)
    engine = create_read_engine(u)
    try:
        with engine.connect() as conn:
            at_head(conn)
    except sa.exc.DBAPIError as e:
        where = u.render_as_string(hide_password=True)
        raise ConfigError(f"the database at {where} cannot be used: {e.orig}") from e
    finally:
        engine.dispose()


def alembic_config(connection: sa.Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    cfg.attributes["connection"] = connection
    cfg.attributes["version_table"] = VERSION_TABLE
    return cfg


def upgrade_engine(engine: sa.Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` (blocking)."""
    with engine.begin() as conn:
        if revision == "head" and at_head(conn):
            return
        from alembic import command

        command.upgrade(alembic_config(conn), revision)


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` to ``revision`` (blocking; for ``tether db upgrade``)."""
    engine = create_read_engine(normalize_url(url))
    try:
        upgrade_engine(engine, revision)
    finally:
        engine.dispose()
