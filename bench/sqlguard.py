"""SQL sandbox cost: median microseconds per ``guard()`` call over the allowed corpus, next to a bare
``sqlglot.parse`` of the same strings in the same run. Target: guard <= 3 x parse.

Also ``GuardCache.guard`` (what ``query_data`` calls): cold — a cache that has not seen the query,
so guard() runs and the verdict is stored; target: no dearer than guard() itself — and warm (the
verdict reused, no sqlglot).

Run: .venv/bin/python bench/sqlguard.py [--repeat N]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import sqlglot

from tether.sqlguard import GuardCache, Policy, guard

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "sqlguard" / "corpus"
DIALECTS = ("mysql", "postgres", "sqlite")
POLICY = Policy(
    tables={
        "viw_sales_order": "sBrandsId",
        "viw_customer": "sBrandsId",
        "viw_product": "sBrandsId",
        "customer_session": None,
    },
    tenant="B001",
    max_rows=500,
)


def corpus(dialect: str) -> list[str]:
    queries = []
    for name in ("allowed_common.txt", f"allowed_{dialect}.txt"):
        for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("##"):
                queries.append(line.replace("⏎", "\n"))
    return queries


# Callable[...]: the callers bind the dialect as a lambda default (lambda s, d=dialect: ...), which
# mypy cannot match against a fixed signature.
def timings(fn: Callable[..., object], queries: list[str], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        for sql in queries:
            start = time.perf_counter_ns()
            fn(sql)
            samples.append((time.perf_counter_ns() - start) / 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    print(f"sqlglot {sqlglot.__version__}; {args.repeat} rounds over the allowed corpus; median µs per call\n")
    print("| dialect | queries | sqlglot.parse µs | guard() µs | guard / parse | GuardCache cold µs | warm µs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for dialect in DIALECTS:
        queries = corpus(dialect)
        for sql in queries:  # warm caches; every query must pass
            guard(sql, dialect=dialect, policy=POLICY)
        parse = statistics.median(timings(lambda s, d=dialect: sqlglot.parse(s, read=d), queries, args.repeat))
        checked = statistics.median(
            timings(lambda s, d=dialect: guard(s, dialect=d, policy=POLICY), queries, args.repeat)
        )
        caches: list[GuardCache] = []

        def cold(sql: str, d: str = dialect, first: str = queries[0], caches: list[GuardCache] = caches) -> object:
            if sql == first:
                caches.append(GuardCache())  # a fresh cache each round: every query is new to it
            return caches[-1].guard(sql, dialect=d, policy=POLICY)

        cold_us = statistics.median(timings(cold, queries, args.repeat))
        warm_cache = GuardCache()
        warm_us = statistics.median(
            timings(lambda s, d=dialect, c=warm_cache: c.guard(s, dialect=d, policy=POLICY), queries, args.repeat)
        )
        print(
            f"| {dialect} | {len(queries)} | {parse:.0f} | {checked:.0f} | {checked / parse:.2f}× "
            f"| {cold_us:.0f} | {warm_us:.1f} |"
        )


if __name__ == "__main__":
    main()
