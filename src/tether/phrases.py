"""The language of a clerk's or an analyst's question that no metadata holds: Chinese numerals, date phrases,
comparisons with units, top-N. Pack-agnostic: each function takes text (and a fixed ``today``)
and returns what it found with the span it covered, so a reader can tell what is left unexplained.
Packs reach it through the pack surface: ``from tether.pack import phrases`` (the ERP pack's
reader and the finance pack's question reader both read dates and numbers with it).

Chinese numerals go through ``cn2an`` only where a numeral stands before a unit or a measure word
(十五天, 两千个, 前五个): ``cn2an.transform`` over the whole sentence would turn 一共 into 1共.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

_CN_DIGITS = "零一二两三四五六七八九十百千万"
_CN_RUN = re.compile(
    rf"(?<![{_CN_DIGITS}])([{_CN_DIGITS}]+)(?=\s*(?:天|日|周|个|张|条|家|笔|月|年|万|元|块|台|件|名|位|种|星期|季度|%|吨|米))"
)


def arabic(text: str) -> str:
    """``text`` with each Chinese numeral that counts something written in digits."""

    def sub(m: re.Match[str]) -> str:
        run = m.group(1)
        if run in ("万", "千", "百", "十", "零"):  # a unit, not a number (万元)
            return run
        try:
            import cn2an  # 0.3 s to import: loaded by the first question with a Chinese numeral

            return str(cn2an.cn2an(run, "smart"))
        except (ValueError, KeyError):
            return run

    return _CN_RUN.sub(sub, text)


@dataclass(frozen=True)
class Period:
    start: date
    end: date
    phrase: str  # as the question said it
    span: tuple[int, int]
    through: date | None = None  # the calendar period's last day, where it lies ahead (本月 → 12-31)

    def ahead(self) -> Period:
        """The whole calendar period, for dates that lie ahead (本月到期: up to the month's end)."""
        return Period(self.start, self.through or self.end, self.phrase, self.span)

    def label(self) -> str:
        return f"{self.start.isoformat()} 至 {self.end.isoformat()}"


def _month_end(year: int, month: int) -> date:
    first_next = date(year + (month == 12), month % 12 + 1, 1)
    return first_next - timedelta(days=1)


def _months_back(d: date, n: int) -> date:
    month = d.month - n
    year = d.year + (month - 1) // 12
    month = (month - 1) % 12 + 1
    return date(year, month, min(d.day, _month_end(year, month).day))


_ISO_RANGE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})\s*(?:到|至|~|-|—|to)\s*(\d{4})-(\d{1,2})-(\d{1,2})")
_MD_RANGE = re.compile(
    r"(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]?\s*(?:到|至|~|-|—)\s*(?:(\d{1,2})月)?(\d{1,2})[日号]?"
)
_RECENT = re.compile(
    r"(?:最近|近|过去|last\s*|past\s*)(\d+)\s*(天|日|周|个?星期|个?月|年|days?|weeks?|months?|years?)", re.I
)
_YEAR_MONTH = re.compile(r"(\d{4})年(\d{1,2})月(?:份)?")
_MONTH = re.compile(r"(?<![\d年])(\d{1,2})月份?(?![\d日号])")
_YEAR = re.compile(r"(\d{4})年(?:度)?(?!\d{1,2}月)")
_QUARTER = re.compile(r"(?:(\d{4})年|(今年|去年))?的?(?:第([1-4一二三四])季度|[Qq]([1-4]))")
_ISO_DAY = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_CN_Q = {"一": 1, "二": 2, "三": 3, "四": 4}

# fixed phrases: (words, start, end) as functions of today
_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("今天", "今日", "today"), "today"),
    (("昨天", "昨日", "yesterday"), "yesterday"),
    (("本周", "这周", "这个星期", "本星期", "this week"), "this_week"),
    (("上周", "上星期", "上个星期", "last week"), "last_week"),
    (("本月", "这个月", "当月", "this month"), "this_month"),
    (("上个月", "上月", "last month"), "last_month"),
    (("今年", "本年", "本年度", "this year"), "this_year"),
    (("去年", "上一年", "last year"), "last_year"),
    (("本季度", "这个季度", "this quarter"), "this_quarter"),
    (("上季度", "上个季度", "last quarter"), "last_quarter"),
)


def _named(kind: str, today: date) -> tuple[date, date]:
    monday = today - timedelta(days=today.weekday())
    first = today.replace(day=1)
    quarter_first = date(today.year, (today.month - 1) // 3 * 3 + 1, 1)
    if kind == "today":
        return today, today
    if kind == "yesterday":
        return today - timedelta(days=1), today - timedelta(days=1)
    if kind == "this_week":
        return monday, today
    if kind == "last_week":
        return monday - timedelta(days=7), monday - timedelta(days=1)
    if kind == "this_month":
        return first, today
    if kind == "last_month":
        end = first - timedelta(days=1)
        return end.replace(day=1), end
    if kind == "this_year":
        return date(today.year, 1, 1), today
    if kind == "last_year":
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    if kind == "this_quarter":
        return quarter_first, today
    last_end = quarter_first - timedelta(days=1)  # last_quarter
    return date(last_end.year, (last_end.month - 1) // 3 * 3 + 1, 1), last_end


def _through(kind: str, today: date) -> date | None:
    if kind == "this_week":
        return today + timedelta(days=6 - today.weekday())
    if kind == "this_month":
        return _month_end(today.year, today.month)
    if kind == "this_quarter":
        return _month_end(today.year, (today.month - 1) // 3 * 3 + 3)
    if kind == "this_year":
        return date(today.year, 12, 31)
    return None


def period_of(text: str, today: date) -> Period | None:
    """The first date phrase of ``text`` (digits already arabic) as a closed range of days."""
    t = text.lower()
    return _ranges(t, today) or _calendar(t, today) or _words(t, today) or _loose(t, today)


def _ranges(t: str, today: date) -> Period | None:
    if m := _ISO_RANGE.search(t):
        a = date(int(m[1]), int(m[2]), int(m[3]))
        b = date(int(m[4]), int(m[5]), int(m[6]))
        return Period(a, b, m.group(0), m.span())
    if m := _MD_RANGE.search(t):
        year = int(m[1] or today.year)
        a = date(year, int(m[2]), int(m[3]))
        b = date(year, int(m[4] or m[2]), int(m[5]))
        if b < a:  # 12月20日到1月5日
            b = b.replace(year=year + 1)
        return Period(a, b, m.group(0), m.span())
    if m := _RECENT.search(t):
        n, unit = int(m[1]), m[2].lower()
        if unit[0] in "周星w" or "星期" in unit:
            start = today - timedelta(days=7 * n - 1)
        elif "月" in unit or unit.startswith("month"):
            start = _months_back(today, n) + timedelta(days=1)
        elif unit[0] in "年y":
            start = date(today.year - n, today.month, today.day) + timedelta(days=1)
        else:
            start = today - timedelta(days=n - 1)
        return Period(start, today, m.group(0), m.span())
    return None


def _calendar(t: str, today: date) -> Period | None:
    if m := _QUARTER.search(t):
        q = int(m[4]) if m[4] else _CN_Q.get(m[3], 0) or int(m[3])
        year = int(m[1]) if m[1] else today.year - (m[2] == "去年")
        return Period(date(year, 3 * q - 2, 1), _month_end(year, 3 * q), m.group(0), m.span())
    if (m := _YEAR_MONTH.search(t)) and 1 <= int(m[2]) <= 12:
        year, month = int(m[1]), int(m[2])
        return Period(date(year, month, 1), _month_end(year, month), m.group(0), m.span())
    if m := _ISO_DAY.search(t):
        d = date(int(m[1]), int(m[2]), int(m[3]))
        return Period(d, d, m.group(0), m.span())
    return None


def _words(t: str, today: date) -> Period | None:
    for words, kind in _WORDS:
        for word in words:
            at = t.find(word)
            if at >= 0:
                start, end = _named(kind, today)
                return Period(start, end, word, (at, at + len(word)), _through(kind, today))
    return None


def _loose(t: str, today: date) -> Period | None:
    """2026年 (a whole year), 11月 (this year's, or last year's when it is still to come)."""
    if m := _YEAR.search(t):
        year = int(m[1])
        return Period(date(year, 1, 1), date(year, 12, 31), m.group(0), m.span())
    if (m := _MONTH.search(t)) and 1 <= int(m[1]) <= 12:
        month = int(m[1])
        year = today.year if month <= today.month else today.year - 1
        return Period(date(year, month, 1), _month_end(year, month), m.group(0), m.span())
    return None


@dataclass(frozen=True)
class Comparison:
    op: str  # ">", ">=", "<" or "<="
    value: float
    unit: str  # "天", "元", "" (a count), ...
    phrase: str
    span: tuple[int, int]


# strict words first: 超过500 is more than 500, 不少于 / 至少 / 以上 include the number itself
_MORE_STRICT = r"超过|大于|多于|高于|超|>|more than|over|above|greater than"
_MORE_EQUAL = r"不少于|不低于|至少|>=|≥|at least"
_LESS_STRICT = r"少于|小于|低于|不到|<|less than|under|below|fewer than"
_LESS_EQUAL = r"不超过|至多|最多|<=|≤|at most"
_MORE = rf"{_MORE_EQUAL}|{_MORE_STRICT}"
_LESS = rf"{_LESS_EQUAL}|{_LESS_STRICT}"
_UNIT = r"(万元|万|元|块|天|日|个月|月|年|个|张|条|件|台|吨|米|笔|days?)?"
_NUMBER = r"(\d+(?:\.\d+)?)"
_BEFORE = re.compile(rf"({_LESS}|{_MORE})\s*{_NUMBER}\s*{_UNIT}", re.I)
_AFTER = re.compile(rf"{_NUMBER}\s*{_UNIT}\s*(以上|以下|及以上|及以下|或以上|或以下|之上|之内|以内|\+)", re.I)
_DAYS = ("天", "日", "day", "days")


def _op_of(word: str) -> str:
    for pattern, op in ((_MORE_EQUAL, ">="), (_MORE_STRICT, ">"), (_LESS_EQUAL, "<="), (_LESS_STRICT, "<")):
        if re.fullmatch(pattern, word, re.I):
            return op
    raise ValueError(word)


def comparisons(text: str) -> list[Comparison]:
    """库存超过500 → (>, 500); 不少于500 / 500以上 → (>=, 500); 金额大于5万 → (>, 50000, 元);
    30天以内 → (<=, 30, 天); 低于100 → (<, 100). A day filter that only takes a minimum (the ERP's
    最少逾期天数) reads "超过 N 天" as that minimum: the reader decides, not this."""
    found: list[Comparison] = []
    taken: list[tuple[int, int]] = []
    for m in _BEFORE.finditer(text):
        found.append(_comparison(_op_of(m[1]), m[2], m[3] or "", m.group(0), m.span()))
        taken.append(m.span())
    for m in _AFTER.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        op = ">=" if m[3] in ("以上", "及以上", "或以上", "之上", "+") else "<="
        found.append(_comparison(op, m[1], m[2] or "", m.group(0), m.span()))
    return found


def _comparison(op: str, number: str, unit: str, phrase: str, span: tuple[int, int]) -> Comparison:
    value = float(number)
    if unit.startswith("万"):
        value, unit = value * 10000, "元"
    elif unit == "块":
        unit = "元"
    elif unit.lower() in _DAYS:
        unit = "天"
    return Comparison(op, value, unit, phrase, span)


_TOP = re.compile(
    r"(?:(?:排名|排在|排)?(?<![提之以])前\s*(\d{1,3})(?!\d|\s*个?(?:月|星期|周|天|日|年|季度|小时))\s*(?:个|名|位|家|条|张|种)?|top\s*(\d{1,3})|最(?:大|高|多|小|低|少|贵|便宜)的\s*(\d{1,3})\s*(?:个|名|位|家|条|张|种)"
    # 前三的客户 / 前十: a numeral arabic() leaves (no counter after it)
    r"|(?:排名|排在|排)?(?<![提之以])前\s*([一二两三四五六七八九十])(?![一二三四五六七八九十百千万天日周月年]|个?(?:月|星期|季度|小时))(?:个|名|位|家|条|张|种)?)",
    re.I,
)
_ONE_DIGIT = {c: i for i, c in enumerate("一二三四五六七八九十", start=1)} | {"两": 2}


def top_n(text: str) -> tuple[int, tuple[int, int]] | None:
    """前5 / 前五个 (arabic first) / 排前3 / 排名前10 / top 5 / 金额最大的5个 → (5, span)."""
    m = _TOP.search(text)
    if not m:
        return None
    n = _ONE_DIGIT[m[4]] if m[4] else int(m[1] or m[2] or m[3])
    return (n, m.span()) if 0 < n <= 100 else None
