"""What sets a slice of conversations apart: the terms that only restate how the slice was chosen,
and the terms that stand out against the same filters one period earlier and against the rest of
the same period — lift, not raw frequency. Pure functions over counts; both analyses
(``analysis.analyze`` over records, ``indexed_analysis.analyze_indexed`` over the keyword index)
call them with the same counts, so they give the same answer.

A term *defines* the slice when it is one of the query's keywords (or a token of one) — "规则调整"
is in nearly every conversation of a slice chosen by 规则调整, by construction — or the name of a
channel or business line ("app", "贵金属"), which says where a conversation came from, not what it
is about. Such terms are left out of the keywords and of the distinctive terms and listed under
``excluded`` with the reason.

The references: the *previous period* is the same filters over the window of equal length just
before (only when the slice has a start and an end); *the rest* is every other conversation of
the same period (only when the slice has a start or an end and is narrower than its period). A
term is *distinctive* when it is mentioned by at least ``MIN_DOCUMENTS`` conversations and
``MIN_SHARE`` of the slice, and against each reference there is its share is at least
``MIN_LIFT`` times the reference's and the difference is no accident of small numbers (Dunning's
log-likelihood G² of the two counts at least ``MIN_G2``, p < 0.01). Shares are smoothed (one
mention and two conversations added), so a term absent from a small reference gets a large but
finite lift. Distinctive terms are ranked by ``share × log2(lift)`` with the smaller of the two
lifts: a term must stand out against both, and a term many customers mention comes before a rarer
one with the same lift.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

from tether.packs.finance_cs.query import SessionQuery

MIN_DOCUMENTS = 5
MIN_SHARE = 0.02
MIN_LIFT = 1.5
MIN_G2 = 6.63  # chi-squared, one degree of freedom, p = 0.01
TOP_DISTINCTIVE = 10

CHANNEL_NAMES: dict[str, tuple[str, ...]] = {
    "app": ("手机银行",),
    "web": ("网银",),
    "phone": ("电话",),
    "wechat": ("微信",),
}
LINE_NAMES: dict[str, tuple[str, ...]] = {
    "precious-metal": ("贵金属",),
    "forex": ("外汇",),
    "fund": ("基金",),
    "credit-card": ("信用卡",),
    "wealth": ("理财",),
}
REASONS = {"query": "查询条件", "channel": "渠道名", "businessLine": "业务线名"}


def _names(table: Mapping[str, tuple[str, ...]], reason: str) -> dict[str, str]:
    return {word.lower(): reason for code, words in table.items() for word in (code, *words)}


_GROUP_NAMES = _names(LINE_NAMES, "businessLine") | _names(CHANNEL_NAMES, "channel")


def defining_terms(query: SessionQuery, cut: Callable[[str], Iterable[str]]) -> dict[str, str]:
    """{term: reason} for the terms that say how the slice was chosen or where a conversation came
    from: the query's keywords and their tokens (``cut``: ``Segmenter.cut``), channel and business
    line names."""
    terms = dict(_GROUP_NAMES)
    for keyword in query.keywords:
        for term in {keyword.strip().lower(), *cut(keyword)}:
            terms[term] = "query"
    return terms


def previous_query(query: SessionQuery) -> SessionQuery | None:
    """The same filters over the window of equal length just before (None without both bounds)."""
    if query.start_time is None or query.end_time is None:
        return None
    span = query.end_time - query.start_time
    before = {"start_time": query.start_time - span, "end_time": query.start_time - timedelta(seconds=1)}
    return query.model_copy(update=before)


def period_query(query: SessionQuery) -> SessionQuery | None:
    """Every conversation of the slice's period (None when the slice has no time bound, or is
    the whole period already: then there is no rest to compare with)."""
    if query.start_time is None and query.end_time is None:
        return None
    period = SessionQuery(start_time=query.start_time, end_time=query.end_time)
    narrower = query.keywords or any(
        v is not None for v in (query.business_line, query.channel, query.customer_id, query.customer_tier)
    )
    return period if narrower else None


def span_query(query: SessionQuery) -> SessionQuery:
    """The time window that holds the slice and both references (for indexing what is missing)."""
    previous = previous_query(query)
    if previous is None and period_query(query) is None:
        return query
    start = previous.start_time if previous is not None else query.start_time
    return SessionQuery(start_time=start, end_time=query.end_time)


def candidates(df: Mapping[str, int], n: int, excluded: Mapping[str, str]) -> list[str]:
    """The terms that may be distinctive: mentioned often enough, not defining the slice (sorted)."""
    floor = max(MIN_DOCUMENTS, MIN_SHARE * n)
    return sorted(t for t, c in df.items() if c >= floor and t not in excluded)


def _smoothed(documents: int, n: int) -> float:
    return (documents + 1) / (n + 2)


def log_likelihood(documents: int, n: int, ref_documents: int, ref_n: int) -> float:
    """Dunning's G² for a term mentioned by ``documents`` of ``n`` conversations here and by
    ``ref_documents`` of ``ref_n`` in a reference (the keyness statistic of corpus linguistics)."""
    both = documents + ref_documents
    g2 = 0.0
    for observed, size in ((documents, n), (ref_documents, ref_n)):
        expected = size * both / (n + ref_n)
        if observed:
            g2 += observed * math.log(observed / expected)
    return 2 * g2


def distinctive(
    df: Mapping[str, int],
    n: int,
    references: Mapping[str, tuple[Mapping[str, int], int]],
    excluded: Mapping[str, str],
    top: int = TOP_DISTINCTIVE,
) -> list[dict[str, Any]]:
    """The slice's distinctive terms, best first. ``references``: {name: (document frequency per
    term, conversations)} for the references there are ("previous", "rest"), each with at least one
    conversation; a term a reference's counts lack has no mention there."""
    if not references or n == 0:
        return []
    ranked = []
    for term in candidates(df, n, excluded):
        share = _smoothed(df[term], n)
        against = {}
        for name, (ref_df, ref_n) in references.items():
            documents = ref_df.get(term, 0)
            against[name] = (documents, ref_n, share / _smoothed(documents, ref_n))
        lift = min(v[2] for v in against.values())
        certain = all(log_likelihood(df[term], n, d, r) >= MIN_G2 for d, r, _ in against.values())
        if lift >= MIN_LIFT and certain:
            ranked.append((-df[term] / n * math.log2(lift), term, lift, against))
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [
        {
            "keyword": term,
            "documents": df[term],
            "share": round(df[term] / n, 4),
            "lift": round(lift, 2),
            "score": round(-score, 4),
            **{
                name: {"documents": documents, "share": round(documents / ref_n, 4), "lift": round(each, 2)}
                for name, (documents, ref_n, each) in against.items()
            },
        }
        for score, term, lift, against in ranked[:top]
    ]


def excluded_terms(df: Mapping[str, int], n: int, excluded: Mapping[str, str]) -> list[dict[str, Any]]:
    """The defining terms the slice mentions, most mentioned first, with why they were left out."""
    present = sorted((-df[t], t) for t in excluded if df.get(t))
    return [
        {"keyword": t, "reason": excluded[t], "documents": -c, "share": round(-c / n, 4) if n else 0.0}
        for c, t in present
    ]


def describe(query: SessionQuery, previous_n: int | None, rest_channels: Mapping[str, int] | None) -> dict[str, Any]:
    """The references as the result states them: the previous window and its conversations, the
    rest's conversations and how many came by each channel (None where there is no such
    reference; ``rest_channels``: the rest's conversations per channel)."""
    previous = previous_query(query)
    rest = None
    if rest_channels is not None:
        channels = dict(sorted(((str(c), v) for c, v in rest_channels.items() if v), key=lambda i: (-i[1], i[0])))
        rest = {"documents": sum(channels.values()), "byChannel": channels}
    return {
        "previous": None
        if previous is None or previous_n is None
        else {
            "start": previous.start_time.isoformat() if previous.start_time else None,
            "end": previous.end_time.isoformat() if previous.end_time else None,
            "documents": previous_n,
        },
        "rest": rest,
    }
