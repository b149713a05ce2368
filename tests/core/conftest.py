"""Core tests run on each real database; one database per backend per module keeps them fast
(sessions are isolated by id, so tests do not see each other's rows)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import _fresh_mariadb, _fresh_postgres


@pytest.fixture(
    scope="module",
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ],
)
def db_url(request, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('core') / 'core.db'}"
    elif request.param == "postgres":
        yield from _fresh_postgres()
    else:
        yield from _fresh_mariadb()
