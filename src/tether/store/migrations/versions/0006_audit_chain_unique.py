"""The audit chain stays linear across replicas: ``audit_log.prev_hash`` is unique.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

Each append reads the chain's tail and inserts a row whose ``prev_hash`` is the tail's hash. One
process serialises its own appends; two replicas appending at once would both link to the same
tail and fork the chain. With ``prev_hash`` unique the second insert is refused, and the append
reads the new tail and tries again (``store/audit.py``). Additive: a linear chain already has
unique ``prev_hash`` values.

Frozen on purpose: a revision never imports tables.py.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ux_audit_log_prev_hash", "audit_log", ["prev_hash"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_audit_log_prev_hash", table_name="audit_log")
