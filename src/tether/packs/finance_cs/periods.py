"""Date phrases of an analyst's question as a (start, end) pair of ``YYYY-MM-DD HH:MM:SS`` times,
against a given ``now`` (tests fix it).

Relative phrases run up to ``now``: 最近7天 / last 7 days is the rolling window ``now - 7 days`` to
``now`` (the conversations of the last 168 hours), 本月 / 本周 / 今天 start at midnight of the first
day. Calendar phrases with no relation to ``now`` (2026年11月, 11月, Q3, 第三季度, 今年, 去年,
2026-11-03, November 2026) are read by the pack-agnostic ``phrases.period_of`` (``tether.pack``) — the
same reading the ERP questions get — and cover whole days.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from tether.pack import phrases

_CN_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_RECENT = re.compile(
    r"(?:最近|近|过去|last\s*|past\s*)(\d+|[一两二三四五六七八九十]+)\s*"
    r"(天|日|周|个?星期|个?月|days?|weeks?|months?)"
)
_MONTH_DAY = re.compile(
    r"(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]?\s*(?:到|至|-|~|—)\s*(?:(\d{4})年)?(?:(\d{1,2})月)?(\d{1,2})[日号]?"
)
_ISO_RANGE = re.compile(r"(\d{4}-\d{2}-\d{2})\s*(?:到|至|~|to)\s*(\d{4}-\d{2}-\d{2})")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
# "in May" / "May 2026": a bare "may" is a verb ("may I see…")
_EN_MONTH = re.compile(
    r"(?<![a-z])(?:(in|of|during)\s+)?(" + "|".join(_MONTHS) + r")(?![a-z])(?:\s*,?\s*(\d{4}))?",
)
# fixed phrases up to now: (words, kind)
_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("最近一周", "近一周", "过去一周", "past week"), "7d"),
    (("最近一个月", "近一个月", "近一月", "过去一个月", "past month"), "30d"),
    (("本月", "这个月", "当月", "this month"), "this_month"),
    (("上个月", "上月", "last month"), "last_month"),
    (("本周", "这周", "这个星期", "本星期", "this week"), "this_week"),
    (("上周", "上星期", "上个星期", "last week"), "last_week"),
    (("前天",), "day_before_yesterday"),
    (("昨天", "昨日", "yesterday"), "yesterday"),
    (("今天", "今日", "today"), "today"),
)


def _number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + _CN_NUM.get(text[1:], 0)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _CN_NUM.get(tens, 1) * 10 + _CN_NUM.get(ones, 0)
    return _CN_NUM.get(text, 0)


def fmt(d: datetime) -> str:
    return d.strftime("%Y-%m-%d %H:%M:%S")


def _days(start: date, end: date) -> tuple[str, str]:
    return f"{start} 00:00:00", f"{end} 23:59:59"


def _named(kind: str, now: datetime) -> tuple[str, str]:
    today = datetime.combine(now.date(), datetime.min.time())
    monday = today - timedelta(days=today.weekday())
    first = today.replace(day=1)
    if kind in ("7d", "30d"):
        return fmt(now - timedelta(days=int(kind[:-1]))), fmt(now)
    if kind == "this_month":
        return fmt(first), fmt(now)
    if kind == "last_month":
        prev = (first - timedelta(days=1)).replace(day=1)
        return fmt(prev), fmt(first - timedelta(seconds=1))
    if kind == "this_week":
        return fmt(monday), fmt(now)
    if kind == "last_week":
        return fmt(monday - timedelta(days=7)), fmt(monday - timedelta(seconds=1))
    if kind == "today":
        return fmt(today), fmt(now)
    back = 1 if kind == "yesterday" else 2
    return fmt(today - timedelta(days=back)), fmt(today - timedelta(days=back - 1) - timedelta(seconds=1))


def _ranges(t: str, now: datetime) -> tuple[str, str] | None:
    if m := _ISO_RANGE.search(t):
        return m.group(1) + " 00:00:00", m.group(2) + " 23:59:59"
    if m := _MONTH_DAY.search(t):
        y1 = int(m.group(1) or now.year)
        start = date(y1, int(m.group(2)), int(m.group(3)))
        end = date(int(m.group(4) or y1), int(m.group(5) or m.group(2)), int(m.group(6)))
        if not m.group(1) and start > now.date():
            start, end = start.replace(year=start.year - 1), end.replace(year=end.year - 1)
        if end < start and not m.group(4):  # 12月20日到1月5日: the range crosses the new year
            end = end.replace(year=end.year + 1)
        return _days(start, end)
    if m := _RECENT.search(t):
        n, unit = _number(m.group(1)), m.group(2)
        per = 7 if unit[0] in "周星w" or "星期" in unit else 30 if unit[-1] in "月h" or "month" in unit else 1
        return fmt(now - timedelta(days=n * per)), fmt(now)
    return None


def _english_month(t: str, now: datetime) -> tuple[str, str] | None:
    for m in _EN_MONTH.finditer(t):
        month = _MONTHS.index(m.group(2)) + 1
        if month == 5 and not (m.group(1) or m.group(3)):
            continue
        year = int(m.group(3)) if m.group(3) else now.year - (month > now.month)
        last = (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
        return _days(date(year, month, 1), date(year, month, last))
    return None


def date_range(text: str, now: datetime) -> tuple[str, str] | None:
    """(start, end) for the date phrase in ``text``, or None when it names no period."""
    t = phrases.arabic(text.lower())
    t = re.sub(r"今年(?=\d{1,2}月)", f"{now.year}年", t)
    t = re.sub(r"去年(?=\d{1,2}月)", f"{now.year - 1}年", t)
    if found := _ranges(t, now):
        return found
    for words, kind in _WORDS:
        if any(w in t for w in words):
            return _named(kind, now)
    if found := _english_month(t, now):
        return found
    period = phrases.period_of(t, now.date())
    if period is None:
        return None
    start, end = period.start, period.end
    if start > now.date() and not re.search(r"\d{4}", period.phrase):  # Q3 asked in March: last year's
        start, end = _year_before(start), _year_before(end)
    return _days(start, end)


def _year_before(d: date) -> date:
    return d.replace(year=d.year - 1, day=min(d.day, 28) if d.month == 2 else d.day)
