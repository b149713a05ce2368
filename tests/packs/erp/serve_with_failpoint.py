"""``python serve_with_failpoint.py POINT serve …``: ``tether serve`` whose op service kills its
own process (SIGKILL: no shutdown, no final commit) when it reaches the failpoint ``POINT`` —
the crash-safety tests' seam (``OpService(failpoint=…)``); tether itself has no such branch."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from fastapi import FastAPI

import tether.app.main as app_main
from tether.cli import main
from tether.core.ports import ChatModel
from tether.pack import Pack
from tether.settings import Settings


def kill_at(point: str) -> Any:
    def failpoint(name: str) -> None:
        if name == point:
            os.kill(os.getpid(), signal.SIGKILL)

    return failpoint


def serve(point: str, argv: list[str]) -> int:
    build = app_main.create_app

    def create_app(
        settings: Settings | None = None,
        *,
        model: ChatModel | None = None,
        packs: list[Pack] | None = None,
    ) -> FastAPI:
        app = build(settings, model=model, packs=packs)
        app.state.services.ops.failpoint = kill_at(point)
        return app

    app_main.create_app = create_app  # tether serve builds its app through this name
    return main(argv)


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1], sys.argv[2:]))
