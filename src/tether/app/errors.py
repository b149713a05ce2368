"""One table mapping tether's error tree to HTTP statuses. Bad input is a 4xx naming what to fix,
never a 500."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from tether.abuse.refusal import LimitReached
from tether.app.limits import BodyRefused
from tether.errors import (
    AwaitingApproval,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TetherError,
    Unauthorized,
    Unavailable,
    UserError,
)

log = logging.getLogger("tether.api")

STATUS: list[tuple[type[TetherError], int]] = [
    (InvalidInput, 422),
    (NotFound, 404),
    (Conflict, 409),
    (Unauthorized, 401),
    (Forbidden, 403),
    (UserError, 400),
    (Unavailable, 503),
]


def _status(exc: TetherError) -> int:
    return next((code for kind, code in STATUS if isinstance(exc, kind)), 500)


def _what_to_fix(exc: InvalidInput) -> dict[str, object]:
    """A 422's field, each field's problem, and the code the page says in the person's language."""
    said: dict[str, object] = {}
    if exc.field:
        said["field"] = exc.field
    if exc.problems:
        said["problems"] = exc.problems
    if exc.code:
        said.update(code=exc.code, params=exc.params)
    return said


def install(app: FastAPI) -> None:
    @app.exception_handler(TetherError)
    async def tether_error(_: Request, exc: TetherError) -> JSONResponse:
        code = _status(exc)
        if code == 500:
            log.error("request failed: %s", exc.message)
        body: dict[str, object] = {"error": exc.message}
        if isinstance(exc, InvalidInput):
            body.update(_what_to_fix(exc))
        if isinstance(exc, AwaitingApproval):
            body["code"] = exc.code
        headers = {"WWW-Authenticate": "Bearer"} if code == 401 else None
        if isinstance(exc, Unavailable):  # an upstream outage: the client retries, it does not log in again
            body.update(code="UPSTREAM_UNAVAILABLE", upstream=exc.upstream, retryAfter=exc.retry_after_s)
            headers = {"Retry-After": str(exc.retry_after_s)}
        return JSONResponse(body, status_code=code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path", "header")]
            if e.get("type") == "json_invalid":
                loc = ["body"]
            problems.append({"field": ".".join(loc) or "body", "message": e.get("msg", "invalid")})
        first = problems[0] if problems else {"field": "body", "message": "invalid request"}
        return JSONResponse(
            {"error": f"{first['field']}: {first['message']}", "field": first["field"], "problems": problems},
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":  # e.g. not UTF-8
            msg = "body: could not be parsed; send UTF-8 JSON"
            return JSONResponse({"error": msg, "field": "body"}, status_code=422)
        if isinstance(exc, BodyRefused):  # refused while the route read the body
            return exc.response()
        if isinstance(exc, LimitReached):  # an abuse limit: the code and params say it in the person's language
            return JSONResponse(exc.body(), status_code=429, headers=exc.headers)
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return JSONResponse({"error": "internal error; see the server log"}, status_code=500)
