"""Keyword analysis finds the planted precious-metal surge, quickly and deterministically."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from tether.packs.finance_cs.analysis import Segmenter, analyze, default_segmenter
from tether.packs.finance_cs.data import to_record
from tether.packs.finance_cs.generator import generate_rows

NOW = datetime(2026, 3, 15, 12, 0, 0)


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    rows = generate_rows(rows=20000, days=180, seed=7, now=NOW)
    return [to_record({"id": i, **row}) for i, row in enumerate(rows, 1)]


def _slice(records: list[dict[str, Any]], days: int | None, channel: str | None = None) -> list[dict[str, Any]]:
    since = (NOW - timedelta(days=days)).isoformat() if days else ""
    return [
        r
        for r in records
        if r["businessLine"] == "precious-metal"
        and r["occurredAt"] >= since
        and (channel is None or r["channel"] == channel)
    ]


def test_segmenter_keeps_finance_terms_and_drops_stop_words() -> None:
    seg = default_segmenter()
    tokens = seg.cut("您好，请问规则调整之后黄金T+D的保证金比例是多少？App一直闪退！")
    assert {"规则调整", "保证金", "黄金T+D", "app", "闪退"} <= set(tokens)
    assert not {"您好", "请问", "之后", "多少", "一直", "的", "？"} & set(tokens)
    assert seg.idf_of("的确是没有这个词") == seg.median_idf


def test_segmenter_builds_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    Segmenter()
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_thirty_day_precious_metal_app_slice_surfaces_the_surge(records: list[dict[str, Any]]) -> None:
    result = analyze(_slice(records, 30, "app"), top_n=20)
    top = [k["keyword"] for k in result["keywords"][:5]]
    assert "规则调整" in top and "保证金" in top
    pairs = {(p["a"], p["b"]) for p in result["cooccurrence"][:5]}
    assert ("规则调整", "保证金") in pairs or ("保证金", "规则调整") in pairs
    quotes = result["quotes"]["规则调整"]
    assert quotes and all("规则调整" in q["text"] for q in quotes)
    assert len({q["text"] for q in quotes}) == len(quotes)
    json.dumps(result, ensure_ascii=False)


def test_trend_rises_in_the_last_thirty_days(records: list[dict[str, Any]]) -> None:
    result = analyze(_slice(records, None), top_n=20)
    trend = result["trend"]
    assert "规则调整" in trend["series"]
    counts = trend["series"]["规则调整"]
    assert len(counts) == len(trend["days"]) == len(trend["documents"])
    recent, before = counts[-30:], counts[:-30]
    assert sum(recent) / 30 > 4 * (sum(before) / len(before))
    assert trend["change"]["规则调整"]["ratio"] > 3


def test_splits_by_channel_and_tier(records: list[dict[str, Any]]) -> None:
    sliced = _slice(records, 30)
    result = analyze(sliced, top_n=10)
    channels = {g["group"]: g for g in result["byChannel"]}
    assert sum(g["documents"] for g in channels.values()) == len(sliced)
    app, web = channels["app"], channels["web"]
    assert app["keywords"]["规则调整"] / app["documents"] > web["keywords"]["规则调整"] / web["documents"]
    assert result["byChannel"][0]["group"] == "app"
    tiers = {g["group"] for g in result["byTier"]}
    assert "高净值" in tiers
    high = analyze([r for r in sliced if r["customerTier"] == "高净值"], top_n=10)
    assert {g["group"] for g in high["byTier"]} == {"高净值"}


def test_thirty_day_slice_analyses_in_seconds(records: list[dict[str, Any]]) -> None:
    default_segmenter()
    sliced = _slice(records, 30)
    assert len(sliced) > 1500
    started = time.perf_counter()
    analyze(sliced)
    assert time.perf_counter() - started < 5


def test_deterministic_and_empty_input(records: list[dict[str, Any]]) -> None:
    sliced = _slice(records, 30, "wechat")
    assert analyze(sliced) == analyze(list(sliced))
    empty = analyze([])
    assert empty["documents"] == 0 and empty["keywords"] == [] and empty["trend"]["days"] == []
