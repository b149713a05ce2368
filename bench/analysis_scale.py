"""The keyword analysis at scale (issue 11): 20k / 200k / 1M seeded conversations, on PostgreSQL
and SQLite, the indexed path (``indexed_analysis.analyze_indexed``: aggregates over the keyword
index) next to the old path (``ids`` + ``fetch_by_ids`` + ``analysis.analyze``: jieba over every
row of the slice at request time).

For each database and size: a fresh database (PostgreSQL: a new database on the server, dropped
at the end; SQLite: a file in a temporary directory), the pack's migrations, then

- seed: ``generate_rows`` + ``CustomerSessionRepo.insert_many`` (``COPY`` on PostgreSQL, batched
  executemany on SQLite), then ``ANALYZE``;
- index: ``keyword_index.index_pending`` over the whole table (segments every conversation once,
  2,000 per transaction);
- the 30-day analysis of two slices, with jieba already loaded: the precious-metal business line
  over the last 30 days ("30d line", about 10 % of the table), and example 1's slice (the same
  with the keyword 规则调整, a semi-join on ``customer_session``): p50 of ``--runs`` calls of the
  indexed path (each call also checks that every row of the slice is indexed), and one call of the
  old path (which segments the slice's previous period and the rest of its period too: the
  distinctive terms' references). Every indexed result is checked equal to the old path's on the
  20k table.

The ratio column is the indexed p50 over the old path's time on the 20k table of the same database
(the baseline: what the analysis cost before this change at the demo's size).

Run: .venv/bin/python bench/analysis_scale.py [--sizes 20000,200000,1000000] [--dbs postgres,sqlite]
     [--runs 5] [--old-max 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from scratch_db import scratch_pg  # a sibling: the benches run as scripts from bench/

from tether.pack import upgrade_pack
from tether.packs.finance_cs import contrast
from tether.packs.finance_cs.analysis import analyze, default_segmenter
from tether.packs.finance_cs.data import CustomerSessionRepo, create_schema
from tether.packs.finance_cs.generator import generate_rows
from tether.packs.finance_cs.indexed_analysis import analyze_indexed
from tether.packs.finance_cs.keyword_index import index_pending
from tether.packs.finance_cs.pack import migrations
from tether.packs.finance_cs.query import parse_query
from tether.packs.finance_cs.settings import FinanceSettings
from tether.store.database import create_read_engine, normalize_url

PG_ADMIN = os.environ.get("TETHER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
NOW = datetime(2026, 12, 1, 12, 0, 0)
DAYS = 180


# Callable[...]: the callers bind loop variables as lambda defaults (lambda f=filters: ...), which
# mypy cannot match against a fixed signature.
def timed(fn: Callable[..., Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.1f} ms"


def slices() -> dict[str, dict[str, Any]]:
    since, until = (NOW - timedelta(days=30)).isoformat(), NOW.isoformat()
    line = {"businessLine": "precious-metal", "startTime": since, "endTime": until}
    return {"30d line": line, "example 1": {**line, "keywords": ["规则调整"]}}


@contextmanager
def database(kind: str, folder: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / f'bench-{uuid.uuid4().hex[:8]}.db'}"
        return
    with scratch_pg(PG_ADMIN) as url:
        yield url


def old_path(repo: CustomerSessionRepo, filters: dict[str, Any]) -> dict[str, Any]:
    """The slice's records, its previous period's and the rest of its period's, all segmented."""
    query = parse_query(filters)
    chosen = repo.ids(query)
    previous, period = contrast.previous_query(query), contrast.period_query(query)
    rest = sorted(set(repo.ids(period)) - set(chosen)) if period is not None else []
    return analyze(
        repo.fetch_by_ids(chosen),
        query=query,
        previous=None if previous is None else repo.fetch_by_ids(repo.ids(previous)),
        rest=None if period is None else repo.fetch_by_ids(rest),
    )


def measure(kind: str, rows: int, runs: int, old_max: int, folder: Path) -> list[dict[str, Any]]:
    with database(kind, folder) as url:
        engine = create_read_engine(normalize_url(url))
        writer = create_read_engine(normalize_url(url), immediate=True)
        try:
            upgrade_pack(migrations(FinanceSettings(database_url=url)))
            create_schema(engine)
            repo = CustomerSessionRepo(engine)
            seed_s, _ = timed(lambda: repo.insert_many(generate_rows(rows, DAYS, seed=7, now=NOW), chunk_size=20000))
            index_s, indexed = timed(lambda: index_pending(writer))
            assert indexed == rows, (indexed, rows)
            with engine.begin() as c:
                c.exec_driver_sql("ANALYZE")
            out = []
            for name, filters in slices().items():
                times, result = [], None
                for _ in range(runs):
                    t, result = timed(lambda f=filters: analyze_indexed(engine, f, writer=writer))
                    times.append(t)
                assert result is not None
                old_s = None
                if rows <= old_max:
                    old_s, old = timed(lambda f=filters: old_path(repo, f))
                    same = json.dumps(old, sort_keys=True, ensure_ascii=False) == json.dumps(
                        result, sort_keys=True, ensure_ascii=False
                    )
                    assert same, f"{kind} {rows} {name}: the indexed result differs from the old path's"
                out.append(
                    {
                        "db": kind,
                        "rows": rows,
                        "slice": name,
                        "documents": result["documents"],
                        "seed": seed_s,
                        "index": index_s,
                        "p50": statistics.median(times),
                        "old": old_s,
                    }
                )
                print(
                    f"  {kind} {rows:,} {name}: {result['documents']:,} docs, p50 {fmt(out[-1]['p50'])}, "
                    f"old {fmt(old_s)}",
                    file=sys.stderr,
                    flush=True,
                )
            return out
        finally:
            engine.dispose()
            writer.dispose()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="20000,200000", help="comma-separated row counts (default 20000,200000)")
    p.add_argument("--dbs", default="postgres,sqlite", help="postgres and/or sqlite")
    p.add_argument("--runs", type=int, default=5, help="indexed analyses per slice (p50)")
    p.add_argument("--old-max", type=int, default=200_000, help="run the old path only up to this many rows")
    args = p.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    default_segmenter()  # jieba loads once (about a second), outside every measurement
    table: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tether-analysis-bench-") as tmp:
        for kind in args.dbs.split(","):
            for rows in sizes:
                print(f"{kind}: seeding {rows:,} rows …", file=sys.stderr, flush=True)
                table.extend(measure(kind, rows, args.runs, max(args.old_max, sizes[0]), Path(tmp)))
    print("| db | rows | seed | index | slice | slice rows | indexed p50 | old path | old path, 20k | p50 / old 20k |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in table:
        base = next(
            b["old"] for b in table if b["db"] == r["db"] and b["slice"] == r["slice"] and b["rows"] == sizes[0]
        )
        print(
            f"| {r['db']} | {r['rows']:,} | {fmt(r['seed'])} | {fmt(r['index'])} | {r['slice']} | {r['documents']:,} "
            f"| {fmt(r['p50'])} | {fmt(r['old'])} | {fmt(base)} | {r['p50'] / base:.2f}× |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
