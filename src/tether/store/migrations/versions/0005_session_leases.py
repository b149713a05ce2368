"""Session leases across replicas: which process holds a session's lease.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

``agent_session.lease_owner`` names the replica (``TETHER_REPLICA_ID``) whose lease ``lease_until``
is: set by every commit of a RUNNING session and by a claim (recovery, a sweep), cleared when the
session leaves RUNNING. Additive: existing rows get NULL (no holder), which every claim treats as
free once ``lease_until`` has passed.

Frozen on purpose: a revision never imports tables.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agent_session", sa.Column("lease_owner", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_session") as batch:
        batch.drop_column("lease_owner")
