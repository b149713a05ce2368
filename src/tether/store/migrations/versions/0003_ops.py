"""The op queue: write proposals (drafts) and their confirmation, execution and outcome.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

Frozen on purpose: a revision never imports tables.py.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
BODY = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "op_queue",
        sa.Column("op_id", sa.String(64), primary_key=True),
        sa.Column("owner_user", sa.String(128), nullable=False),
        sa.Column("owner_tenant", sa.String(128), nullable=False),
        sa.Column("brand", sa.String(64), nullable=True),
        sa.Column("subsidiary", sa.String(64), nullable=True),
        sa.Column("session_id", sa.String(64), nullable=True),
        sa.Column("tool_call_id", sa.String(128), nullable=True),
        sa.Column("interaction_id", sa.String(64), nullable=True),
        sa.Column("executor", sa.String(64), nullable=False),
        sa.Column("op_type", sa.String(16), nullable=False),
        sa.Column("form_id", sa.String(64), nullable=False),
        sa.Column("form_name", sa.String(128), nullable=True),
        sa.Column("module", sa.String(64), nullable=True),
        sa.Column("target_table", sa.String(128), nullable=True),
        sa.Column("target_id", sa.String(128), nullable=True),
        sa.Column("payload", BODY, nullable=False),
        sa.Column("source_ref", BODY, nullable=True),
        sa.Column("diff", BODY, nullable=False),
        sa.Column("summary", sa.Text, nullable=True),
        sa.Column("base_version", sa.String(64), nullable=True),
        sa.Column("auto_execute", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result_bill_id", sa.String(128), nullable=True),
        sa.Column("result_bill_no", sa.String(64), nullable=True),
        sa.Column("link", sa.String(512), nullable=True),
        sa.Column("message", sa.Text, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease_until", sa.Double, nullable=True),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("confirmed_at", sa.Double, nullable=True),
        sa.Column("executed_at", sa.Double, nullable=True),
        sa.Column("expire_at", sa.Double, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        **KW,
    )
    op.create_index("ix_op_queue_owner_created", "op_queue", ["owner_tenant", "owner_user", "created_at"])
    op.create_index("ix_op_queue_status_expire", "op_queue", ["status", "expire_at"])
    op.create_index("ix_op_queue_session", "op_queue", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_op_queue_session", table_name="op_queue")
    op.drop_index("ix_op_queue_status_expire", table_name="op_queue")
    op.drop_index("ix_op_queue_owner_created", table_name="op_queue")
    op.drop_table("op_queue")
