"""Alembic environment for tether's store: runs on the connection ``migrate.py`` hands over.

Only online migrations on a given connection are supported; it never reads alembic.ini or
opens connections of its own.
"""

from __future__ import annotations

from alembic import context

from tether.store.tables import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("tether migrations run through tether.store.migrate.upgrade(url)")

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=config.attributes.get("version_table", "tether_alembic_version"),
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
