"""Packs: plug-ins that contribute tools, skills, planner extractors, start-up work and routes.

A pack is a module (dotted name) or a folder holding ``pack.py`` with ``def pack(env) -> Pack``.
The core knows no pack by name; settings list which to load.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.core.tools import Tool
from tether.errors import ConfigError
from tether.http_tools import LocalHandler
from tether.models.planner import Extractor


@dataclass
class Pack:
    name: str
    tools: list[Tool] = field(default_factory=list)
    skill_dirs: list[Path] = field(default_factory=list)
    extractors: list[Extractor] = field(default_factory=list)
    local_handlers: dict[str, LocalHandler] = field(default_factory=dict)
    startup: Callable[[Any], Awaitable[None]] | None = None
    shutdown: Callable[[Any], Awaitable[None]] | None = None
    routers: list[Any] = field(default_factory=list)  # FastAPI routers, mounted by the app


def _module(ref: str) -> Any:
    path = Path(ref)
    if path.is_dir() and (path / "pack.py").exists():
        name = f"tether_pack_{path.resolve().name}"
        spec = importlib.util.spec_from_file_location(name, path / "pack.py")
        if spec is None or spec.loader is None:
            raise ConfigError(f"cannot load pack from {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(ref)
    except ImportError as exc:
        raise ConfigError(f"pack {ref!r} is neither a folder with pack.py nor an importable module: {exc}") from None


def load_packs(refs: list[str], env: Any) -> list[Pack]:
    packs = []
    for ref in refs:
        factory = getattr(_module(ref), "pack", None)
        if not callable(factory):
            raise ConfigError(f"pack {ref!r} has no pack(env) function")
        packs.append(factory(env))
    return packs
