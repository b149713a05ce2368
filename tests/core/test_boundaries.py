"""The core imports no web framework, ORM, HTTP client or provider SDK (docs/architecture.md §2)."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("fastapi", "starlette", "sqlalchemy", "alembic", "openai", "httpx", "uvicorn", "psycopg", "pymysql")


def test_importing_the_core_pulls_in_no_adapter_dependency() -> None:
    code = (
        "import sys, importlib, pkgutil, tether.core as c\n"
        "for m in pkgutil.iter_modules(c.__path__): importlib.import_module('tether.core.' + m.name)\n"
        f"print(sorted(n for n in {FORBIDDEN!r} if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"tether.core imported {out}"
