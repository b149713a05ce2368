"""The audit chain's head: ``audit_head`` holds the number of rows and the last row's hash.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

The hash chain shows a row edited, moved or deleted from its middle, but not rows deleted from its
end, nor all of them: what is left is still a valid chain. Every append now moves the head in the
same transaction (``store/audit.py``), and ``verify`` compares the walk's end with it. Additive:
the head starts from the log as it stands.

Frozen on purpose: a revision never imports tables.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

GENESIS = "0" * 64


def upgrade() -> None:
    op.create_table(
        "audit_head",
        sa.Column("name", sa.String(16), primary_key=True),
        sa.Column("entries", sa.BigInteger, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        mysql_engine="InnoDB",
        mysql_charset="utf8mb4",
    )
    conn = op.get_bind()
    entries = conn.execute(sa.text("SELECT COUNT(*) FROM audit_log")).scalar_one()
    tail = conn.execute(sa.text("SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1")).scalar()
    conn.execute(
        sa.text("INSERT INTO audit_head (name, entries, hash) VALUES ('chain', :n, :h)"),
        {"n": int(entries), "h": tail or GENESIS},
    )


def downgrade() -> None:
    op.drop_table("audit_head")
