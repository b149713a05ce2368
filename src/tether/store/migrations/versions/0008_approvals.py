"""Approvals of ops an approval policy matched: ``op_approval_request`` and ``op_approval``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05

Additive. Frozen on purpose: a revision never imports tables.py.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
BODY = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
KEY = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "op_approval_request",
        sa.Column("op_id", sa.String(64), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("rules", BODY, nullable=False),
        sa.Column("needs", BODY, nullable=False),
        sa.Column("policy_version", sa.String(64), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("requested_at", sa.Double, nullable=False),
        sa.Column("expire_at", sa.Double, nullable=False),
        sa.Column("decided_at", sa.Double, nullable=True),
        sa.Column("decided_by", sa.String(128), nullable=True),
        sa.Column("comment", sa.Text, nullable=True),
        sa.Column("void_reason", sa.Text, nullable=True),
        sa.Index("ix_op_approval_request_tenant", "tenant", "status", "requested_at"),
        **KW,
    )
    op.create_table(
        "op_approval",
        sa.Column("id", KEY, primary_key=True, autoincrement=True),
        sa.Column("op_id", sa.String(64), nullable=False),
        sa.Column("approver_user", sa.String(128), nullable=False),
        sa.Column("approver_tenant", sa.String(128), nullable=False),
        sa.Column("grants", BODY, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("policy_version", sa.String(64), nullable=False),
        sa.Column("at", sa.Double, nullable=False),
        sa.Column("void_reason", sa.Text, nullable=True),
        sa.UniqueConstraint("op_id", "approver_user", "approver_tenant", "fingerprint", name="ux_op_approval_once"),
        **KW,
    )


def downgrade() -> None:
    op.drop_table("op_approval")
    op.drop_table("op_approval_request")
