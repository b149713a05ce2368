"""A tool result's event summary (``pipeline.summarise``) encodes only the front of the result,
and says exactly what encoding all of it and cutting to 80 characters says, for any result."""

from __future__ import annotations

import datetime
import json
import random
from decimal import Decimal
from typing import Any

from tether.core.pipeline import SUMMARY_CHARS, summarise


def whole(data: Any) -> str:
    """The summary as it was made before: the whole result encoded, then cut."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


LEAVES: list[Any] = [
    "",
    "a",
    "常州力拓传动机械有限公司",
    'quote " and \\ and \n newline',
    "\u2028\x00\x1f",
    0,
    -7,
    10**30,
    1.5,
    float("inf"),
    float("nan"),
    True,
    False,
    None,
    Decimal("12.30"),
    datetime.date(2026, 12, 4),
]
KEYS: list[Any] = ["k", "列名", 'q"k', "", 3, 2.5, None, True, False]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth < 4 and kind < 0.3:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(0, 30))]
    if depth < 4 and kind < 0.5:
        return tuple(random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5)))
    if depth < 4 and kind < 0.7:
        return {rng.choice(KEYS): random_value(rng, depth + 1) for _ in range(rng.randrange(0, 8))}
    leaf = rng.choice(LEAVES)
    return leaf * rng.randrange(0, 40) if isinstance(leaf, str) else leaf


def test_the_summary_equals_the_whole_results_cut_for_random_results() -> None:
    rng = random.Random(27)
    for _ in range(2000):
        data = random_value(rng)
        assert summarise(data) == whole(data), data


def test_a_large_table_is_summarised_as_before() -> None:
    rows = [[f"客户{i}", i * 1.25, i, "2026-12-04"] for i in range(5000)]
    data = {"columns": ["customer", "amount", "n", "date"], "rows": rows, "rowCount": 5000, "truncated": False}
    assert summarise(data) == whole(data) and summarise(data).endswith("…")
    assert summarise({"ok": True}) == '{"ok":true}'
