"""Alembic environment of the ERP pack's own tables (``erp_question_sql``, ``erp_sql_error``):
tether runs it on tether's database with version table ``erp_alembic_version``."""

from __future__ import annotations

from tether.pack import alembic_env
from tether.packs.erp.state import metadata

alembic_env(metadata)
