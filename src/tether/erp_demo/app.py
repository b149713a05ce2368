"""``ErpDemo``: the demo ERP as one object — its engine, ``prepare()`` and ``asgi``, the FastAPI app
whose routes are relative (``/login``, ``/me``...) so it can be mounted at ``/erp``.

Endpoints are plain ``def``: their database work runs in the threadpool and never blocks the event
loop of a server that calls this ERP over HTTP from the same process. Every refusal is 4xx JSON
``{"code": <0, "msg": ...}``; a bad or missing token is 401 ``{"code": -2, ...}``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

from tether.erp_demo import login_gate, meta, pages, reads, staging, views, writes
from tether.erp_demo.errors import BadRequest, ErpError, Forbidden, Invalid
from tether.erp_demo.generator import generate, insert
from tether.erp_demo.schema import erp_user, metadata
from tether.erp_demo.settings import ErpSettings
from tether.erp_demo.upgrade import add_missing_columns
from tether.erp_demo.users import User, bearer, login, logout, resolve
from tether.erp_demo.values import as_text

log = logging.getLogger("tether.erp_demo")


class ErpDemo:
    """The demo ERP: ``prepare()`` once (sync, idempotent), mount ``asgi``, ``close()`` at the end."""

    def __init__(self, settings: ErpSettings | None = None, agent_key: str | None = None) -> None:
        """``agent_key``: what ``/ai/execStaging`` requires in ``X-Agent-Key`` (None: nothing)."""
        from tether.erp_demo.db import create_engine

        self.settings = settings or ErpSettings()
        self.agent_key = agent_key
        self.login_gate: login_gate.LoginGate | None = None  # the host's login limits (``login_gate``)
        self.engine = create_engine(self.settings.database_url)
        self.asgi = build_app(self)

    def prepare(self) -> dict[str, int]:
        """Create tables and views (adding the nullable columns a table of an older database
        lacks), refresh the form metadata, seed the demo company when the database has no users
        and seeding is on. -> rows per table seeded ({} when nothing was)."""
        with self.engine.begin() as conn:
            metadata.create_all(conn)
            add_missing_columns(conn, metadata)
            views.recreate(conn)
            meta.refresh(conn)
            empty = conn.execute(sa.select(sa.func.count()).select_from(erp_user)).scalar_one() == 0
            if not empty or self.settings.seed == "off":
                return {}
            rows = generate(seed=self.settings.seed_random, scale=self.settings.seed_scale)
            counts = insert(conn, rows)
        log.info("seeded the demo ERP: %s", counts)
        return counts

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def tx(self) -> Iterator[sa.Connection]:
        with self.engine.begin() as conn:
            yield conn

    def user_of(self, authorization: str | None) -> User:
        with self.tx() as conn:
            return resolve(conn, bearer(authorization))


def _error(status: int, msg: str, code: int = -1) -> JSONResponse:
    return JSONResponse({"code": code, "msg": msg}, status_code=status)


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(ErpError)
    def erp_error(_request: Request, exc: ErpError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = {
            ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body": str(e.get("msg")) for e in exc.errors()
        }
        body = {
            "code": -1,
            "msg": "请求格式错误: " + "; ".join(f"{k}: {v}" for k, v in errors.items()),
            "errors": errors,
        }
        return JSONResponse(body, status_code=422)

    @app.exception_handler(DataError)
    def data_error(_request: Request, exc: DataError) -> JSONResponse:
        return _error(
            422, "a value the database cannot store (too long, out of range or with a NUL character); fix the input"
        )

    @app.exception_handler(UnicodeEncodeError)
    def not_unicode(_request: Request, exc: UnicodeEncodeError) -> JSONResponse:
        return _error(422, "text with an unpaired UTF-16 surrogate (\\ud800-\\udfff); send valid Unicode text")

    @app.exception_handler(OverflowError)
    def overflow(_request: Request, exc: OverflowError) -> JSONResponse:
        return _error(422, "a number too large for the database; fix the input")

    @app.exception_handler(Exception)
    def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("demo ERP: unexpected error", exc_info=exc)
        return _error(500, f"the ERP failed ({type(exc).__name__}); nothing was written")

    @app.exception_handler(StarletteHTTPException)
    def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        msg = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
        response = _error(exc.status_code, msg)
        response.headers.update(exc.headers or {})  # a 429's Retry-After
        return response


def build_app(erp: ErpDemo) -> FastAPI:
    app = FastAPI(title="tether demo ERP", docs_url=None, redoc_url=None, openapi_url=None)
    _install_errors(app)

    def user(request: Request) -> User:
        return erp.user_of(request.headers.get("authorization"))

    @app.post("/login")
    async def post_login(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        username = as_text("username", body.get("username", ""), 64)
        password = as_text("password", body.get("password", ""), 256)
        if not username or not password:
            raise BadRequest("username and password are required")

        def check() -> tuple[str, Any, User]:
            with erp.tx() as conn:
                return login(conn, username, password, erp.settings.token_ttl_s)

        token, expires, who = await login_gate.checked(erp, request, username, check)
        return {"code": 1, "token": token, "expiresAt": expires.isoformat() + "Z", "user": who.me()}

    @app.post("/logout")
    def post_logout(request: Request) -> dict[str, Any]:
        who = user(request)
        with erp.tx() as conn:
            logout(conn, who.token)
        return {"code": 1, "msg": "已退出登录"}

    @app.get("/me")
    def get_me(request: Request) -> dict[str, Any]:
        return {"code": 1, **user(request).me()}

    @app.get("/forms")
    def get_forms(request: Request) -> dict[str, Any]:
        user(request)
        with erp.tx() as conn:
            return {"code": 1, "forms": meta.list_forms(conn)}

    @app.get("/forms/{form_id}/config")
    def get_config(form_id: str, request: Request) -> dict[str, Any]:
        who = user(request)
        with erp.tx() as conn:
            return {"code": 1, **meta.form_config_of(conn, who, form_id)}

    @app.post("/getBusinessDataByFormcustomId")
    def get_rows(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        who = user(request)
        with erp.tx() as conn:
            return {"code": 1, "dataset": reads.read_rows(conn, who, body)}

    @app.get("/getBusinessDataById/{form_id}/{record_id}")
    def get_record(form_id: str, record_id: str, request: Request) -> dict[str, Any]:
        who = user(request)
        with erp.tx() as conn:
            return {"code": 1, **reads.read_record(conn, who, form_id, record_id)}

    _write_routes(app, erp, user)
    _staging_routes(app, erp, user)
    pages.install(app, erp)
    for extend in EXTENSIONS:
        extend(app, erp, user)
    return app


def _write_routes(app: FastAPI, erp: ErpDemo, user: Callable[[Request], User]) -> None:
    @app.post("/addUpdateDelBusinessData")
    def post_write(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        who = user(request)
        with erp.tx() as conn:
            return writes.handle(conn, who, body).body()

    def _examine(request: Request, body: dict[str, Any], undo: bool) -> dict[str, Any]:
        who = user(request)
        form = reads.form_of(body.get("sFormId"))
        record_id = body.get("sId")
        if not isinstance(record_id, str) or not record_id:
            raise Invalid({"sId": "the id of the bill is required"})
        with erp.tx() as conn:
            done = writes.examine(conn, who, form, record_id, body.get("version"), undo=undo)
        return {**done.body(), "status": "draft" if undo else "examined"}

    @app.post("/doExamine")
    def post_examine(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        return _examine(request, body, undo=False)

    @app.post("/doUnExamine")
    def post_unexamine(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        return _examine(request, body, undo=True)


def root_of(request: Request) -> str:
    """Where the ERP is mounted ("/erp" inside tether and under ``tether erp serve``)."""
    return str(request.scope.get("root_path") or "/erp").rstrip("/")


NOT_THE_AGENT = (
    "the staging endpoints (stage, revise, execute, cancel) change an op the user confirms in the chat; only "
    "the agent backend calls them (X-Agent-Key missing or wrong): edit it or confirm the proposal in the chat"
)


def _agent_only(erp: ErpDemo, request: Request) -> None:
    """The confirm is the agent backend's (seed §10: only after the person's confirm in the chat):
    with a key set, the user's token alone cannot stage, revise, execute, validate or cancel a
    staged op — what the person saw and the approvers signed is what stays staged."""
    if erp.agent_key is not None and not login_gate.from_agent(erp.agent_key, request):
        raise Forbidden(NOT_THE_AGENT)


def _staging_routes(app: FastAPI, erp: ErpDemo, user: Callable[[Request], User]) -> None:
    @app.post("/ai/staging")
    def post_staging(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        who = user(request)
        _agent_only(erp, request)
        with erp.tx() as conn:
            op = staging.create(conn, who, body, erp.settings.staging_ttl_s)
        return {"code": 1, "sId": op["id"], "status": op["status"], "op": op}

    @app.get("/ai/staging/{op_id}")
    def get_staging(op_id: str, request: Request) -> dict[str, Any]:
        who = user(request)
        with erp.tx() as conn:
            return staging.outcome(conn, staging.expire(conn, staging.owned(conn, who, op_id)), root_of(request)) | {
                "code": 1
            }

    @app.get("/ai/myTodos")
    def get_todos(request: Request, all: str = "0") -> dict[str, Any]:
        who = user(request)
        with erp.tx() as conn:
            ops = staging.todos(conn, who, every=all in ("1", "true"))
        root = root_of(request)
        for op in ops:
            op["link"] = (
                f"{root}/form/{op['target_form_id']}?staging={op['id']}" if op["status"] in staging.WAITING else None
            )
        return {"code": 1, "ops": ops, "total": len(ops)}

    @app.post("/ai/execStaging/{op_id}")
    def post_exec(op_id: str, request: Request, body: dict[str, Any] | None = Body(None)) -> dict[str, Any]:
        who = user(request)
        _agent_only(erp, request)
        with erp.tx() as conn:
            op = staging.execute(conn, who, op_id, (body or {}).get("mode"), (body or {}).get("fingerprint"))
            return staging.outcome(conn, op, root_of(request))

    @app.post("/ai/reviseStaging/{op_id}")
    def post_revise(op_id: str, request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        who = user(request)
        _agent_only(erp, request)  # a user's token alone cannot change what was shown and approved
        with erp.tx() as conn:
            return staging.outcome(conn, staging.revise(conn, who, op_id, body), root_of(request))

    @app.post("/ai/cancelStaging/{op_id}")
    def post_cancel(op_id: str, request: Request) -> dict[str, Any]:
        who = user(request)
        _agent_only(erp, request)
        with erp.tx() as conn:
            return staging.outcome(conn, staging.cancel(conn, who, op_id), root_of(request))


# further route groups (writes, staging, pages) register here: fn(app, erp, user_dependency)
EXTENSIONS: list[Callable[[FastAPI, ErpDemo, Callable[[Request], User]], None]] = []
