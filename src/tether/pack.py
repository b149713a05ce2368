"""The pack surface: everything a pack may use of tether, and how packs are loaded.

A pack is a module (dotted name) or a folder holding ``pack.py`` with ``def pack(env) -> Pack``.
It contributes tools, skills, planner extractors, HTTP routes, identity providers, start-up and
shutdown work, and its own database. **A pack imports nothing of tether's but this module** (a
test holds every shipped pack to that), so the core can change behind it. The core knows no pack
by name; settings list which to load (``TETHER_PACKS``).

What is here:

- the pack object ``Pack`` and its environment ``PackEnv`` (tether's settings, the public URL);
- tools: ``tool``, ``Tool``, ``ToolContext`` and the result kinds ``Table``, ``Handle``,
  ``AsyncJobStarted``, ``Interaction``, ``ErrorResult``; declarative ``http_tool``;
- writes: ``Op``, ``OpOutcome``, ``new_op_id``, ``draft_op``, ``propose_op`` (a draft in the op queue) and the
  ``OpExecutor`` port a pack implements to carry confirmed ops out (``Pack.op_executors``), bound to
  what was approved: ``staged_fingerprint`` / ``fingerprint_of`` and ``StagedDiffers``;
- the offline planner's hooks: ``Extractor``, ``PlannerQuestion``, ``render``;
- identity: ``Identity``, ``Owner``, ``IdentityProvider``; ``IdentityDep`` for a pack's routes (imported
  on first use: ``import tether.pack`` alone does not load FastAPI);
- errors: ``ToolError``, ``InvalidInput``, ``NotFound``, ``Conflict``, ``Unauthorized``, ``Unavailable``,
  ``ConfigError``;
- a pack's own database: ``normalize_url``, ``create_read_engine``, ``PackSettings``, and its own
  Alembic history: ``PackMigrations`` (``Pack.migrations``), ``alembic_env`` (its ``env.py``),
  ``upgrade_pack`` (for a pack's own commands that run without the server);
- ``tether doctor``: ``DoctorCheck`` (one line: ok, or what to fix), returned by the pack's
  ``Pack.doctor`` hooks (the ERP pack reaches its ERP);
- commands: ``add_pack_commands`` adds what each installed pack declares under the
  ``tether.commands`` entry-point group (``tether finance``, ``tether erp``) to ``tether``'s own;
- the SQL sandbox: ``guard``, ``GuardCache``, ``Policy``, ``GuardedQuery``, ``SqlRejected``,
  ``ReadOnlyExecutor``, ``QueryResult``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import secrets
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_settings import BaseSettings as PackSettings

from tether import phrases
from tether.core.session import Identity, Owner
from tether.core.tools import (
    AsyncJobStarted,
    ErrorResult,
    Handle,
    Interaction,
    Table,
    Tool,
    ToolContext,
    tool,
)
from tether.doctor import DoctorCheck, DoctorHook
from tether.errors import ConfigError, Conflict, InvalidInput, NotFound, ToolError, Unauthorized, Unavailable
from tether.http_tools import LocalHandler, http_tool
from tether.identity import IdentityProvider
from tether.models.planner import Extractor, PlannerQuestion, render
from tether.ops.executor_port import OpExecutor, StagedDiffers, fingerprint_of, staged_fingerprint
from tether.ops.model import Op, OpOutcome, new_op_id
from tether.ops.proposal import draft_op, propose_op
from tether.pack_commands import add_pack_commands
from tether.pack_migrate import PackMigrations, alembic_env, upgrade_pack
from tether.sqlguard import GuardCache, GuardedQuery, Policy, SqlRejected, guard
from tether.sqlguard.readonly import QueryFailed, QueryResult, ReadOnlyExecutor
from tether.store.database import create_read_engine, normalize_url

if TYPE_CHECKING:
    from tether.app.auth import IdentityDep

__all__ = [
    "AsyncJobStarted",
    "ConfigError",
    "Conflict",
    "DoctorCheck",
    "DoctorHook",
    "ErrorResult",
    "Extractor",
    "GuardCache",
    "GuardedQuery",
    "Handle",
    "Identity",
    "IdentityDep",
    "IdentityProvider",
    "Interaction",
    "InvalidInput",
    "LocalHandler",
    "NotFound",
    "Op",
    "OpExecutor",
    "OpOutcome",
    "Owner",
    "Pack",
    "PackEnv",
    "PackMigrations",
    "PackSettings",
    "PlannerQuestion",
    "Policy",
    "QueryFailed",
    "QueryResult",
    "ReadOnlyExecutor",
    "SqlRejected",
    "StagedDiffers",
    "Table",
    "Tool",
    "ToolContext",
    "ToolError",
    "Unauthorized",
    "Unavailable",
    "add_pack_commands",
    "alembic_env",
    "create_read_engine",
    "draft_op",
    "fingerprint_of",
    "guard",
    "http_tool",
    "load_packs",
    "new_op_id",
    "normalize_url",
    "phrases",
    "process_secret",
    "propose_op",
    "render",
    "staged_fingerprint",
    "tool",
    "upgrade_pack",
]


@dataclass(frozen=True)
class PackEnv:
    """What a pack is given when it is built: tether's settings and where tether is reachable."""

    settings: Any
    public_url: str


Hook = Callable[[Any], Awaitable[None]]


@dataclass
class Pack:
    """What a pack contributes. ``startup`` / ``shutdown`` receive tether's services; ``routers``
    are FastAPI routers mounted by the app, ``apps`` ASGI apps mounted at a path prefix.

    ``migrations``: the pack's own Alembic history for the tables it owns (``PackMigrations``:
    folder, the pack's database URL, version table, head). tether runs it after its own
    migrations on start-up (before ``startup``) and in ``tether db upgrade``, so a later schema
    change reaches every deployment. Tables of a business system the pack only reads are not
    the pack's to migrate."""

    name: str
    tools: list[Tool] = field(default_factory=list)
    skill_dirs: list[Path] = field(default_factory=list)
    extractors: list[Extractor] = field(default_factory=list)
    local_handlers: dict[str, LocalHandler] = field(default_factory=dict)
    startup: Hook | None = None
    shutdown: Hook | None = None
    routers: list[Any] = field(default_factory=list)
    apps: dict[str, Any] = field(default_factory=dict)  # path prefix -> ASGI app
    identity_providers: list[IdentityProvider] = field(default_factory=list)
    # extra system-prompt text; a section that takes one argument gets the caller's granted ids
    prompt_sections: list[Callable[[], str] | Callable[[frozenset[str]], str]] = field(default_factory=list)
    audience: tuple[str, ...] = ()  # identity providers whose sessions get the prompt sections (empty: all)
    migrations: PackMigrations | None = None
    op_executors: list[OpExecutor] = field(default_factory=list)  # carry confirmed ops out, by name
    # a ToolError code -> {language: template over its params}: the failure as a person reads it
    # (merged over the core's table, tether.core.error_messages: a pack may override a core code)
    messages: dict[str, dict[str, str]] = field(default_factory=dict)
    # the codes of ``messages`` whose failure means "you are not granted this" (the turn's outcome
    # ``not_granted``, beside the core's ``error_messages.DENIED``)
    denied_codes: frozenset[str] = frozenset()
    # ``tether doctor``'s checks of what the pack depends on (its business system): each a line
    doctor: list[DoctorHook] = field(default_factory=list)


@functools.cache
def process_secret(name: str) -> str:
    """A random secret named ``name``, the same for every caller in this process, never stored or
    shown: what two parts mounted in one ``tether serve`` share when no key is configured (the
    demo ERP and the ERP pack: ``erp-agent-key``)."""
    return secrets.token_urlsafe(32)


def __getattr__(name: str) -> Any:
    """``IdentityDep`` is a FastAPI dependency: imported when a pack's routes ask for it, so that
    ``import tether.pack`` (a pack's tools, its CLI commands) does not pull in the web framework."""
    if name == "IdentityDep":
        from tether.app.auth import IdentityDep

        return IdentityDep
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def load_packs(refs: list[str], env: PackEnv) -> list[Pack]:
    packs = []
    for ref in refs:
        factory = getattr(_module(ref), "pack", None)
        if not callable(factory):
            raise ConfigError(f"pack {ref!r} has no pack(env) function")
        packs.append(factory(env))
    return packs
