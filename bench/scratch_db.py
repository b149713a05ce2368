"""A scratch PostgreSQL database for a benchmark run, dropped afterwards (shared by the benches)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

PG_ADMIN = os.environ.get("TETHER_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@contextmanager
def scratch_pg(admin_url: str = PG_ADMIN) -> Iterator[str]:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"tether_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as c:
        c.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as c:
            c.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
