"""Initial schema: sessions, transcript messages, events, async jobs, DSL snapshots and their log.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

Frozen on purpose: a revision never imports tables.py, which describes only the latest schema.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ID = 64
NAME = 128
KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
CLUSTERED: dict[str, Any] = {**KW, "sqlite_with_rowid": False}


def _body() -> sa.types.TypeEngine[str]:
    return sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "agent_session",
        sa.Column("id", sa.String(ID), primary_key=True),
        sa.Column("owner_user", sa.String(NAME), nullable=False),
        sa.Column("owner_tenant", sa.String(NAME), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("query", _body(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("lease_until", sa.Double, nullable=True),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
        sa.Column("state", _body(), nullable=False),
        sa.Column("steps", _body(), nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        **KW,
    )
    op.create_index("ix_agent_session_owner_updated", "agent_session", ["owner_tenant", "owner_user", "updated_at"])
    op.create_index("ix_agent_session_status_lease", "agent_session", ["status", "lease_until"])

    op.create_table(
        "agent_message",
        sa.Column("session_id", sa.String(ID), primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("body", _body(), nullable=False),
        **CLUSTERED,
    )
    op.create_table(
        "agent_event",
        sa.Column("session_id", sa.String(ID), primary_key=True),
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("turn_id", sa.String(ID), nullable=True),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("ts", sa.Double, nullable=False),
        sa.Column("data", _body(), nullable=False),
        **CLUSTERED,
    )
    op.create_table(
        "async_job",
        sa.Column("job_id", sa.String(NAME), primary_key=True),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("tool_call_id", sa.String(NAME), nullable=False),
        sa.Column("tool_id", sa.String(NAME), nullable=False),
        sa.Column("token_hash", sa.String(NAME), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result", _body(), nullable=True),
        sa.Column("error", _body(), nullable=True),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("deadline", sa.Double, nullable=False),
        sa.Column("applied", sa.Boolean, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        **KW,
    )
    op.create_index("ix_async_job_session_status", "async_job", ["session_id", "status"])
    op.create_index("ix_async_job_status_deadline", "async_job", ["status", "deadline"])

    op.create_table(
        "dsl_instance",
        sa.Column("dsl_id", sa.String(ID), primary_key=True),
        sa.Column("owner_user", sa.String(NAME), nullable=False),
        sa.Column("owner_tenant", sa.String(NAME), nullable=False),
        sa.Column("source_session_id", sa.String(ID), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("params", _body(), nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        **KW,
    )
    op.create_index("ix_dsl_instance_owner", "dsl_instance", ["owner_tenant", "owner_user", "created_at"])
    op.create_table(
        "dsl_step",
        sa.Column("dsl_id", sa.String(ID), primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("step_id", sa.String(ID), nullable=False),
        sa.Column("tool_id", sa.String(NAME), nullable=False),
        sa.Column("args", _body(), nullable=False),
        sa.Column("schema_hash", sa.String(NAME), nullable=False),
        **CLUSTERED,
    )
    op.create_table(
        "dsl_execution_log",
        sa.Column("execution_id", sa.String(ID), primary_key=True),
        sa.Column("dsl_id", sa.String(ID), nullable=False),
        sa.Column("params", _body(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("steps", _body(), nullable=False),
        sa.Column("error", _body(), nullable=True),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        **KW,
    )
    op.create_index("ix_dsl_execution_log_dsl", "dsl_execution_log", ["dsl_id", "created_at"])


def downgrade() -> None:
    for index, table in (
        ("ix_dsl_execution_log_dsl", "dsl_execution_log"),
        ("ix_dsl_instance_owner", "dsl_instance"),
        ("ix_async_job_status_deadline", "async_job"),
        ("ix_async_job_session_status", "async_job"),
        ("ix_agent_session_status_lease", "agent_session"),
        ("ix_agent_session_owner_updated", "agent_session"),
    ):
        op.drop_index(index, table_name=table)
    for table in (
        "dsl_execution_log", "dsl_step", "dsl_instance", "async_job", "agent_event", "agent_message",
        "agent_session",
    ):  # fmt: skip
        op.drop_table(table)
