"""The abuse limits' counters, for replicas without Redis: ``abuse_counter`` and ``abuse_window``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05

Additive. Frozen on purpose: a revision never imports tables.py. Used on PostgreSQL and MariaDB
(``tether.abuse.sql_storage``); created on SQLite too, where the embedded server counts in memory.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
BODY = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "abuse_counter",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("namespace", sa.String(128), nullable=False),
        sa.Column("rate_key", sa.Text, nullable=False),
        sa.Column("hits", sa.BigInteger, nullable=False),
        sa.Column("expire_at", sa.Double, nullable=False),
        **KW,
    )
    op.create_table(
        "abuse_window",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("namespace", sa.String(128), nullable=False),
        sa.Column("rate_key", sa.Text, nullable=False),
        sa.Column("entries", BODY, nullable=False),
        sa.Column("expire_at", sa.Double, nullable=False),
        **KW,
    )


def downgrade() -> None:
    op.drop_table("abuse_window")
    op.drop_table("abuse_counter")
