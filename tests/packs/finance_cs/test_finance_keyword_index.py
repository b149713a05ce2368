"""The analysis from the keyword index gives exactly what the reference computation gives (jieba
over every record of the slice, ``analysis.analyze``), on SQLite, PostgreSQL and MariaDB; rows
the index lacks are indexed before an analysis reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tether.packs.finance_cs import contrast
from tether.packs.finance_cs.analysis import analyze
from tether.packs.finance_cs.findings import findings
from tether.packs.finance_cs.generator import generate, generate_rows
from tether.packs.finance_cs.indexed_analysis import analyze_indexed
from tether.packs.finance_cs.keyword_index import index_new, index_pending
from tether.packs.finance_cs.pack import open_finance, prepare
from tether.packs.finance_cs.query import SessionQuery, parse_query
from tether.packs.finance_cs.settings import FinanceSettings
from tether.packs.finance_cs.state import indexed_sessions, session_keywords
from tether.packs.finance_cs.tools import Finance

NOW = datetime(2026, 3, 15, 12, 0, 0)
ROWS = 2500
SINCE = (NOW - timedelta(days=30)).isoformat()
PREVIOUS = {"startTime": (NOW - timedelta(days=60)).isoformat(), "endTime": SINCE}

SLICES: dict[str, dict[str, Any]] = {
    "30 days of precious metal (the demo)": {"business_line": "precious-metal", "start_time": SINCE},
    "example 1: 30 days of precious metal about 规则调整 (previous period and rest)": {
        "business_line": "precious-metal",
        "keywords": ["规则调整"],
        "start_time": SINCE,
        "end_time": NOW.isoformat(),
    },
    "30 days, app, one tier": {
        "business_line": "precious-metal",
        "start_time": SINCE,
        "channel": "app",
        "customer_tier": "普通",
    },
    "a keyword filter (semi-join)": {"keywords": ["保证金"], "start_time": PREVIOUS["startTime"]},
    "a customer": {"customer_id": "C100001"},
    "the previous period": {"start_time": PREVIOUS["startTime"], "end_time": PREVIOUS["endTime"]},
    "everything": {},
    "nothing matches": {"business_line": "fund", "start_time": NOW.isoformat()},
}


@pytest.fixture
def fin(db_url: str, tmp_path: Path) -> Iterator[Finance]:
    finance = open_finance(
        "http://127.0.0.1:9",
        FinanceSettings(database_url=db_url, seed="no", report_dir=str(tmp_path / "reports")),
    )
    prepare(finance)
    generate(finance.repo.engine, rows=ROWS, days=90, now=NOW)  # indexed as it is seeded
    try:
        yield finance
    finally:
        finance.repo.engine.dispose()
        finance.state.engine.dispose()


def _count(fin: Finance, table: sa.Table) -> int:
    with fin.repo.engine.connect() as c:
        return int(c.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def _reference(fin: Finance, filters: dict[str, Any], max_id: int | None = None) -> dict[str, Any]:
    """Today's computation: fetch the slice's records (as a handle holds them), its previous period's
    and the rest of its period's, and segment them all."""

    def ids(query: SessionQuery | None) -> list[int]:
        return [] if query is None else [i for i in fin.repo.ids(query) if max_id is None or i <= max_id]

    query = parse_query(filters)
    chosen = ids(query)
    previous, period = contrast.previous_query(query), contrast.period_query(query)
    rest = sorted(set(ids(period)) - set(chosen))
    return analyze(
        fin.repo.fetch_by_ids(chosen),
        query=query,
        previous=None if previous is None else fin.repo.fetch_by_ids(ids(previous)),
        rest=None if period is None else fin.repo.fetch_by_ids(rest),
    )


def _same(indexed: dict[str, Any], reference: dict[str, Any], what: str = "") -> None:
    assert reference["documents"] == indexed["documents"], what
    assert json.dumps(indexed, ensure_ascii=False, sort_keys=True) == json.dumps(
        reference, ensure_ascii=False, sort_keys=True
    ), what


def test_seeding_indexes_every_conversation(fin: Finance) -> None:
    assert _count(fin, indexed_sessions) == ROWS
    assert _count(fin, session_keywords) > ROWS  # a few kept tokens per conversation
    assert index_pending(fin.state.engine) == 0, "nothing left to index"


def test_the_indexed_analysis_equals_the_reference(fin: Finance) -> None:
    for name, filters in SLICES.items():
        indexed = analyze_indexed(fin.repo.engine, filters, writer=fin.state.engine)
        reference = _reference(fin, filters)
        _same(indexed, reference, name)
        assert findings(indexed) == findings(reference), name
    demo = analyze_indexed(fin.repo.engine, SLICES["30 days of precious metal (the demo)"])
    assert {"规则调整", "保证金"} <= {k["keyword"] for k in demo["keywords"][:5]}, "the planted surge"
    assert demo["quotes"]["规则调整"] and demo["byChannel"][0]["group"] == "app"
    assert analyze_indexed(fin.repo.engine, SLICES["nothing matches"])["documents"] == 0


def test_a_handle_bound_slice_leaves_out_later_rows(fin: Finance) -> None:
    ids = fin.repo.ids(SLICES["everything"])
    cut = ids[len(ids) // 2]
    _same(analyze_indexed(fin.repo.engine, {}, max_id=cut), _reference(fin, {}, max_id=cut))


def test_rows_written_without_the_index_are_indexed_before_the_analysis(fin: Finance) -> None:
    later = generate_rows(rows=300, days=60, seed=11, now=NOW)
    fin.repo.insert_many(later)  # a plain write: no index entries
    assert _count(fin, indexed_sessions) == ROWS
    filters = SLICES["30 days of precious metal (the demo)"]
    indexed = analyze_indexed(fin.repo.engine, filters, writer=fin.state.engine)
    _same(indexed, _reference(fin, filters))
    # the slice and the rest of its period (its reference) were indexed; older rows were not
    assert ROWS < _count(fin, indexed_sessions) < ROWS + 300, "only the period's missing rows were indexed"
    assert index_pending(fin.state.engine) > 0 and _count(fin, indexed_sessions) == ROWS + 300


def test_concurrent_indexers_write_each_conversation_once(fin: Finance) -> None:
    """Two indexers on the same missing rows: the second skips what the first wrote."""
    fin.repo.insert_many(generate_rows(rows=200, days=5, seed=13, now=NOW))

    counts: list[int] = []
    threads = [
        threading.Thread(target=lambda: counts.append(index_pending(fin.state.engine, batch=50))) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sum(counts) == 200 and _count(fin, indexed_sessions) == ROWS + 200


def test_the_background_round_indexes_a_batch_of_the_newest_rows(fin: Finance) -> None:
    fin.repo.insert_many(generate_rows(rows=150, days=5, seed=17, now=NOW))
    assert index_new(fin.state.engine, max_rows=100) == 100
    assert index_new(fin.state.engine, max_rows=100) == 50
    assert index_new(fin.state.engine) == 0 and index_pending(fin.state.engine) == 0


def test_tether_finance_index_rebuilds_the_index(sqlite_url: str, tmp_path: Path) -> None:
    engine = sa.create_engine(sqlite_url)
    generate(engine, rows=200, days=10, now=NOW)  # no migrations yet: seeded without the index
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env["TETHER_FINANCE_DATABASE_URL"] = sqlite_url
    for args, expected in (([], 200), (["--rebuild"], 200), ([], 0)):
        out = subprocess.run(
            [sys.executable, "-m", "tether.cli", "finance", "index", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert f"indexed {expected} conversations" in out.stdout, out.stdout
    with engine.connect() as c:
        assert c.execute(sa.select(sa.func.count()).select_from(indexed_sessions)).scalar_one() == 200
    engine.dispose()
