"""SessionQuery validation: every bad input names the field to fix."""

from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError

from tether.errors import InvalidInput
from tether.packs.finance_cs.query import MAX_LIMIT, SessionQuery, parse_query


def test_accepts_the_seed_request_and_normalises() -> None:
    q = parse_query(
        {
            "keywords": ["保证金", " 规则调整 ", "保证金", ""],
            "businessLine": "Precious-Metal",
            "channel": "APP",
            "customerId": "C10001",
            "startTime": "2026-03-01 00:00:00",
            "endTime": "2026-03-14 23:59:59",
            "limit": 20,
        }
    )
    assert q.keywords == ("保证金", "规则调整")
    assert q.business_line == "precious-metal"
    assert q.channel == "app"
    assert q.start_time == datetime(2026, 3, 1)
    assert q.end_time == datetime(2026, 3, 14, 23, 59, 59)
    assert q.to_json()["businessLine"] == "precious-metal"


def test_time_forms_and_defaults() -> None:
    q = parse_query({"startTime": "2026-03-01T08:30:00+08:00", "endTime": "2026-03-14", "keywords": "保证金，手续费"})
    assert q.start_time == datetime(2026, 3, 1, 8, 30)
    assert q.end_time == datetime(2026, 3, 14, 23, 59, 59, 999999)
    assert q.keywords == ("保证金", "手续费")
    assert parse_query(None).limit == 20
    assert parse_query({"start_time": "2026-03-01"}).start_time == datetime(2026, 3, 1)


def test_limit_is_capped() -> None:
    assert parse_query({"limit": 10_000}).limit == MAX_LIMIT


@pytest.mark.parametrize(
    ("payload", "field", "fragment"),
    [
        ({"startTime": "2026-03-05", "endTime": "2026-03-01"}, "endTime", "before startTime"),
        ({"startTime": "yesterday"}, "startTime", "YYYY-MM-DD"),
        ({"endTime": "2026-13-01"}, "endTime", "not a valid date"),
        ({"limit": 0}, "limit", "at least 1"),
        ({"limit": -5}, "limit", "at least 1"),
        ({"businessLine": "gold"}, "businessLine", "precious-metal, forex, fund, credit-card, wealth"),
        ({"channel": "fax"}, "channel", "app, web, phone, wechat"),
        ({"keywords": [1, 2]}, "keywords", "string"),
        ({"bussinessLine": "fund"}, "bussinessLine", "not permitted"),
    ],
)
def test_errors_name_the_field(payload: dict[str, object], field: str, fragment: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_query(payload)
    assert caught.value.field == field
    assert caught.value.message.startswith(f"{field}: ")
    assert fragment in caught.value.message


def test_pydantic_error_location_uses_the_json_name() -> None:
    with pytest.raises(ValidationError) as caught:
        SessionQuery.model_validate({"businessLine": "gold"})
    assert caught.value.errors()[0]["loc"] == ("businessLine",)
