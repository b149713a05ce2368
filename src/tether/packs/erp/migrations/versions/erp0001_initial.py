"""The ERP pack's own tables: the per-brand question → SQL cache and the SQL error history.

Revision ID: erp0001
Revises: (none)
Create Date: 2026-12-02

Frozen on purpose: a revision never imports state.py.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "erp0001"
down_revision = None
branch_labels = None
depends_on = None

KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
BODY = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    if not sa.inspect(op.get_bind()).has_table("erp_question_sql"):
        op.create_table(
            "erp_question_sql",
            sa.Column("brands_id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("question_hash", sa.String(64), primary_key=True),
            sa.Column("question", sa.Text, nullable=False),
            sa.Column("sql_text", BODY, nullable=False),
            sa.Column("hits", sa.Integer, nullable=False),
            sa.Column("created_at", sa.Double, nullable=False),
            sa.Column("used_at", sa.Double, nullable=False),
            **KW,
        )
    if not sa.inspect(op.get_bind()).has_table("erp_sql_error"):
        op.create_table(
            "erp_sql_error",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("at", sa.Double, nullable=False),
            sa.Column("brands_id", sa.Integer, nullable=False),
            sa.Column("user_id", sa.String(128), nullable=False),
            sa.Column("session_id", sa.String(64), nullable=False),
            sa.Column("question", sa.Text, nullable=False),
            sa.Column("sql_text", BODY, nullable=False),
            sa.Column("error", sa.Text, nullable=False),
            **KW,
        )


def downgrade() -> None:
    op.drop_table("erp_sql_error")
    op.drop_table("erp_question_sql")
