"""Bringing an existing demo ERP database up to its schema. ``prepare()`` creates the tables a
database lacks (``create_all``); here it adds the nullable columns a later release gave a table
that already exists (``ai_op_queue.revised_by`` / ``revised_at``), keeping every row.

It never drops, renames or changes a column. A missing column that may not be null cannot be
added to rows that have no value for it: that stops the start and says so.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.schema import CreateColumn

from tether.pack import ConfigError

log = logging.getLogger("tether.erp_demo")


def _if_not_exists(dialect: sa.Dialect) -> str:
    """PostgreSQL and MariaDB skip a column a concurrent start added first; SQLite's transaction
    (``BEGIN IMMEDIATE``) already holds the write lock while the columns are read."""
    if dialect.name == "postgresql" or getattr(dialect, "is_mariadb", False):
        return "IF NOT EXISTS "
    return ""


def add_missing_columns(conn: sa.Connection, metadata: sa.MetaData) -> list[str]:
    """Add each nullable column of ``metadata`` its existing table lacks. -> ``table.column`` added."""
    existing = set(sa.inspect(conn).get_table_names())
    tables = [t for t in metadata.sorted_tables if t.name in existing]
    present = sa.inspect(conn).get_multi_columns(filter_names=[t.name for t in tables])
    names = {table: {c["name"] for c in columns} for (_, table), columns in present.items()}
    added: list[str] = []
    for table in tables:
        for column in table.columns:
            if column.name in names.get(table.name, set()):
                continue
            if not column.nullable:
                raise ConfigError(
                    f"the demo ERP's table {table.name} lacks the column {column.name}, which may not be "
                    "null: it cannot be added to the rows there; recreate the ERP database (tether erp seed)"
                )
            quote = conn.dialect.identifier_preparer.quote
            spec = CreateColumn(column).compile(dialect=conn.dialect)
            conn.exec_driver_sql(f"ALTER TABLE {quote(table.name)} ADD COLUMN {_if_not_exists(conn.dialect)}{spec}")
            added.append(f"{table.name}.{column.name}")
    if added:
        log.info("upgraded the demo ERP's tables: added %s", ", ".join(added))
    return added
