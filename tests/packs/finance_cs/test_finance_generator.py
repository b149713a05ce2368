"""The generator is deterministic and plants the documented precious-metal surge."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta

import sqlalchemy as sa

from tether.packs.finance_cs import phrasebook
from tether.packs.finance_cs.data import CustomerSessionRepo
from tether.packs.finance_cs.generator import generate, generate_rows
from tether.packs.finance_cs.query import BUSINESS_LINES, CHANNELS, CUSTOMER_TIERS

NOW = datetime(2026, 3, 15, 12, 0, 0)


def test_same_seed_same_rows_other_seed_other_rows() -> None:
    a = generate_rows(rows=1500, days=90, seed=3, now=NOW)
    b = generate_rows(rows=1500, days=90, seed=3, now=NOW)
    c = generate_rows(rows=1500, days=90, seed=4, now=NOW)
    assert a == b
    assert a != c


def test_rows_are_well_formed_and_varied() -> None:
    rows = generate_rows(rows=3000, days=180, seed=7, now=NOW)
    assert {r["business_line"] for r in rows} == set(BUSINESS_LINES)
    assert {r["channel"] for r in rows} == set(CHANNELS)
    assert {r["customer_tier"] for r in rows} == set(CUSTOMER_TIERS)
    assert all(NOW - timedelta(days=180) <= r["occurred_at"] <= NOW for r in rows)
    assert [r["occurred_at"] for r in rows] == sorted(r["occurred_at"] for r in rows)
    assert len({r["session_code"] for r in rows}) == len(rows)
    lengths = [len(r["user_message"]) for r in rows]
    assert min(lengths) < 20 and max(lengths) > 80
    assert len({r["user_message"] for r in rows}) > 1000
    assert any(wrong in r["user_message"] for r in rows for _, wrong in phrasebook.TYPOS[:6])
    assert all("{" not in r["user_message"] + r["agent_reply"] for r in rows)


def test_planted_surge_is_present() -> None:
    rows = generate_rows(rows=20000, days=180, seed=7, now=NOW)
    window = NOW - timedelta(days=30)
    surge_tags = ",".join(phrasebook.SURGE_TAGS)
    recent = [r for r in rows if r["occurred_at"] >= window]
    before = [r for r in rows if r["occurred_at"] < window]
    surge = [r for r in recent if r["tags"] == surge_tags]
    assert len(surge) >= 1200  # the 6% planted, plus the odd baseline conversation with the same tags
    assert all(r["business_line"] == "precious-metal" for r in surge)
    assert Counter(r["channel"] for r in surge)["app"] / len(surge) > 0.6
    assert sum(r["tags"] == surge_tags for r in before) < 20

    def daily(subset: list[dict[str, object]], days: int) -> float:
        hits = [r for r in subset if r["business_line"] == "precious-metal" and "规则调整" in str(r["tags"])]
        return len(hits) / days

    assert daily(recent, 30) > 5 * daily(before, 150)


def test_generate_inserts_twenty_thousand_rows_quickly(sqlite_url: str) -> None:
    engine = sa.create_engine(sqlite_url)
    started = time.perf_counter()
    written = generate(engine, now=NOW)
    elapsed = time.perf_counter() - started
    assert written == 20000
    assert CustomerSessionRepo(engine).count() == 20000
    assert elapsed < 15, f"seeding 20,000 rows took {elapsed:.1f}s"
