"""CustomerSessionRepo on SQLite, PostgreSQL and MariaDB: seed 000 §2.3 query semantics, ids,
fetches and stratified samples, checked against the generated rows filtered in Python."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from tether.errors import InvalidInput
from tether.packs.finance_cs.data import RECORD_FIELDS, CustomerSessionRepo, allocate
from tether.packs.finance_cs.generator import generate, generate_rows

NOW = datetime(2026, 3, 15, 12, 0, 0)
ROWS, DAYS, SEED = 800, 60, 11
EXPECTED_ROWS = generate_rows(ROWS, DAYS, SEED, NOW)


@pytest.fixture
def repo(db_url: str) -> Iterator[CustomerSessionRepo]:
    engine = sa.create_engine(db_url)
    generate(engine, ROWS, DAYS, SEED, NOW)
    yield CustomerSessionRepo(engine)
    engine.dispose()


def _matches(row: dict[str, Any], f: dict[str, Any]) -> bool:
    keywords = f.get("keywords") or []
    text = [str(row[c]).lower() for c in ("user_message", "agent_reply", "tags")]
    if keywords and not any(k.lower() in t for k in keywords for t in text):
        return False
    for key, column in (
        ("businessLine", "business_line"),
        ("channel", "channel"),
        ("customerId", "customer_id"),
        ("customerTier", "customer_tier"),
    ):
        if key in f and row[column] != f[key]:
            return False
    if "startTime" in f and row["occurred_at"] < f["startTime"]:
        return False
    return not ("endTime" in f and row["occurred_at"] > f["endTime"])


def _expected(f: dict[str, Any]) -> set[str]:
    return {r["session_code"] for r in EXPECTED_ROWS if _matches(r, f)}


CASES: list[dict[str, Any]] = [
    {},
    {"keywords": ["保证金", "规则调整"]},
    {"keywords": ["保证金"], "businessLine": "precious-metal", "channel": "app"},
    {"keywords": ["咨询"]},  # appears in tags only
    {"keywords": ["APP"]},  # case-insensitive: the data writes "App"
    {"keywords": ["%"]},  # a literal percent sign (agent replies quote rates)
    {"keywords": ["_"]},  # a literal underscore: nothing has one
    {"keywords": ["/"]},  # the LIKE escape character itself
    {"businessLine": "fund", "startTime": NOW - timedelta(days=20), "endTime": NOW - timedelta(days=5)},
    {"customerTier": "高净值", "keywords": ["赎回", "积分"]},
    {"customerId": EXPECTED_ROWS[0]["customer_id"]},
]


def test_query_matches_python_filtering(repo: CustomerSessionRepo) -> None:
    for case in CASES:
        expected = _expected(case)
        total, records = repo.query({**case, "limit": 500})
        assert total == len(expected), case
        assert {r["sessionCode"] for r in records} == expected if total <= 500 else len(records) == 500
        stamps = [r["occurredAt"] for r in records]
        assert stamps == sorted(stamps, reverse=True), case
    assert _expected({"keywords": ["%"]}) and not _expected({"keywords": ["_"]})


def test_limit_total_and_record_shape(repo: CustomerSessionRepo) -> None:
    total, records = repo.query({"limit": 10_000})
    assert total == ROWS and len(records) == 500
    total, records = repo.query({"keywords": ["保证金"], "limit": 3})
    assert total == len(_expected({"keywords": ["保证金"]})) > 3
    assert len(records) == 3
    assert list(records[0]) == list(RECORD_FIELDS)
    assert isinstance(records[0]["id"], int)
    datetime.fromisoformat(records[0]["occurredAt"])
    assert "T" in records[0]["occurredAt"]
    newest = max(EXPECTED_ROWS, key=lambda r: r["occurred_at"])
    _, top = repo.query({"limit": 1})
    assert top[0]["sessionCode"] == newest["session_code"]
    day = newest["occurred_at"].date().isoformat()
    total, _ = repo.query({"startTime": day, "endTime": day})
    assert total == sum(1 for r in EXPECTED_ROWS if r["occurred_at"].date().isoformat() == day)
    with pytest.raises(InvalidInput) as caught:
        repo.query({"businessLine": "gold"})
    assert caught.value.field == "businessLine"


def test_ids_fetch_and_sample(repo: CustomerSessionRepo) -> None:
    f = {"keywords": ["保证金", "规则调整"], "businessLine": "precious-metal"}
    ids = repo.ids(f)
    assert ids == sorted(ids) and len(ids) == len(_expected(f))
    assert repo.ids(f, max_ids=5) == ids[:5]
    picked = [ids[3], ids[0], 99_999_999, ids[3]]
    fetched = repo.fetch_by_ids(picked, columns=["userMessage", "channel"])
    assert [r["id"] for r in fetched] == [ids[3], ids[0]]
    assert set(fetched[0]) == {"id", "userMessage", "channel"}
    assert repo.fetch_by_ids([]) == []
    with pytest.raises(InvalidInput) as caught:
        repo.fetch_by_ids(ids, columns=["password"])
    assert caught.value.field == "columns"

    first = repo.sample({}, size=80, seed=5)
    again = repo.sample({}, size=80, seed=5)
    other = repo.sample({}, size=80, seed=6)
    assert [r["id"] for r in first.records] == [r["id"] for r in again.records]
    assert [r["id"] for r in first.records] != [r["id"] for r in other.records]
    assert first.total == ROWS and len(first.records) == 80
    population = Counter(r["channel"] for r in EXPECTED_ROWS)
    assert {k: p for k, (p, _) in first.strata.items()} == dict(population)
    assert Counter(r["channel"] for r in first.records) == Counter(allocate(population, 80))
    by_day = repo.sample(f, size=20, seed=5, by="day")
    assert by_day.total == len(ids) and len(by_day.records) == 20
    assert all(r["businessLine"] == "precious-metal" for r in by_day.records)
    assert sum(s for _, s in by_day.strata.values()) == 20
    assert by_day.to_json()["stratifiedBy"] == "day"
    with pytest.raises(InvalidInput):
        repo.sample({}, size=0, seed=1)
