"""Users and login tokens: login, logout, token → user (expiry and revocation checked)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from tether.erp_demo.auth import check_password, new_token, token_hash
from tether.erp_demo.errors import LoginFailed, Unauthorized
from tether.erp_demo.schema import erp_token, erp_user


def utcnow() -> datetime:
    """Naive UTC, whole seconds (MariaDB's DATETIME keeps no fractions)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True)
class User:
    id: str
    name: str
    brands_id: int
    subsidiary_id: int
    auths: tuple[str, ...]
    jurisdiction: str
    token: str = ""

    @property
    def own_only(self) -> bool:
        return self.jurisdiction == "own"

    def me(self) -> dict[str, Any]:
        return {
            "userId": self.id,
            "username": self.id,
            "name": self.name,
            "brandsId": self.brands_id,
            "subsidiaryId": self.subsidiary_id,
            "sAuthsId": list(self.auths),
            "jurisdiction": self.jurisdiction,
        }


def _user(row: Any, token: str = "") -> User:
    auths = tuple(a for a in str(row.auths or "").split(",") if a)
    return User(row.id, row.name, int(row.brands_id), int(row.subsidiary_id), auths, row.jurisdiction, token)


def login(conn: sa.Connection, username: str, password: str, ttl_s: int) -> tuple[str, datetime, User]:
    row = conn.execute(sa.select(erp_user).where(erp_user.c.id == username)).first()
    if row is None or not row.active or not check_password(password, row.password_hash):
        raise LoginFailed("用户名或密码错误")
    token, now = new_token(), utcnow()
    expires = now + timedelta(seconds=ttl_s)
    conn.execute(
        erp_token.insert().values(
            token_hash=token_hash(token), user_id=row.id, created_at=now, expires_at=expires, revoked=False
        )
    )
    return token, expires, _user(row, token)


def by_id(conn: sa.Connection, user_id: str) -> User:
    """A user by id (no token): whose name a staged op runs in, when someone else revises it."""
    row = conn.execute(sa.select(erp_user).where(erp_user.c.id == user_id)).one()
    return _user(row)


def resolve(conn: sa.Connection, token: str) -> User:
    if not token or len(token) > 512:
        raise Unauthorized()
    row = conn.execute(
        sa.select(erp_user, erp_token.c.expires_at, erp_token.c.revoked)
        .join(erp_token, erp_token.c.user_id == erp_user.c.id)
        .where(erp_token.c.token_hash == token_hash(token))
    ).first()
    if row is None or row.revoked or not row.active or row.expires_at <= utcnow():
        raise Unauthorized()
    return _user(row, token)


def logout(conn: sa.Connection, token: str) -> None:
    conn.execute(
        erp_token.update()
        .where(erp_token.c.token_hash == token_hash(token), erp_token.c.revoked == sa.false())
        .values(revoked=True, revoked_at=utcnow())
    )


def bearer(header: str | None) -> str:
    """The token of ``Authorization: <token>`` or ``Authorization: Bearer <token>``."""
    value = (header or "").strip()
    if value[:7].lower() == "bearer ":
        value = value[7:].strip()
    return value
