"""The offline planner's rules for this pack: turn a Chinese (or English) request into tool
arguments — date ranges, business line, channel, customer id and tier, top N, split dimensions
and topic keywords. A follow-up inherits what earlier messages said. When the business line of an
analysis cannot be told, it asks (listing the choices) instead of guessing.

An analysis always has a period (the last 30 days unless the request names one); a look-up
("查询客户C100023最近的会话") has one only when the request names it (``lookup_start_time`` /
``lookup_end_time``), so "the latest" means the latest, however old.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any

from tether.pack import PlannerQuestion

LINES: dict[str, tuple[str, ...]] = {
    "precious-metal": ("贵金属", "黄金", "白银", "precious-metal", "precious metal", "gold"),
    "forex": ("外汇", "结售汇", "换汇", "forex"),
    "fund": ("基金", "fund"),
    "credit-card": ("信用卡", "credit-card", "credit card"),
    "wealth": ("理财", "财富", "wealth"),
}
LINE_NAMES = {"precious-metal": "贵金属", "forex": "外汇", "fund": "基金", "credit-card": "信用卡", "wealth": "理财"}
UNSUPPORTED = ("股票", "期货", "保险", "贷款", "房贷", "stock", "insurance")
CHANNELS: dict[str, tuple[str, ...]] = {
    "app": ("手机银行", "app", "客户端"),
    "web": ("网银", "网页", "官网", "web"),
    "phone": ("电话", "热线", "phone"),
    "wechat": ("微信", "wechat"),
}
TIERS = ("高净值", "钻石", "白金", "金卡", "普通")
TOPICS = (
    "规则调整",
    "保证金",
    "交易规则",
    "手续费",
    "出入金",
    "开户",
    "风险测评",
    "延期交收",
    "系统故障",
    "强平",
    "积分",
    "额度",
    "赎回",
    "定投",
    "分红",
    "年费",
    "还款",
    "汇率",
    "购汇",
    "到期",
    "收益",
    "盗刷",
)
ANALYSIS_WORDS = ("分析", "报告", "趋势", "analy", "report")

_CN_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_RECENT = re.compile(
    r"(?:最近|近|过去|last\s*)(\d+|[一两二三四五六七八九十]+)\s*(天|日|周|个?星期|个?月|days?|weeks?|months?)"
)
_MONTH_DAY = re.compile(
    r"(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]?\s*(?:到|至|-|~|—)\s*(?:(\d{4})年)?(?:(\d{1,2})月)?(\d{1,2})[日号]?"
)
_ISO_RANGE = re.compile(r"(\d{4}-\d{2}-\d{2})\s*(?:到|至|~|to)\s*(\d{4}-\d{2}-\d{2})")
# A customer id as the data writes it: C and digits (the seed's C10001, the generator's C100001).
_CUSTOMER = re.compile(r"(?<![A-Za-z0-9])[Cc](\d{4,12})(?!\d)")
_TOP = re.compile(r"(?:(?<![提之以])前|top\s*)(\d{1,3})(?![天日周月年号])", re.I)


def _number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text.startswith("十"):
        return 10 + _CN_NUM.get(text[1:], 0)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _CN_NUM.get(tens, 1) * 10 + _CN_NUM.get(ones, 0)
    return _CN_NUM.get(text, 0)


def _fmt(d: datetime) -> str:
    return d.strftime("%Y-%m-%d %H:%M:%S")


def date_range(text: str, now: datetime) -> tuple[str, str] | None:
    """(start, end) for the first date phrase in ``text``, or None."""
    t = text.lower()
    today = datetime.combine(now.date(), datetime.min.time())
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
        return f"{start} 00:00:00", f"{end} 23:59:59"
    if m := _RECENT.search(t):
        n, unit = _number(m.group(1)), m.group(2)
        days = n * (7 if unit[0] in "周星w" or "星期" in unit else 30 if unit[-1] in "月h" or "month" in unit else 1)
        return _fmt(now - timedelta(days=days)), _fmt(now)
    for words, days in ((("最近一周", "近一周", "过去一周"), 7), (("最近一个月", "近一个月", "近一月"), 30)):
        if any(w in t for w in words):
            return _fmt(now - timedelta(days=days)), _fmt(now)
    if "本月" in t or "这个月" in t or "this month" in t:
        return _fmt(today.replace(day=1)), _fmt(now)
    if "上月" in t or "上个月" in t or "last month" in t:
        first = today.replace(day=1)
        prev = (first - timedelta(days=1)).replace(day=1)
        return _fmt(prev), _fmt(first - timedelta(seconds=1))
    monday = today - timedelta(days=today.weekday())
    if "本周" in t or "这周" in t or "this week" in t:
        return _fmt(monday), _fmt(now)
    if "上周" in t or "上星期" in t or "last week" in t:
        return _fmt(monday - timedelta(days=7)), _fmt(monday - timedelta(seconds=1))
    if "昨天" in t or "yesterday" in t:
        return _fmt(today - timedelta(days=1)), _fmt(today - timedelta(seconds=1))
    if "今天" in t or "today" in t:
        return _fmt(today), _fmt(now)
    return None


def _has(text: str, word: str) -> bool:
    """``word`` in ``text``; a Latin word only at a word start ("refund" is not "fund")."""
    if not word.isascii():
        return word in text
    return re.search(r"(?<![a-z])" + re.escape(word), text) is not None


def _pick(text: str, table: dict[str, tuple[str, ...]]) -> str | None:
    t = text.lower()
    return next((key for key, words in table.items() if any(_has(t, w) for w in words)), None)


def _first(texts: list[str], find: Any) -> Any:
    """The value found in the newest text that has one (the latest message first)."""
    for text in texts:
        value = find(text)
        if value not in (None, [], ""):
            return value
    return None


def extract(query: str, context: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now()
    texts = [query, *reversed([str(p) for p in context.get("_previous") or []])]
    line = _first(texts, lambda t: _pick(t, LINES)) or context.get("businessLine")
    wants_analysis = any(w in " ".join(texts).lower() for w in ANALYSIS_WORDS)
    if line is None and wants_analysis:
        odd = next((w for w in UNSUPPORTED if w in query.lower()), None)
        choices = "、".join(f"{cn}（{key}）" for key, cn in LINE_NAMES.items())
        lead = f"“{odd}”不是支持的业务线。" if odd else "我无法确定要分析哪条业务线。"
        raise PlannerQuestion(
            f"{lead}请指明其中之一：{choices}。"
            "(I could not tell which business line to analyse; choose one of the above.)"
        )
    period = _first(texts, lambda t: date_range(t, now))
    start, end = period or (_fmt(now - timedelta(days=30)), _fmt(now))
    top = _first(texts, lambda t: int(m.group(1)) if (m := _TOP.search(t)) else None)
    split: list[str] = []
    for text in texts:
        if "按渠道" in text or "by channel" in text.lower():
            split.append("channel")
        if any(w in text for w in ("按客户等级", "按等级", "按客户层级", "按客群")):
            split.append("tier")
    customer = _first(texts, lambda t: f"C{m.group(1)}" if (m := _CUSTOMER.search(t)) else None)
    return {
        "business_line": line,
        "channel": _first(texts, lambda t: _pick(t, CHANNELS)) or context.get("channel"),
        "customer_id": customer or context.get("customerId"),
        "customer_tier": _first(texts, lambda t: next((x for x in TIERS if x in t), None)),
        "start_time": start,
        "end_time": end,
        "period_defaulted": period is None,
        "lookup_start_time": period[0] if period else None,
        "lookup_end_time": period[1] if period else None,
        "top_n": top or 20,
        "split_by": sorted(set(split)),
        "keywords": _first(texts, lambda t: [w for w in TOPICS if w in t]) or [],
    }
