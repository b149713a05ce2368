"""Alembic environment of the finance pack's own tables (``cs_*``): tether runs it on the pack's
database (``TETHER_FINANCE_DATABASE_URL``) with version table ``finance_cs_alembic_version``."""

from __future__ import annotations

from tether.pack import alembic_env
from tether.packs.finance_cs.state import metadata

alembic_env(metadata)
