"""``create_app(settings)``: builds the services and mounts the routes. No module globals."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.routing import Route

from tether import __version__
from tether.abuse import EndLoginAttempts
from tether.app import errors
from tether.app.deps import IdentityDep, ServicesDep
from tether.app.limits import LimitRequestBody
from tether.app.routes import agui, approvals, callbacks, chat, dsl, events, login, metrics, ops, sessions, tools
from tether.app.text import RejectUnpairedSurrogates
from tether.core.ports import ChatModel
from tether.interop.mcp_server import TetherMcp
from tether.pack import Pack
from tether.settings import Settings, create_settings
from tether.wiring import build_services, identity_chain


class RejectNulInPath:
    """A NUL in the request path can never name anything: 404 before any handler or database
    (PostgreSQL cannot even compare such a key)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and "\x00" in scope.get("path", ""):
            response = JSONResponse({"error": "not found"}, status_code=404)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(
    settings: Settings | None = None, *, model: ChatModel | None = None, packs: list[Pack] | None = None
) -> FastAPI:
    settings = settings or create_settings()
    services = build_services(settings, model=model, packs=packs)
    identity = identity_chain(services)
    mcp_app = TetherMcp(services, identity).http_app()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await services.start()
        # What startup built (modules, packs, pools: ~80,000 objects) lives as long as the process:
        # out of the collector's reach, a full collection walks only what requests left (it was
        # a ~27 ms pause every thousand or so sessions).
        gc.collect()
        gc.freeze()
        try:
            async with mcp_app.lifespan():
                yield
        finally:
            await services.stop()
            gc.unfreeze()  # an app stopped inside a longer-lived process (tests) leaves nothing held

    app = FastAPI(
        title="tether",
        version=__version__,
        lifespan=lifespan,
        description="A governed agent backend for business systems.",
    )
    app.state.services = services
    app.state.identity = identity
    errors.install(app)
    app.add_middleware(RejectNulInPath)
    app.add_middleware(EndLoginAttempts)  # a login attempt counts as in flight until its request is over
    app.add_middleware(RejectUnpairedSurrogates)  # JSON bodies: valid Unicode, or 422 before any route
    app.add_middleware(LimitRequestBody, max_bytes=settings.max_body_bytes)  # outermost: before any route
    for r in (
        sessions.router,
        events.router,
        callbacks.router,
        dsl.router,
        tools.router,
        metrics.router,
        ops.router,
        approvals.router,
        agui.router,
        chat.router,
        login.router,
    ):
        app.include_router(r)
    for pack in services.packs:
        for r in pack.routers:
            app.include_router(r)
        for prefix, sub_app in pack.apps.items():
            app.mount(prefix, sub_app)

    app.router.routes.append(Route("/mcp", mcp_app))  # MCP over streamable HTTP (GET, POST, DELETE)

    @app.get("/api/health", tags=["meta"], summary="Liveness: the process answers")
    async def health() -> dict[str, Any]:
        return {"ok": True, "version": __version__, "model": services.model.name}

    @app.get("/api/ready", tags=["meta"], summary="Readiness: the database (and Redis, when set) answer")
    async def ready() -> JSONResponse:
        reason = await services.not_ready()
        body: dict[str, Any] = {"ready": reason is None, "replica": services.store.replica_id}
        if reason is not None:
            body["reason"] = reason
        return JSONResponse(body, status_code=200 if reason is None else 503)

    @app.get("/api/skills", tags=["meta"], summary="Installed skills and the ones that failed to load")
    async def skills(services: ServicesDep, who: IdentityDep) -> dict[str, Any]:
        return {
            "skills": [
                {"name": s.name, "description": s.description, "allowedTools": list(s.allowed_tools)}
                for s in services.skills.skills
            ],
            "invalid": [{"path": i.path, "reason": i.reason} for i in services.skills.issues],
        }

    return app
