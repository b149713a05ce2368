"""The keyword analysis from the keyword index: the same result as ``analysis.analyze`` over the
slice's records, computed by aggregate queries in the database (SQLite, PostgreSQL, MariaDB).

The request path reads the slice's rows of ``cs_indexed_session`` / ``cs_session_keyword``
(``keyword_index``), grouped: document frequency per keyword, documents per (day, channel,
tier), mentions of the top keywords per (day, channel, tier, keyword), each conversation's set
of top keywords as a bit mask (a SUM of CASEs): conversations per mask give the keyword pairs,
and the best few conversations per mask of the top 10 (ROW_NUMBER) give the quotes. The
distinctive terms' references (``contrast``) cost little more: the previous period (the slice's
filters one window back) is counted in the same scans as the slice's documents and keywords
(grouped by which window a row falls in, so a keyword filter's semi-join runs once), and the rest
of the period is one count and one ``GROUP BY keyword`` over the candidate terms only (the whole
period's counts less the slice's). Only the
quoted conversations (at most 30) are read from ``customer_session``, and the tag lists are
grouped there. No text is segmented here, except rows of the slice that have no index entry
yet: they are indexed first (over the slice's window, references included), so none is
silently missing.

A slice is a ``SessionQuery`` plus ``max_id`` (a result handle's newest id, so rows written
after the handle are left out, as the handle's own ids would). Its exact filters (business
line, channel, tier, time) apply to the index's own copies of those columns; keyword and
customer filters become a semi-join on ``customer_session``. All reads share one transaction,
a consistent snapshot on PostgreSQL and MariaDB.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime
from itertools import combinations
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from tether.packs.finance_cs import analysis as an
from tether.packs.finance_cs import contrast
from tether.packs.finance_cs.data import (
    CustomerSessionRepo,
    Filters,
    SessionDataError,
    customer_session,
    slice_conditions,
)
from tether.packs.finance_cs.keyword_index import index_pending
from tether.packs.finance_cs.query import SessionQuery, parse_query
from tether.packs.finance_cs.state import indexed_sessions, session_keywords

QUOTED_KEYWORDS = 10  # the quotes cover the top 10 keywords (as analyze does)
_EPOCH = datetime(1970, 1, 1)


def _source_conditions(query: SessionQuery, max_id: int | None) -> list[sa.ColumnElement[bool]]:
    conds = slice_conditions(query)
    if max_id is not None:
        conds.append(customer_session.c.id <= max_id)
    return conds


def _index_conditions(
    table: sa.Table | Any, query: SessionQuery, max_id: int | None, *, semi_join: bool = True
) -> list[sa.ColumnElement[bool]]:
    """The slice on an index table, through its copies of the filtered columns (``semi_join``:
    and through ``customer_session`` for the filters the index lacks)."""
    c = table.c
    conds: list[sa.ColumnElement[bool]] = []
    exact = ((c.business_line, query.business_line), (c.channel, query.channel), (c.customer_tier, query.customer_tier))
    conds.extend(column == value for column, value in exact if value is not None)
    if query.start_time is not None:
        conds.append(c.occurred_at >= query.start_time)
    if query.end_time is not None:
        conds.append(c.occurred_at <= query.end_time)
    if max_id is not None:
        conds.append(c.conversation_id <= max_id)
    if semi_join and (query.keywords or query.customer_id is not None):  # not in the index
        conds.append(c.conversation_id.in_(sa.select(customer_session.c.id).where(*slice_conditions(query))))
    return conds


_SPLITS = (("channel", "byChannel"), ("tier", "byTier"))


def _group(value: Any) -> str:
    return str(value or "unknown")


def _day(value: Any) -> date:
    return value if isinstance(value, date) and not isinstance(value, datetime) else date.fromisoformat(str(value)[:10])


def _counts(conn: Connection, stmt: sa.Select[Any]) -> dict[Any, int]:
    """{group key (a value, or a tuple of values): count} of a grouped SELECT ending in a count."""
    out: dict[Any, int] = {}
    for row in conn.execute(stmt):
        *key, n = row
        out[key[0] if len(key) == 1 else tuple(key)] = int(n)
    return out


def analyze_indexed(
    engine: Engine,
    filters: Filters,
    *,
    max_id: int | None = None,
    top_n: int = 20,
    series: int = 8,
    quotes_per_keyword: int = 3,
    segmenter: an.Segmenter | None = None,
    writer: Engine | None = None,
) -> dict[str, Any]:
    """``analysis.analyze`` of the ``customer_session`` rows selected by ``filters`` (and
    ``id <= max_id``), from the keyword index. ``writer`` indexes rows that lack entries
    (``engine`` by default); every read goes through ``engine``."""
    query = parse_query(filters)
    seg = segmenter or an.default_segmenter()
    # the slice and its references (the previous period, the rest of the period) lie in one window
    index_pending(writer or engine, _source_conditions(contrast.span_query(query), max_id), segmenter=seg)
    try:
        with engine.connect() as conn:
            return _analyze(conn, query, max_id, top_n, series, quotes_per_keyword, seg)
    except SQLAlchemyError as exc:
        raise SessionDataError(f"indexed analysis failed: {exc.__class__.__name__}: {exc}", retryable=True) from exc


def _analyze(
    conn: Connection,
    query: SessionQuery,
    max_id: int | None,
    top_n: int,
    series: int,
    quotes_per_keyword: int,
    seg: an.Segmenter,
) -> dict[str, Any]:
    d, k = indexed_sessions, session_keywords
    in_keys = _index_conditions(k, query, max_id)
    count = sa.func.count()
    # documents per (day, channel, tier): the trend's totals and both splits' sizes, and the
    # document frequency per keyword, each one scan (over the previous period too, in passing)
    docs, before_docs = _with_previous(conn, d, ("day", "channel", "customer_tier"), query, max_id)
    n = sum(docs.values())
    df, before_df = _with_previous(conn, k, ("keyword",), query, max_id)
    excluded = contrast.defining_terms(query, seg.cut)
    against: dict[str, tuple[dict[str, int], int]] = {}
    n_before = None if before_docs is None else sum(before_docs.values())
    if n_before:
        against["previous"] = (before_df or {}, n_before)
    by_channel: Counter[str] = Counter()
    for (_, channel, _), c in docs.items():
        by_channel[_group(channel)] += c
    rest = _rest(conn, query, max_id, df, by_channel, contrast.candidates(df, n, excluded), against)
    references = contrast.describe(query, n_before, rest)
    if n == 0:
        return an.empty_result(seg, references)
    keywords = an.rank_keywords({t: c for t, c in df.items() if t not in excluded}, n, seg, top_n)
    names = [kw["keyword"] for kw in keywords]
    # mentions of the top keywords per (day, channel, tier, keyword), one scan
    key_cells = (k.c.day, k.c.channel, k.c.customer_tier, k.c.keyword)
    hits = _counts(conn, sa.select(*key_cells, count).where(*in_keys, k.c.keyword.in_(names)).group_by(*key_cells))
    per_day: Counter[date] = Counter()
    sizes: dict[str, Counter[str]] = {"channel": Counter(), "tier": Counter()}
    for (day, channel, tier), c in docs.items():
        per_day[_day(day)] += c
        sizes["channel"][_group(channel)] += c
        sizes["tier"][_group(tier)] += c
    trend_hits: Counter[tuple[date, str]] = Counter()
    split_hits: dict[str, Counter[tuple[str, str]]] = {"channel": Counter(), "tier": Counter()}
    trended = set(names[:series])
    for (day, channel, tier, kw), c in hits.items():
        if kw in trended:
            trend_hits[(_day(day), kw)] += c
        split_hits["channel"][(_group(channel), kw)] += c
        split_hits["tier"][(_group(tier), kw)] += c
    splits = {key: an.split_from_counts(sizes[dim], split_hits[dim], names) for dim, key in _SPLITS}
    return {
        "documents": n,
        "period": {"start": min(per_day).isoformat(), "end": max(per_day).isoformat()},
        "method": an.method(seg),
        "keywords": keywords,
        "excluded": contrast.excluded_terms(df, n, excluded),
        "distinctive": contrast.distinctive(df, n, against, excluded),
        "contrast": references,
        "trend": an.trend_from_counts(per_day, trend_hits, names[:series]),
        "byChannel": splits["byChannel"],
        "byTier": splits["byTier"],
        "cooccurrence": an.pairs_from_counts(df, _pairs(conn, query, max_id, names), names),
        "quotes": _quotes(conn, query, max_id, names[:QUOTED_KEYWORDS], quotes_per_keyword),
        "tags": an.tags_from_counts(_tag_lists(conn, query, max_id)),
    }


def _with_previous(
    conn: Connection, table: sa.Table, cells: Sequence[str], query: SessionQuery, max_id: int | None
) -> tuple[dict[Any, int], dict[Any, int] | None]:
    """Rows of an index table grouped by ``cells`` and counted: over the slice, and over its
    previous period (the slice's filters one window back: ``contrast.previous_query``), None where
    there is none. One scan of both windows, so a keyword filter's semi-join is evaluated once."""
    previous = contrast.previous_query(query)
    if previous is None:
        columns = [table.c[name] for name in cells]
        stmt = sa.select(*columns, sa.func.count()).where(*_index_conditions(table, query, max_id))
        return _counts(conn, stmt.group_by(*columns)), None
    c = table.c
    side = sa.case((c.occurred_at >= query.start_time, 1), (c.occurred_at <= previous.end_time, 0))
    wide = query.model_copy(update={"start_time": previous.start_time})
    inner = (
        sa.select(*(c[name] for name in cells), side.label("side"))
        .where(*_index_conditions(table, wide, max_id))
        .subquery("sides")
    )
    grouped = [inner.c[name] for name in cells]
    stmt = sa.select(*grouped, inner.c.side, sa.func.count()).where(inner.c.side.is_not(None))
    now: dict[Any, int] = {}
    before: dict[Any, int] = {}
    for key, n in _counts(conn, stmt.group_by(*grouped, inner.c.side)).items():
        *cell, flag = key
        (now if int(flag) == 1 else before)[cell[0] if len(cell) == 1 else tuple(cell)] = n
    return now, before


def _rest(
    conn: Connection,
    query: SessionQuery,
    max_id: int | None,
    df: dict[str, int],
    by_channel: Counter[str],
    terms: Sequence[str],
    against: dict[str, tuple[dict[str, int], int]],
) -> dict[str, int] | None:
    """The rest of the slice's period (None where there is none): its conversations per channel,
    counted as the whole period's less the slice's (``by_channel``; the slice lies in its period).
    When it has some, its mentions of ``terms`` go into ``against`` as the reference "rest"."""
    period = contrast.period_query(query)
    if period is None:
        return None
    d, k = indexed_sessions, session_keywords
    count = sa.func.count()
    whole = _counts(
        conn, sa.select(d.c.channel, count).where(*_index_conditions(d, period, max_id)).group_by(d.c.channel)
    )
    per_channel: Counter[str] = Counter()
    for channel, c in whole.items():
        per_channel[_group(channel)] += c
    rest = {channel: c - by_channel.get(channel, 0) for channel, c in per_channel.items()}
    size = sum(rest.values())
    if size > 0 and terms:
        in_terms = (*_index_conditions(k, period, max_id), k.c.keyword.in_(terms))
        mentions = _counts(conn, sa.select(k.c.keyword, count).where(*in_terms).group_by(k.c.keyword))
        against["rest"] = ({t: c - df.get(t, 0) for t, c in mentions.items()}, size)
    return rest


def _masks(query: SessionQuery, max_id: int | None, top: Sequence[str]) -> sa.Subquery:
    """Per conversation of the slice that mentions one of ``top``: which, as a bit mask (bit i:
    ``top[i]``), by one GROUP BY over the slice's index rows."""
    k = session_keywords
    bit = sa.case(*((k.c.keyword == kw, 1 << i) for i, kw in enumerate(top)), else_=0)
    return (
        sa.select(k.c.conversation_id, sa.func.sum(bit).label("mask"))
        .where(*_index_conditions(k, query, max_id), k.c.keyword.in_(top))
        .group_by(k.c.conversation_id)
        .subquery("masks")
    )


def _pairs(
    conn: Connection, query: SessionQuery, max_id: int | None, names: Sequence[str]
) -> dict[tuple[str, str], int]:
    """Conversations per keyword pair (a before b in ``names``): conversations per set of top
    keywords (a few hundred sets), each set's pairs counted in Python — no self-join."""
    if len(names) < 2:
        return {}
    masks = _masks(query, max_id, names)
    out: Counter[tuple[str, str]] = Counter()
    for mask, n in conn.execute(sa.select(masks.c.mask, sa.func.count()).group_by(masks.c.mask)):
        present = [kw for i, kw in enumerate(names) if int(mask) & (1 << i)]
        for pair in combinations(present, 2):
            out[pair] += int(n)
    return dict(out)


def _quotes(
    conn: Connection, query: SessionQuery, max_id: int | None, top: Sequence[str], per_keyword: int
) -> dict[str, list[dict[str, Any]]]:
    """``analysis.representative_quotes``: conversations with the same set of top keywords (a
    gist, here a bit mask) count as one, so per mask only the best ``len(top) * per_keyword + 1``
    by (fit, newest, id) can ever be chosen (an unused one is among them)."""
    if not top:
        return {}
    d = indexed_sessions
    masks = _masks(query, max_id, top)
    order = (d.c.quote_fit, d.c.occurred_at.desc(), masks.c.conversation_id)
    ranked = (
        sa.select(
            masks.c.conversation_id,
            masks.c.mask,
            d.c.quote_fit,
            d.c.occurred_at,
            sa.func.row_number().over(partition_by=masks.c.mask, order_by=order).label("place"),
        )
        .join_from(masks, d, d.c.conversation_id == masks.c.conversation_id)
        .subquery("ranked")
    )
    keep = len(top) * per_keyword + 1
    stmt = sa.select(ranked.c.mask, ranked.c.conversation_id, ranked.c.quote_fit, ranked.c.occurred_at).where(
        ranked.c.place <= keep
    )
    candidates: dict[int, list[tuple[int, int, float]]] = {}  # mask -> [(id, fit, -seconds)], best first
    for mask, cid, fit, occurred in conn.execute(stmt.order_by(ranked.c.mask, ranked.c.place)):
        seconds = (occurred - _EPOCH).total_seconds() if isinstance(occurred, datetime) else 0.0
        candidates.setdefault(int(mask), []).append((int(cid), int(fit), -seconds))
    used: set[int] = set()
    chosen: dict[str, list[int]] = {}
    for i, kw in enumerate(top):
        heads = []
        for mask, cands in candidates.items():
            if mask & (1 << i):
                head = next((c for c in cands if c[0] not in used), cands[0])
                heads.append((head[0] in used, -mask.bit_count(), head[1], head[2], head[0]))
        heads.sort()
        chosen[kw] = [h[4] for h in heads[:per_keyword]]
        used.update(chosen[kw])
    wanted = sorted({cid for ids in chosen.values() for cid in ids})
    records = {r["id"]: r for r in CustomerSessionRepo(conn.engine).fetch_by_ids(wanted)} if wanted else {}
    return {
        kw: [
            an.quote(records[cid], str(records[cid].get("userMessage") or "").strip()) for cid in ids if cid in records
        ]
        for kw, ids in chosen.items()
    }


def _tag_lists(conn: Connection, query: SessionQuery, max_id: int | None) -> Counter[str]:
    """Conversations per tag list, as written (binary comparison on MySQL/MariaDB)."""
    tags = customer_session.c.tags
    column = tags.collate("utf8mb4_bin") if conn.dialect.name in ("mysql", "mariadb") else tags
    stmt = sa.select(column, sa.func.count()).where(*_source_conditions(query, max_id)).group_by(column)
    return Counter({str(t or ""): int(n) for t, n in conn.execute(stmt)})
