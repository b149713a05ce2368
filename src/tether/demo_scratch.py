"""The demo's ERP examples run on a scratch copy of the ERP's data (``tether demo``).

The examples write — two quotations, a staged change, an approval — and a newcomer who opens the
chat page afterwards must find the data as the README describes it, not conversations and
待ERP处理 items they never made. So the examples run against a second server in the same process
whose ERP database is a copy of ``./var/erp.db`` and whose own database is new, both in a folder
under ``./var`` that is removed when the examples are done. Only the SQLite default is copied: an
ERP on a database server is written in place, and the demo says so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url

from tether.settings import Settings
from tether.store.sqlite_copy import backup_sqlite

SCRATCH_PREFIX = "demo-"
EMBEDDED_ERP_URL = "sqlite:///./var/erp.db"  # the ERP pack's default (it is not imported here)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL, or None for another database (or an in-memory one)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


@contextmanager
def scratch_settings(settings: Settings, public_url: str) -> Iterator[Settings | None]:
    """Settings for a server on a scratch copy of the ERP, or None where the ERP's database is not
    a SQLite file (the caller runs the examples in place). The packs read the ERP's URL from the
    environment (``TETHER_ERP_*``) when they are built: it names the copy until the block ends."""
    erp_db = sqlite_file(os.environ.get("TETHER_ERP_DATABASE_URL") or EMBEDDED_ERP_URL)
    if erp_db is None or not erp_db.exists():
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=erp_db.parent))
    saved = os.environ.get("TETHER_ERP_DATABASE_URL")
    try:
        backup_sqlite(erp_db, folder / "erp.db")
        os.environ["TETHER_ERP_DATABASE_URL"] = f"sqlite:///{(folder / 'erp.db').resolve()}"
        packs = ",".join(p for p in settings.packs.split(",") if "finance" not in p and p.strip() != "examples")
        yield settings.model_copy(
            update={
                "database_url": f"sqlite:///{(folder / 'tether.db').resolve()}",
                "packs": packs,
                "public_url": public_url,
            }
        )
    finally:
        if saved is None:
            os.environ.pop("TETHER_ERP_DATABASE_URL", None)
        else:
            os.environ["TETHER_ERP_DATABASE_URL"] = saved
        shutil.rmtree(folder, ignore_errors=True)
