"""``GET /api/auth/methods`` answers from the configured identity providers: the chat page offers
a password login only where a provider has one (the ERP pack's), and a bearer token always."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tether.app.main import create_app
from tether.settings import create_settings

ROOT = Path(__file__).resolve().parents[2]


def methods(tmp_path: Path, packs: str) -> list[dict[str, str]]:
    settings = create_settings(database_url=f"sqlite:///{tmp_path / 'tether.db'}", packs=packs)
    app = create_app(settings)  # the route reads the identity chain only: no start-up needed
    r = TestClient(app).get("/api/auth/methods")  # no bearer token: asked before any login
    assert r.status_code == 200, r.text
    found: list[dict[str, str]] = r.json()["methods"]
    return found


def test_without_a_password_provider_only_a_token_is_offered(tmp_path: Path) -> None:
    assert methods(tmp_path, str(ROOT / "examples")) == [{"kind": "token"}]


def test_the_erp_pack_offers_its_password_login(tmp_path: Path) -> None:
    assert methods(tmp_path, "tether.packs.erp.pack") == [
        {"kind": "password", "provider": "erp", "url": "/api/auth/login"},
        {"kind": "token"},
    ]
