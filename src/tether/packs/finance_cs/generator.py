"""Deterministic demo data for ``customer_session``: realistic Chinese support conversations.

``generate_rows`` builds the rows in memory (pure; the same arguments give the same rows) and
``generate`` bulk-inserts them. Conversations are composed from the topic templates in
``phrasebook``: an optional greeting and context, one or two topic sentences (a quarter of them
with a second topic), and a calm or complaining closer; the agent reply mirrors the topic. A few
customer messages carry a typo (帐户, 登陆, 保正金…). Customers come from a fixed pool (each with
one tier; a few customers call often); times follow weekdays (weekends are quieter) and hours.

Planted signal (the surge a correct analysis must find), with W = min(30, days):

- ``round(rows * 0.06)`` of the rows (1,200 of the default 20,000) are surge conversations, all
  business line ``precious-metal`` and all within the last W days before ``now`` (``occurred_at >= now - W days``);
  their daily intensity ramps linearly from 1x on the first day of the window to 2x on the last.
- Each is a 规则调整 + 保证金 complaint from ``phrasebook.SURGE_ASKS`` (every template mentions
  both words and the App; like any message, 8% get a typo, so a few write 保正金), tagged
  ``规则调整,保证金,投诉``, answered from ``SURGE_REPLIES``.
- Channel ``app`` with probability 0.7, else web, phone or wechat (0.1 each); the baseline mix is
  app 0.38, web 0.18, phone 0.24, wechat 0.20.
- Outside the window the surge templates are never used; baseline precious-metal traffic has
  规则调整 in about 7% and 保证金 in about 17% of conversations (tags), evenly over time.

The rest of the rows (the baseline) spread over all ``days`` days. Session codes are
``CS<yyyymmdd><4-digit sequence of that day>``; rows are inserted in time order and, where the
pack's tables exist (its migrations have run), segmented into the keyword index right away.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import accumulate
from typing import Any

from sqlalchemy.engine import Engine

from tether.packs.finance_cs import phrasebook as pb
from tether.packs.finance_cs.data import CustomerSessionRepo, create_schema
from tether.packs.finance_cs.keyword_index import index_pending, index_ready
from tether.packs.finance_cs.query import BUSINESS_LINES, CHANNELS, CUSTOMER_TIERS

SURGE_SHARE = 0.06
SURGE_DAYS = 30
SURGE_CHANNEL_WEIGHTS = (0.7, 0.1, 0.1, 0.1)  # in CHANNELS order: app, web, phone, wechat
CHANNEL_WEIGHTS = (0.38, 0.18, 0.24, 0.20)
LINE_WEIGHTS = (0.24, 0.14, 0.22, 0.26, 0.14)  # in BUSINESS_LINES order
TIER_WEIGHTS = (0.5, 0.2, 0.15, 0.1, 0.05)  # 普通, 金卡, 白金, 钻石, 高净值
HOUR_WEIGHTS = (2, 1, 1, 0, 0, 0, 1, 2, 5, 9, 10, 10, 8, 8, 9, 9, 8, 7, 6, 6, 7, 8, 6, 4)
TYPO_RATE = 0.08
SECOND_TOPIC_RATE = 0.25

_TOPICS_BY_LINE: dict[str, tuple[list[pb.Topic], list[float]]] = {
    line: (
        [t for t in pb.TOPICS if line in t.lines],
        [t.lines[line] for t in pb.TOPICS if line in t.lines],
    )
    for line in BUSINESS_LINES
}


class _Composer:
    """Draws every random choice from one ``random.Random`` so the output depends on the seed only."""

    def __init__(self, rng: random.Random, now: datetime) -> None:
        self.rng = rng
        self.now = now
        n_customers = 400
        self.customers = [(f"C{100001 + i}", rng.choices(CUSTOMER_TIERS, TIER_WEIGHTS)[0]) for i in range(n_customers)]
        self.agents = [f"A{20001 + i}" for i in range(60)]

    def customer(self) -> tuple[str, str]:
        # A skewed pick: low indexes (frequent callers) come up far more often.
        index = int(len(self.customers) * self.rng.random() ** 1.8)
        return self.customers[index]

    def slots(self, line: str) -> dict[str, str]:
        r = self.rng
        pct = r.choice((5, 6, 7, 8, 9, 10, 12))
        return {
            "product": r.choice(pb.PRODUCTS[line]),
            "amount": r.choice(("5000元", "2万", "3万块", "10万元", "8,000元", "1200元", "50万")),
            "pct": f"{pct}%",
            "pct2": f"{pct + r.choice((2, 3, 4, 5))}%",
            "rate": r.choice(("0.1%", "0.15%", "0.3%", "0.5%", "1.2%")),
            "when": r.choice(pb.WHEN),
            "days": str(r.choice((1, 2, 3, 5))),
            "fee": f"{r.randint(3, 300)}.{r.randint(0, 99):02d}",
            "points": str(r.choice((2, 5, 8, 1000, 2000, 5000))),
            "quota": str(r.choice((10000, 20000, 50000, 80000))),
            "date": _month_day(self.now - timedelta(days=r.randint(20, 34))),
        }

    def typo(self, text: str) -> str:
        if self.rng.random() >= TYPO_RATE:
            return text
        candidates = [pair for pair in pb.TYPOS if pair[0] in text]
        if not candidates:
            return text
        right, wrong = self.rng.choice(candidates)
        return text.replace(right, wrong, 1)

    def conversation(self, line: str) -> tuple[str, str, list[str]]:
        r = self.rng
        topics, weights = _TOPICS_BY_LINE[line]
        main = r.choices(topics, weights)[0]
        chosen = [main]
        if r.random() < SECOND_TOPIC_RATE:
            other = r.choices(topics, weights)[0]
            if other is not main:
                chosen.append(other)
        complaint = r.random() < main.complaint_rate
        length = r.random()
        pairs = [r.choice(t.pairs) for t in chosen]
        if length > 0.8:
            pairs.append(r.choice([p for p in main.pairs if p != pairs[0]]))
        asks = [ask for ask, _ in pairs]
        opener = "" if length < 0.3 else r.choice(pb.GREETINGS) + r.choice(pb.CONTEXTS)
        closer = r.choice(pb.COMPLAINT_CLOSERS if complaint else pb.CALM_CLOSERS)
        message = opener + "".join(asks) + ("" if length < 0.15 else closer)
        replies = [answer for _, answer in pairs]
        apology = r.choice(pb.REPLY_APOLOGIES) if complaint else ""
        reply = r.choice(pb.REPLY_OPENERS) + apology + "".join(replies) + r.choice(pb.REPLY_CLOSERS)
        tags = [t.name for t in chosen] + ["投诉" if complaint else "咨询"]
        return message, reply, tags

    def surge(self) -> tuple[str, str, list[str]]:
        r = self.rng
        message = r.choice(pb.GREETINGS) + r.choice(pb.SURGE_ASKS)
        if r.random() < 0.5:
            message += r.choice(pb.COMPLAINT_CLOSERS)
        reply = r.choice(pb.REPLY_OPENERS) + r.choice(pb.REPLY_APOLOGIES) + r.choice(pb.SURGE_REPLIES)
        return message, reply, list(pb.SURGE_TAGS)

    def moment(self, cum_weights: Sequence[float], first_day: datetime, earliest: datetime) -> datetime:
        while True:
            day = self.rng.choices(range(len(cum_weights)), cum_weights=cum_weights)[0]
            hour = self.rng.choices(range(24), HOUR_WEIGHTS)[0]
            at = first_day + timedelta(
                days=day, hours=hour, minutes=self.rng.randrange(60), seconds=self.rng.randrange(60)
            )
            if earliest <= at <= self.now:
                return at


def _month_day(at: datetime) -> str:
    return f"{at.month}月{at.day}日"


def _day_weights(first_day: datetime, n_days: int, ramp: bool) -> list[float]:
    """Cumulative weights per day: weekends at 0.7, or (``ramp``) rising linearly from 1 to 2."""
    weights = []
    for i in range(n_days):
        weekday = (first_day + timedelta(days=i)).weekday()
        base = 0.7 if weekday >= 5 else 1.0
        weights.append(1.0 + i / max(n_days - 1, 1) if ramp else base)
    return list(accumulate(weights))


def generate_rows(
    rows: int = 20000, days: int = 180, seed: int = 7, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Build ``rows`` conversations over the ``days`` days up to ``now`` (column names as keys)."""
    if rows < 1 or days < 1:
        raise ValueError("rows and days must be at least 1")
    now = (now or datetime.now()).replace(microsecond=0, tzinfo=None)
    rng = random.Random(seed)
    composer = _Composer(rng, now)
    window = min(SURGE_DAYS, days)
    n_surge = round(rows * SURGE_SHARE)
    start = now - timedelta(days=days)
    first_day = start.replace(hour=0, minute=0, second=0)
    base_weights = _day_weights(first_day, days + 1, ramp=False)
    surge_start = now - timedelta(days=window)
    surge_first = surge_start.replace(hour=0, minute=0, second=0)
    surge_weights = _day_weights(surge_first, window + 1, ramp=True)

    drafts: list[dict[str, Any]] = []
    for i in range(rows):
        surge = i < n_surge
        line = "precious-metal" if surge else rng.choices(BUSINESS_LINES, LINE_WEIGHTS)[0]
        message, reply, tags = composer.surge() if surge else composer.conversation(line)
        slots = composer.slots(line)
        customer_id, tier = composer.customer()
        channel_weights = SURGE_CHANNEL_WEIGHTS if surge else CHANNEL_WEIGHTS
        at = (
            composer.moment(surge_weights, surge_first, surge_start)
            if surge
            else composer.moment(base_weights, first_day, start)
        )
        drafts.append(
            {
                "channel": rng.choices(CHANNELS, channel_weights)[0],
                "customer_id": customer_id,
                "customer_tier": tier,
                "agent_id": rng.choice(composer.agents),
                "business_line": line,
                "user_message": composer.typo(message.format_map(slots)),
                "agent_reply": reply.format_map(slots),
                "tags": ",".join(dict.fromkeys(tags)),
                "occurred_at": at,
            }
        )
    drafts.sort(key=lambda d: d["occurred_at"])
    per_day: dict[str, int] = {}
    for draft in drafts:
        day = draft["occurred_at"].strftime("%Y%m%d")
        per_day[day] = per_day.get(day, 0) + 1
        draft["session_code"] = f"CS{day}{per_day[day]:04d}"
    return drafts


def generate(engine: Engine, rows: int = 20000, days: int = 180, seed: int = 7, now: datetime | None = None) -> int:
    """Create the table if needed and insert the generated rows; returns how many were written.

    It appends: run it on an empty table to get exactly the documented data set. The new rows
    are indexed for the keyword analysis when the index tables exist.
    """
    create_schema(engine)
    written = CustomerSessionRepo(engine).insert_many(generate_rows(rows, days, seed, now))
    if index_ready(engine):
        index_pending(engine)
    return written
