"""Value checks shared by reads and writes, and rows made JSON-friendly."""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from tether.erp_demo.errors import Invalid


def jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str) and len(value) == 26 and value[10] == " " and value.endswith(".000000"):
        return value[:19]  # SQLite's whole-second datetimes, as the other databases give them
    return value


def row_dict(row: Any) -> dict[str, Any]:
    return {str(k): jsonable(v) for k, v in dict(row._mapping).items()}


MAX_NUMBER = 1e12  # a decimal amount's bound (the columns hold 10^12 with 2 places)
INT_LIMIT = 2**63 - 1  # what every database's BIGINT holds
_INTEGER = re.compile(r"-?[0-9]{1,19}")  # ASCII digits only: str.isdigit also takes '²' and '٣'


def as_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool):
        raise Invalid({name: "must be an integer"})
    if isinstance(value, float) and value.is_integer() and abs(value) <= INT_LIMIT:
        value = int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        value = int(value.strip())
    if not isinstance(value, int):
        shown = repr(value[:40]) if isinstance(value, str) else type(value).__name__
        raise Invalid({name: f"must be an integer, not {shown}"})
    if abs(value) > INT_LIMIT:
        raise Invalid({name: f"must be between -{INT_LIMIT} and {INT_LIMIT}"})
    if low is not None and value < low:
        raise Invalid({name: f"must be at least {low}"})
    if high is not None and value > high:
        raise Invalid({name: f"must be at most {high}"})
    return value


def as_number(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise Invalid({name: "must be a number"})
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().replace(",", ""))
        except ValueError:
            raise Invalid({name: f"must be a number, not {value[:40]!r}"}) from None
    else:
        raise Invalid({name: f"must be a number, not {type(value).__name__}"})
    if not math.isfinite(number) or abs(number) >= MAX_NUMBER:
        raise Invalid({name: "must be a finite number below 10^12"})
    return number


def as_date(name: str, value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            pass
    raise Invalid({name: "must be a date YYYY-MM-DD"})


def as_text(name: str, value: Any, max_length: int | None = None) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise Invalid({name: f"must be text, not {type(value).__name__}"})
    text = str(value) if not isinstance(value, str) else value
    if "\x00" in text:
        raise Invalid({name: "must not contain a NUL character"})
    if max_length is not None and len(text) > max_length:
        raise Invalid({name: f"is longer than {max_length} characters"})
    return text


def as_flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1) and not isinstance(value, float):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("0", "1", "true", "false", ""):
        return value.strip().lower() in ("1", "true")
    raise Invalid({name: "must be 0/1 or true/false"})
