"""What the app's startup does to the process as a whole."""

from __future__ import annotations

import gc
from pathlib import Path

from fastapi.testclient import TestClient

from tether.app.main import create_app
from tether.settings import create_settings


def test_what_startup_built_is_out_of_the_collectors_reach_while_the_app_serves(tmp_path: Path) -> None:
    """A full collection walks only what requests left, not the ~80,000 objects of the modules,
    packs and pools (a pause of tens of milliseconds); a stopped app gives them back."""
    settings = create_settings(database_url=f"sqlite:///{tmp_path / 'tether.db'}", packs="")
    app = create_app(settings)
    assert gc.get_freeze_count() == 0
    with TestClient(app) as client:
        frozen = gc.get_freeze_count()
        assert frozen > 10_000, frozen
        assert client.get("/api/health").status_code == 200
        gc.collect()
        assert len(gc.get_objects(generation=2)) < frozen  # a full collection's share is the rest
    assert gc.get_freeze_count() == 0
