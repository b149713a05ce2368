"""The words of an analyst's question about customer-support conversations, and what they mean:
business lines, channels and customer tiers by their Chinese and English names, customer ids in any
phrasing, topic keywords, and business lines the data does not hold. Each finder takes one
message (any case) and returns what it found, or None.
"""

from __future__ import annotations

import re

LINES: dict[str, tuple[str, ...]] = {
    "precious-metal": ("贵金属", "黄金", "白银", "precious-metal", "precious metal", "gold", "silver", "bullion"),
    "forex": ("外汇", "结售汇", "换汇", "forex", "fx", "foreign exchange", "currency exchange"),
    "fund": ("基金", "fund"),
    "credit-card": ("信用卡", "credit-card", "credit card"),
    "wealth": ("理财", "财富", "wealth"),
}
LINE_NAMES = {"precious-metal": "贵金属", "forex": "外汇", "fund": "基金", "credit-card": "信用卡", "wealth": "理财"}
LINE_NAMES_EN = {
    "precious-metal": "precious metals",
    "forex": "forex",
    "fund": "funds",
    "credit-card": "credit cards",
    "wealth": "wealth management",
}
UNSUPPORTED = ("股票", "期货", "期权", "保险", "贷款", "房贷", "stock", "futures", "insurance", "loan", "mortgage")
CHANNELS: dict[str, tuple[str, ...]] = {
    "app": ("手机银行", "app", "客户端", "手机", "mobile"),
    "web": ("网银", "网上银行", "网页", "官网", "web", "online banking", "internet banking"),
    "phone": ("电话", "热线", "phone", "hotline", "call center", "call centre"),
    "wechat": ("微信", "wechat", "weixin"),
}
CHANNEL_NAMES = {"app": "手机银行", "web": "网银", "phone": "电话", "wechat": "微信"}
TIERS = ("高净值", "钻石", "白金", "金卡", "普通")
TIER_WORDS_EN: dict[str, tuple[str, ...]] = {
    "高净值": ("high-net-worth", "high net worth", "hnw"),
    "钻石": ("diamond",),
    "白金": ("platinum",),
    "金卡": ("gold card", "gold-card", "gold tier", "gold-tier", "gold customer", "gold member"),
    "普通": ("regular customer", "ordinary customer", "standard customer", "regular tier"),
}
TIER_NAMES_EN = {"高净值": "high-net-worth", "钻石": "diamond", "白金": "platinum", "金卡": "gold", "普通": "regular"}
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
# the data is Chinese: an English topic is searched by its Chinese word
TOPICS_EN: dict[str, tuple[str, ...]] = {
    "规则调整": ("rule change", "rules change"),
    "保证金": ("margin",),
    "手续费": ("fee", "charge"),
    "开户": ("account opening", "open an account", "opening an account"),
    "系统故障": ("outage", "system failure", "system error"),
    "强平": ("forced liquidation", "liquidation"),
    "积分": ("reward points", "points"),
    "额度": ("credit limit",),
    "赎回": ("redemption", "redeem"),
    "分红": ("dividend",),
    "年费": ("annual fee",),
    "还款": ("repayment", "repay"),
    "汇率": ("exchange rate",),
    "盗刷": ("fraud", "stolen card", "unauthorized"),
}

# A customer id as the data writes it: C and digits (the seed's C10001, the generator's C100001);
# or the digits after 客户号 / 客户编号 / customer (客户号100005 is C100005).
_CUSTOMER = re.compile(r"(?<![A-Za-z0-9])[Cc](\d{4,12})(?!\d)")
_CUSTOMER_NUMBER = re.compile(r"(?:客户|customer)\s*(?:号|编号|id|no\.?|number|#)?\s*[:：#]?\s*(\d{5,12})(?!\d)", re.I)
# 股票业务 / 期权业务: a business line named as one; the name is checked against LINES
_SOME_LINE = re.compile(r"([\u4e00-\u9fff]{1,6})(?:业务|business)")
_FILLER = re.compile(r"^(?:帮我|请|麻烦|我想|想|查询|查一下|查查|查|看一下|看看|看|统计|一下|所有|全部|各|的)+")
_NOT_A_LINE = ("客服", "这个", "这项", "那个", "什么", "哪些", "哪个", "其他", "其它", "相关", "各项", "个人")
# a topic the list does not hold: 关于债券的, 提到债券的; about bonds
_ABOUT = (
    re.compile(r"关于([\u4e00-\u9fffA-Za-z0-9+]{1,12}?)(?:的|相关|问题|方面|会话|$|[，。？?、\s])"),
    re.compile(r"(?:提到|提及|涉及|包含|含有)了?([\u4e00-\u9fffA-Za-z0-9+]{1,12}?)(?:的|$|[，。？?、\s])"),
    re.compile(r"([\u4e00-\u9fffA-Za-z0-9+]{1,10}?)(?:相关|有关)"),
)
_ABOUT_EN = re.compile(r"\b(?:about|mentioning|regarding)\s+([\u4e00-\u9fff]{2,8})")
# what a topic candidate may hold besides the topic: filters, dates, filler
_NOT_TOPIC = re.compile(
    r"\d+\s*(?:个)?(?:天|日|周|星期|月|年|条|小时)|[Cc]\d{4,12}|最近|近|过去|本月|上个?月|这个?月|本周|上周|这周|今天|昨天|"
    r"前天|今年|去年|本季度|上季度|客户|客服|业务|渠道|会话|问题|等级|[的上里中在和与及跟了吗呢]"
)


def has_word(text: str, word: str) -> bool:
    """``word`` in ``text``; a Latin word only at a word start ("refund" is not "fund")."""
    if not word.isascii():
        return word in text
    return re.search(r"(?<![a-z])" + re.escape(word), text) is not None


def pick(text: str, table: dict[str, tuple[str, ...]]) -> str | None:
    t = text.lower()
    return next((key for key, words in table.items() if any(has_word(t, w) for w in words)), None)


def business_line(text: str) -> str | None:
    """The business line a message names (gold card is a tier, not gold)."""
    t = re.sub(r"gold[\s-]*(?:card|tier|customer|member)s?", " ", text.lower())
    return pick(t, LINES)


def channel(text: str) -> str | None:
    return pick(text, CHANNELS)


def tier(text: str) -> str | None:
    return next((x for x in TIERS if x in text), None) or pick(text, TIER_WORDS_EN)


def customer_id(text: str) -> str | None:
    m = _CUSTOMER.search(text) or _CUSTOMER_NUMBER.search(text)
    return f"C{m.group(1)}" if m else None


def unknown_line(text: str) -> str | None:
    """A business line the data does not hold (股票, 期权业务), when the message names no known one."""
    t = text.lower()
    if business_line(t) is not None:
        return None
    named = next((w for w in UNSUPPORTED if has_word(t, w)), None)
    if named:
        return named
    for m in _SOME_LINE.finditer(text):
        name = _FILLER.sub("", m.group(1))
        if len(name) >= 2 and not any(w in name for w in _NOT_A_LINE):
            return name
    return None


def _named_topics(text: str) -> list[str]:
    found = [w for w in TOPICS if w in text]
    t = text.lower()
    english = sorted(((w, cn) for cn, words in TOPICS_EN.items() for w in words), key=lambda p: -len(p[0]))
    for word, cn in english:  # the longest phrase first: "annual fee" is 年费, not also 手续费
        if has_word(t, word):
            t = t.replace(word, " ")
            found += [cn] if cn not in found else []
    return found


def topics(text: str) -> list[str]:
    """The topic keywords of a message: the known topics it names, else the term it asks about
    (关于债券的会话 → 债券) once filters, dates and filler are taken out of it."""
    named = _named_topics(text)
    if named:
        return named
    candidates = [m.group(1) for pattern in _ABOUT for m in pattern.finditer(text)]
    candidates += [m.group(1) for m in _ABOUT_EN.finditer(text)]
    for raw in candidates:
        term = raw
        for words in (*LINES.values(), *CHANNELS.values(), TIERS):
            for w in sorted(words, key=len, reverse=True):
                if not w.isascii():
                    term = term.replace(w, " ")
        term = _NOT_TOPIC.sub(" ", term).strip()
        parts = [p for p in term.split() if len(p) >= 2]
        if parts:
            return [max(parts, key=len)]
    return []
