"""The finance pack's own tables (cs_*) are under Alembic: migrated on the pack's database (which
may not be tether's), adopted where create_all made them before, and open to later revisions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from tether.errors import ConfigError
from tether.pack import PackMigrations, upgrade_pack
from tether.pack_migrate import script_head
from tether.packs.finance_cs import state
from tether.packs.finance_cs.pack import HEAD, MIGRATIONS, VERSION_TABLE, migrations
from tether.packs.finance_cs.settings import FinanceSettings

CS_TABLES = {
    "cs_result_handle",
    "cs_analysis_job",
    "cs_analysis",
    "cs_report",
    "cs_indexed_session",
    "cs_session_keyword",
}


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _version(url: str, table: str = VERSION_TABLE) -> set[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            return {row[0] for row in c.execute(sa.text(f"SELECT version_num FROM {table}"))}
    finally:
        engine.dispose()


def _schema_drift(url: str) -> list[object]:
    """What Alembic would change to make the database match state.py's tables (ours only)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as c:
            diffs = compare_metadata(MigrationContext.configure(c), state.metadata)
    finally:
        engine.dispose()
    return [d for d in diffs if not (isinstance(d, tuple) and d[0] == "remove_table")]


def test_head_is_the_newest_revision() -> None:
    assert script_head(migrations(FinanceSettings(database_url="sqlite:///unused.db"))) == HEAD


def test_upgrade_makes_the_tables_state_py_describes(db_url: str) -> None:
    m = migrations(FinanceSettings(database_url=db_url))
    assert upgrade_pack(m) is True
    assert _tables(db_url) >= CS_TABLES
    assert _version(db_url) == {HEAD}
    assert _schema_drift(db_url) == [], "state.py changed without a revision in migrations/versions"
    assert upgrade_pack(m) is False, "at head: nothing to do (and Alembic not even imported)"


def test_tables_made_by_create_all_before_are_adopted_with_their_rows(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    try:
        state.metadata.create_all(engine)  # how the pack made its tables before it had migrations
        with engine.begin() as c:
            c.execute(
                state.reports.insert().values(
                    id="rpt-old", owner_user="u", owner_tenant="t", created_at=1.0, title="t", markdown="m", html="h"
                )
            )
    finally:
        engine.dispose()
    upgrade_pack(migrations(FinanceSettings(database_url=db_url)))
    assert _version(db_url) == {HEAD}
    assert state.FinanceState(sa.create_engine(db_url)).report("rpt-old", state.Owner("u", "t"))["title"] == "t"


def test_a_later_revision_reaches_a_deployed_database(db_url: str, tmp_path: Path) -> None:
    """The point of the history: a deployment at the head takes the next revision on upgrade."""
    upgrade_pack(migrations(FinanceSettings(database_url=db_url)))
    later = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, later, ignore=shutil.ignore_patterns("__pycache__"))
    (later / "versions" / "cs9999_probe.py").write_text(
        "import sqlalchemy as sa\nfrom alembic import op\n"
        f"revision = 'cs9999'\ndown_revision = {HEAD!r}\nbranch_labels = None\ndepends_on = None\n"
        "def upgrade():\n    op.add_column('cs_report', sa.Column('probe', sa.String(16), nullable=True))\n"
        "def downgrade():\n    op.drop_column('cs_report', 'probe')\n",
        encoding="utf-8",
    )
    assert upgrade_pack(PackMigrations(later, db_url, VERSION_TABLE, "cs9999")) is True
    engine = sa.create_engine(db_url)
    try:
        assert "probe" in {c["name"] for c in sa.inspect(engine).get_columns("cs_report")}
    finally:
        engine.dispose()
    assert _version(db_url) == {"cs9999"}


def test_a_database_a_newer_pack_migrated_is_refused_with_what_to_do(db_url: str, tmp_path: Path) -> None:
    """Older pack code must not run on a schema a newer version of the pack made: before, Alembic's
    "Can't locate revision" traceback stopped start-up with no word on what to do."""
    m = migrations(FinanceSettings(database_url=db_url))
    upgrade_pack(m)
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as c:
            c.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = 'cs9999'"))
    finally:
        engine.dispose()
    with pytest.raises(ConfigError, match=rf"at revision cs9999, which they do not know \(their head is {HEAD}\)"):
        upgrade_pack(m)
    assert _version(db_url) == {"cs9999"}, "nothing was written"
    if db_url.startswith("sqlite"):  # the command line says it in one line and exits 2
        env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
        env.update(
            {
                "TETHER_DATABASE_URL": f"sqlite:///{tmp_path / 'tether-own.db'}",
                "TETHER_FINANCE_DATABASE_URL": db_url,
                "TETHER_PACKS": "tether.packs.finance_cs.pack",
            }
        )
        for command in (["db", "upgrade"], ["serve", "--port", "1"]):  # serve refuses before it binds
            cli = subprocess.run(
                [sys.executable, "-m", "tether.cli", *command],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
            assert "revision cs9999" in cli.stderr and "a newer version of the pack" in cli.stderr


@pytest.mark.slow
def test_tether_db_upgrade_migrates_tether_and_the_pack_each_on_its_own_database(db_url: str, tmp_path: Path) -> None:
    tether_url = f"sqlite:///{tmp_path / 'tether-own.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env.update(
        {
            "TETHER_DATABASE_URL": tether_url,
            "TETHER_FINANCE_DATABASE_URL": db_url,
            "TETHER_PACKS": "tether.packs.finance_cs.pack",
        }
    )
    out = subprocess.run(
        [sys.executable, "-m", "tether.cli", "db", "upgrade"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "finance_cs: database at" in out.stdout, out.stdout
    tether_tables, pack_tables = _tables(tether_url), _tables(db_url)
    assert {"agent_session", "tether_alembic_version"} <= tether_tables
    assert not CS_TABLES & tether_tables, "the pack's tables went to tether's database"
    assert CS_TABLES | {VERSION_TABLE} <= pack_tables
    assert "agent_session" not in pack_tables
    assert _version(db_url) == {HEAD}
