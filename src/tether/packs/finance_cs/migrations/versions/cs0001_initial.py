"""The finance pack's own tables: result handles, the analysis job queue, analyses and reports.

Revision ID: cs0001
Revises: (none)
Create Date: 2026-12-09

A table that already exists is left as it is: deployments from before this history made the
same tables with ``create_all``, and this revision adopts them. Frozen on purpose: a revision
never imports state.py.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "cs0001"
down_revision = None
branch_labels = None
depends_on = None

KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
BODY = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def _owned(name: str, *columns: sa.Column[Any]) -> None:
    if sa.inspect(op.get_bind()).has_table(name):
        return
    op.create_table(
        name,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("owner_user", sa.String(128), nullable=False),
        sa.Column("owner_tenant", sa.String(128), nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        *columns,
        **KW,
    )


def upgrade() -> None:
    _owned(
        "cs_result_handle",
        sa.Column("filters", sa.Text, nullable=False),
        sa.Column("ids", BODY, nullable=False),
        sa.Column("expires_at", sa.Double, nullable=False),
    )
    _owned(
        "cs_analysis_job",
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("params", sa.Text, nullable=False),
        sa.Column("callback_url", sa.String(512), nullable=False),
        sa.Column("callback_token", sa.String(128), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease_until", sa.Double, nullable=True),
        sa.Column("deadline", sa.Double, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("outcome", BODY, nullable=True),
    )
    bind = op.get_bind()
    if not any(ix["name"] == "ix_cs_analysis_job_status" for ix in sa.inspect(bind).get_indexes("cs_analysis_job")):
        op.create_index("ix_cs_analysis_job_status", "cs_analysis_job", ["status"])
    _owned("cs_analysis", sa.Column("scope", sa.Text, nullable=False), sa.Column("result", BODY, nullable=False))
    _owned(
        "cs_report",
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("markdown", BODY, nullable=False),
        sa.Column("html", BODY, nullable=False),
    )


def downgrade() -> None:
    for name in ("cs_report", "cs_analysis", "cs_analysis_job", "cs_result_handle"):
        op.drop_table(name)
