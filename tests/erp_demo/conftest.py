"""Fixtures for the demo ERP: a seeded ERP on each database (SQLite file, PostgreSQL, MariaDB),
driven in-process through ``TestClient``.

- ``shared_erp``: one seeded ERP per database kind for a whole module — for tests that only read.
- ``erp``: a fresh seeded ERP per test (``db_url``) — for tests that write.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import DB_KINDS, fresh_database
from tether.erp_demo import ErpDemo, ErpSettings, facts

SCALE = 0.1


@pytest.fixture(autouse=True)
def _clean_erp_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("TETHER_ERP_"):
            monkeypatch.delenv(key)


class Erp:
    """An ERP under test: the object, its client, and logins by user name."""

    def __init__(self, demo: ErpDemo) -> None:
        self.demo = demo
        self.client = TestClient(demo.asgi)
        self._tokens: dict[str, str] = {}

    def token(self, user: str) -> str:
        if user not in self._tokens:
            r = self.client.post("/login", json={"username": user, "password": facts.PASSWORD})
            assert r.status_code == 200, r.text
            self._tokens[user] = r.json()["token"]
        return self._tokens[user]

    def h(self, user: str) -> dict[str, str]:
        return {"Authorization": self.token(user)}

    def read(self, user: str, form_id: str, **params: Any) -> dict[str, Any]:
        r = self.client.post(
            "/getBusinessDataByFormcustomId", json={"sFormId": form_id, **params}, headers=self.h(user)
        )
        assert r.status_code == 200, r.text
        dataset: dict[str, Any] = r.json()["dataset"]
        return dataset

    def all_rows(self, user: str, form_id: str, **params: Any) -> list[dict[str, Any]]:
        return list(self.read(user, form_id, pageSize=500, **params)["rows"])

    def post(self, user: str, path: str, body: Any) -> Any:
        return self.client.post(path, json=body, headers=self.h(user))

    def get(self, user: str, path: str) -> Any:
        return self.client.get(path, headers=self.h(user))


def _make(url: str) -> ErpDemo:
    demo = ErpDemo(ErpSettings(database_url=url, seed_scale=SCALE))
    demo.prepare()
    return demo


@pytest.fixture(scope="module", params=DB_KINDS)
def shared_erp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Erp]:
    gen = fresh_database(request.param, tmp_path_factory.mktemp("erp"))
    url = next(gen)
    demo = _make(url)
    try:
        yield Erp(demo)
    finally:
        demo.close()
        gen.close()


@pytest.fixture
def erp(db_url: str) -> Iterator[Erp]:
    demo = _make(db_url)
    try:
        yield Erp(demo)
    finally:
        demo.close()
