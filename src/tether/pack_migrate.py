"""A pack's own schema migrations: its Alembic history, run against the pack's own database.

A pack whose tables are its own (not a business system's) ships an Alembic folder — ``env.py``
calling ``alembic_env(metadata)``, and ``versions/`` — and names it in ``Pack.migrations``.
tether runs it on start-up, after its own migrations, and in ``tether db upgrade``; the pack's
database URL may differ from tether's, and each history has its own version table, so several
histories can share one database. The Alembic ``Config`` is built in code (no alembic.ini).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tether.errors import ConfigError
from tether.store.database import create_read_engine, normalize_url


@dataclass(frozen=True)
class PackMigrations:
    """Where a pack's Alembic history is and what it migrates.

    ``script_location``: the folder holding ``env.py`` and ``versions/``. ``url``: the pack's
    database (the pack's own setting, not ``TETHER_DATABASE_URL``). ``version_table``: the table
    that records the pack's revision, distinct from tether's ``tether_alembic_version`` and
    every other pack's. ``head``: the newest revision; when the database is already there,
    Alembic is not even imported (start-up stays fast). A test should keep it equal to the
    history's real head.
    """

    script_location: Path
    url: str
    version_table: str
    head: str | None = None


def _stored(conn: sa.Connection, migrations: PackMigrations) -> set[str]:
    if not sa.inspect(conn).has_table(migrations.version_table):
        return set()
    return {row[0] for row in conn.execute(sa.text(f"SELECT version_num FROM {migrations.version_table}"))}


def at_head(conn: sa.Connection, migrations: PackMigrations) -> bool:
    return migrations.head is not None and _stored(conn, migrations) == {migrations.head}


def _config(migrations: PackMigrations, connection: sa.Connection | None) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations.script_location))
    cfg.attributes["connection"] = connection
    cfg.attributes["version_table"] = migrations.version_table
    return cfg


def script_head(migrations: PackMigrations) -> str | None:
    """The newest revision of the history on disk (imports Alembic)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config(migrations, None)).get_current_head()


def upgrade_pack(migrations: PackMigrations, revision: str = "head") -> bool:
    """Migrate the pack's database to ``revision`` (blocking). True when a migration ran."""
    engine = create_read_engine(normalize_url(migrations.url))
    try:
        with engine.begin() as conn:
            if revision == "head" and at_head(conn, migrations):
                return False
            from alembic import command

            config = _config(migrations, conn)
            _refuse_unknown(_stored(conn, migrations), config, migrations)
            command.upgrade(config, revision)
            return True
    finally:
        engine.dispose()


def _refuse_unknown(stored: set[str], config: Any, migrations: PackMigrations) -> None:
    """``ConfigError`` when the database is at a revision this history does not hold: a newer
    version of the pack migrated it, and this code would write rows that schema does not expect.
    (Checked only off the fast path: a database at ``head`` never loads the history.)"""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(config)
    known = {r.revision for r in script.walk_revisions()}
    unknown = sorted(stored - known)
    if unknown:
        raise ConfigError(
            f"the database of the pack migrations in {migrations.script_location} is at revision "
            f"{', '.join(unknown)}, which they do not know (their head is {script.get_current_head()}): a newer "
            "version of the pack migrated it. Run that version, or restore the backup taken before it."
        )


def check_pack(migrations: PackMigrations) -> None:
    """Refuse (``ConfigError``) a pack database a newer version of the pack migrated, before a
    server starts; a database at the head costs one query."""
    engine = create_read_engine(normalize_url(migrations.url))
    try:
        with engine.connect() as conn:
            stored = _stored(conn, migrations)
    finally:
        engine.dispose()
    if stored and stored != {migrations.head}:
        _refuse_unknown(stored, _config(migrations, None), migrations)


def alembic_env(metadata: sa.MetaData | None = None) -> None:
    """The body of a pack's ``env.py``: run the revisions on the connection tether hands over.

    ``metadata`` is the pack's tables (for comparisons); only online migrations on tether's
    connection are supported.
    """
    from alembic import context

    config = context.config
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("pack migrations run through tether: `tether db upgrade`, or start-up")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=config.attributes["version_table"],
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
