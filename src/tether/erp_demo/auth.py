"""Passwords (PBKDF2-SHA256, salted) and login tokens (256 random bits; only their SHA-256 is stored)."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

ITERATIONS = 120_000


def hash_password(password: str, iterations: int = ITERATIONS) -> str:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"pbkdf2_sha256${iterations}${salt.hex()}${digest.hex()}"


def check_password(password: str, stored: str) -> bool:
    try:
        scheme, iterations, salt, digest = stored.split("$")
        if scheme != "pbkdf2_sha256":
            return False
        got = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), int(iterations))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got.hex(), digest)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_for(token: str) -> str:
    """The form pages' CSRF value: bound to the login token, useless without it."""
    return hashlib.sha256(f"erp-form-csrf:{token}".encode()).hexdigest()[:32]
