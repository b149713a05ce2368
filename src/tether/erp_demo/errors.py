"""The ERP's refusals: each one an HTTP status and a message that says what to fix."""

from __future__ import annotations

from typing import Any

LOGIN_EXPIRED = "登录已过期，请重新登录"


class ErpError(Exception):
    status = 400
    code = -1

    def __init__(self, msg: str, errors: dict[str, str] | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.errors = errors

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "msg": self.msg}
        if self.errors:
            body["errors"] = self.errors
        return body


class BadRequest(ErpError):
    status = 400


class Unauthorized(ErpError):
    status = 401
    code = -2

    def __init__(self, msg: str = LOGIN_EXPIRED) -> None:
        super().__init__(msg)


class LoginFailed(ErpError):
    """Wrong user name or password: 401, but not the "login expired" of a bad token."""

    status = 401


class Forbidden(ErpError):
    status = 403


class NotFound(ErpError):
    status = 404


class Conflict(ErpError):
    status = 409


class StagedDiffers(Conflict):
    """409: the staged op's values are not the ones the caller says it confirmed (their
    fingerprint differs); nothing was executed."""

    code = -3


class Invalid(ErpError):
    """422: ``errors`` maps each bad field to what is wrong with it."""

    status = 422

    def __init__(self, errors: dict[str, str], msg: str | None = None) -> None:
        super().__init__(msg or "校验失败: " + "; ".join(f"{k}: {v}" for k, v in errors.items()), errors)
