"""``tether doctor``: checks what this configuration of tether depends on, one line each — ``ok``
with what was found, or ``FAIL`` with what to fix — and exits 1 when any check fails.

The core checks tether's database (it connects; its schema is this code's), each loaded pack's
own schema, and the approval policy file (it exists and parses; which one a server would load).
Packs add their own (``Pack.doctor``: the ERP pack reaches its ERP and logs in with a check user);
``cli.cmd_doctor`` adds the model endpoint's checkup. It never writes: no database is created or
migrated here (``tether db upgrade`` does that), and a SQLite file that does not exist yet is not
opened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tether.errors import ConfigError


@dataclass(frozen=True, slots=True)
class DoctorCheck:
    """One line of ``tether doctor``: ``what`` was checked, whether it is ``ok``, what was found
    (``detail``) and, when it is not ok, what to do about it (``fix``)."""

    what: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self, width: int = 0) -> str:
        said = self.detail if self.ok or not self.fix else f"{self.detail} — fix: {self.fix}"
        said = " ".join(said.split())  # one line, whatever a parser's message spans
        return f"{'ok' if self.ok else 'FAIL':<5}{self.what.ljust(width)}  {said}"


# what a pack contributes to ``tether doctor`` (``Pack.doctor``): its own checks, run in turn
DoctorHook = Callable[[], Awaitable[list[DoctorCheck]]]


def _where(url: sa.URL) -> str:
    return url.render_as_string(hide_password=True)


def _missing_sqlite(url: sa.URL) -> Path | None:
    """The file a SQLite URL names when it does not exist yet (opening it would create it)."""
    if url.drivername != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    path = Path(str(url.database)).expanduser()
    return None if path.exists() else path


def _connect_args(url: sa.URL) -> dict[str, Any]:
    return {} if url.drivername == "sqlite" else {"connect_timeout": 5}  # psycopg and PyMySQL: seconds


def schema_check(what: str, raw_url: str, version_table: str, head: str | None, known: frozenset[str]) -> DoctorCheck:
    """A database reached and at ``head`` of the history whose revisions are ``known``."""
    from tether.store.database import normalize_url

    try:
        url = normalize_url(raw_url)
    except (ValueError, sa.exc.ArgumentError, ConfigError) as exc:
        return DoctorCheck(what, False, f"the URL {raw_url.split('@')[-1]!r} cannot be read ({exc})", "correct the URL")
    where = _where(url)
    missing = _missing_sqlite(url)
    if missing is not None:
        if not missing.parent.is_dir():
            return DoctorCheck(what, False, f"{where}: the folder {missing.parent} does not exist", "create it")
        return DoctorCheck(what, True, f"{where}: not created yet (tether serve or `tether db upgrade` creates it)")
    engine = sa.create_engine(url, connect_args=_connect_args(url))
    try:
        with engine.connect() as conn:
            stored: set[str] = set()
            if sa.inspect(conn).has_table(version_table):
                stored = {str(r[0]) for r in conn.execute(sa.text(f"SELECT version_num FROM {version_table}"))}
    except sa.exc.DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else type(exc).__name__
        return DoctorCheck(what, False, f"{where}: cannot connect ({reason})", "start the database or correct the URL")
    finally:
        engine.dispose()
    if not stored:
        return DoctorCheck(what, True, f"{where}: empty (tether serve or `tether db upgrade` creates the schema)")
    if stored == {head}:
        return DoctorCheck(what, True, f"{where}: schema {head}, current")
    revisions = ", ".join(sorted(stored))
    if stored - known:
        return DoctorCheck(
            what,
            False,
            f"{where}: schema {revisions}, newer than this tether knows (up to {head})",
            "run the tether version that migrated it, or restore the backup taken before",
        )
    return DoctorCheck(
        what, False, f"{where}: schema {revisions}, behind {head}", "`tether db upgrade` (tether serve also migrates)"
    )


def database_checks(settings: Any, packs: list[Any]) -> list[DoctorCheck]:
    """tether's database, then each pack's own Alembic history on its database."""
    from tether.store.migrate import HEAD, VERSION_TABLE, known_revisions

    checks = [schema_check("database", settings.database_url, VERSION_TABLE, HEAD, known_revisions())]
    for pack in packs:
        m = pack.migrations
        if m is not None:
            known = frozenset(p.name.split("_")[0] for p in (Path(m.script_location) / "versions").glob("*.py"))
            checks.append(schema_check(f"{pack.name} schema", m.url, m.version_table, m.head, known))
    return checks


def policy_check(path: str | None, said: str) -> DoctorCheck:
    """The approval policy a server would load (``said``: which, and why), read and parsed."""
    from tether.ops.approvals.source import PolicySource

    if path is None:
        return DoctorCheck("approval policy", True, said)
    try:
        policy = PolicySource(path).current()
    except ConfigError as exc:
        return DoctorCheck(
            "approval policy",
            False,
            exc.message,
            "correct the file (docs/approvals.md), or set TETHER_APPROVAL_POLICIES to another file or `none`",
        )
    return DoctorCheck("approval policy", True, f"{said}: {len(policy.rules)} rule(s), version {policy.version[:12]}")


async def pack_checks(packs: list[Any]) -> list[DoctorCheck]:
    out: list[DoctorCheck] = []
    for pack in packs:
        for hook in pack.doctor:
            out.extend(await hook())
    return out


def render(checks: list[DoctorCheck]) -> str:
    width = max((len(c.what) for c in checks), default=0)
    failed = sum(1 for c in checks if not c.ok)
    lines = ["tether doctor", *(c.line(width) for c in checks)]
    lines.append(f"{failed} check(s) failed" if failed else "every check ok")
    return "\n".join(lines)
