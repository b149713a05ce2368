"""Core tests run on each real database; one database per backend per module keeps them fast
(sessions are isolated by id, so tests do not see each other's rows)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import DB_KINDS, fresh_database


@pytest.fixture(scope="module", params=DB_KINDS)
def db_url(request, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    yield from fresh_database(request.param, tmp_path_factory.mktemp("core"))
