"""Fixtures for the SQL sandbox tests: a real database of each kind, seeded with three tenants."""

from __future__ import annotations

import pytest

from tests.sqlguard.sqlguard_support import seed


@pytest.fixture
def seeded_url(db_url: str) -> str:
    """``db_url`` (SQLite, PostgreSQL, MariaDB) with the test schema and rows of three tenants."""
    seed(db_url)
    return db_url
