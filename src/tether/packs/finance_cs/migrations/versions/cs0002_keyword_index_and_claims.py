"""The keyword index (cs_indexed_session, cs_session_keyword) and the job's claim token.

Revision ID: cs0002
Revises: cs0001
Create Date: 2026-12-02

The index holds each conversation's kept tokens (customer message, segmented once) beside the
columns the analysis filters on, so the analysis aggregates in the database. ``claim_token`` on
``cs_analysis_job`` names the worker that holds a job: its writes are conditional on it.
Like cs0001, what exists already (made by ``create_all``) is adopted. Frozen: never imports state.py.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "cs0002"
down_revision = "cs0001"
branch_labels = None
depends_on = None

KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
KEYWORD = sa.String(255).with_variant(mysql.VARCHAR(255, collation="utf8mb4_bin"), "mysql", "mariadb")


def _filtered() -> list[sa.Column[Any]]:
    return [
        sa.Column("occurred_at", sa.DateTime, nullable=False),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("business_line", sa.String(32), nullable=False),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("customer_tier", sa.String(16), nullable=False),
    ]


def _indexes(table: str) -> None:
    existing = {ix["name"] for ix in sa.inspect(op.get_bind()).get_indexes(table)}
    for name, columns in (
        (f"ix_{table}_line_time", ["business_line", "occurred_at"]),
        (f"ix_{table}_time", ["occurred_at"]),
    ):
        if name not in existing:
            op.create_index(name, table, columns)


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if not inspector.has_table("cs_indexed_session"):
        op.create_table(
            "cs_indexed_session",
            sa.Column("conversation_id", sa.Integer, primary_key=True, autoincrement=False),
            *_filtered(),
            sa.Column("quote_fit", sa.SmallInteger, nullable=False),
            **KW,
        )
    if not inspector.has_table("cs_session_keyword"):
        op.create_table(
            "cs_session_keyword",
            sa.Column("conversation_id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("keyword", KEYWORD, primary_key=True),
            *_filtered(),
            **KW,
        )
    _indexes("cs_indexed_session")
    _indexes("cs_session_keyword")
    if "claim_token" not in {c["name"] for c in inspector.get_columns("cs_analysis_job")}:
        op.add_column("cs_analysis_job", sa.Column("claim_token", sa.String(32), nullable=True))


def downgrade() -> None:
    op.drop_column("cs_analysis_job", "claim_token")
    op.drop_table("cs_session_keyword")
    op.drop_table("cs_indexed_session")
