"""Oracles: a task's facts computed at run time from the data itself (SQL against a fresh copy of
the ERP or finance database, never a hard-coded number), and whether an answer carries them.

A query may use ``{user}`` (the ERP user), ``{brand}`` (their brand), ``{today}``,
``{month_start}``, ``{prev_month_start}``, ``{prev_month_end}``, ``{year_start}`` and
``{days_ago_N}`` (N = 1…400), all ISO dates of the day the task runs.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from tether.erp_demo import facts as erp_facts
from tether.evals.tasks import Fact

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_DAYS_AGO = re.compile(r"\{days_ago_(\d{1,3})\}")
MAX_VALUES = 30  # an `all` fact over more rows than this asks for the first 30


def variables(user: str, today: date | None = None) -> dict[str, str]:
    today = today or date.today()
    month_start = today.replace(day=1)
    prev_end = month_start - timedelta(days=1)
    brand = erp_facts.USERS.get(user, ("", 0, (), ""))[1]
    return {
        "user": user,
        "brand": str(brand),
        "today": today.isoformat(),
        "month_start": month_start.isoformat(),
        "prev_month_start": prev_end.replace(day=1).isoformat(),
        "prev_month_end": prev_end.isoformat(),
        "year_start": today.replace(month=1, day=1).isoformat(),
    }


def render(query: str, values: dict[str, str], today: date | None = None) -> str:
    today = today or date.today()
    query = _DAYS_AGO.sub(lambda m: (today - timedelta(days=int(m.group(1)))).isoformat(), query)
    for key, value in values.items():
        query = query.replace("{" + key + "}", value)
    return query


def run_query(db: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return list(conn.execute(query).fetchall())


def numbers_in(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in _NUMBER.findall(text)]


NONE_WORDS = ("没有", "暂无", "无记录", "0 ", "共 0", "no ", "none", "No ")


def mentions_number(text: str, value: float) -> bool:
    """The answer shows ``value`` (any thousands separators, rounded to cents, or in 万); zero may
    also be said in words (没有, none)."""
    if value == 0 and any(w in text for w in NONE_WORDS):
        return True
    tolerance = max(0.006, abs(value) * 1e-6)
    shown = numbers_in(text)
    if any(abs(n - value) <= tolerance for n in shown):
        return True
    return any(abs(n * 10_000 - value) <= max(50.0, abs(value) * 0.0005) for n in shown if "万" in text)


def mentions_value(text: str, value: Any) -> bool:
    if isinstance(value, int | float):
        return mentions_number(text, float(value))
    shown = str(value).strip()
    return bool(shown) and shown in text


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    detail: str = ""


def check_fact(fact: Fact, answer: str, dbs: dict[str, Path], values: dict[str, str]) -> Verdict:
    if fact.kind == "text":
        return Verdict(any(p in answer for p in fact.phrases), f"none of {list(fact.phrases)} in the answer")
    if fact.kind == "none" and fact.phrases:
        hit = [p for p in fact.phrases if p in answer]
        return Verdict(not hit, f"the answer says {hit}")
    rows = run_query(dbs[fact.db], render(fact.query, values))
    if fact.kind in ("count", "number"):
        if len(rows) != 1 or len(rows[0]) != 1 or rows[0][0] is None:
            return Verdict(False, f"the oracle query must return one value, it returned {rows[:3]}")
        expected = float(rows[0][0])
        return Verdict(mentions_number(answer, expected), f"expected the number {expected:g} in the answer")
    wanted = [r[0] for r in rows[:MAX_VALUES] if r and r[0] is not None]
    present = [v for v in wanted if mentions_value(answer, v)]
    if fact.kind == "all":
        if not wanted:
            return Verdict(False, "the oracle query returned no rows: the task expects some (fix the task or data)")
        missing = [v for v in wanted if v not in present]
        return Verdict(not missing, f"missing from the answer: {missing[:8]}{' …' if len(missing) > 8 else ''}")
    if fact.kind == "any":
        return Verdict(bool(present), f"none of {wanted[:8]} in the answer")
    return Verdict(not present, f"the answer holds {present[:8]}")  # none, by query
