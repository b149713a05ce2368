"""Keyword analysis of customer-session records: pure functions from records to a JSON-able dict.

Segmentation is jieba (precise mode, HMM off so unknown runs never become made-up words) on a
private ``jieba.Tokenizer`` extended with the finance lexicon ``resources/finance_dict.txt``;
tokens are dropped when they are stop words (``resources/stopwords.txt``), single characters,
numbers or punctuation. ASCII tokens are lower-cased (``App`` → ``app``).

Keyword extraction is TF-IDF against a reference corpus: a term's TF is the share of analysed
conversations that mention it (document frequency, so one long message cannot dominate) and its
IDF comes from jieba's reference table (``jieba/analyse/idf.txt``, a general Chinese corpus), so
words that are common in everyday Chinese rank low and domain words rank high; lexicon words the
table lacks get its median IDF. TextRank is not used.
Terms that only restate how the slice was chosen (its query keywords) or name a channel or business
line are left out of the keywords; the distinctive terms (``contrast``) compare the slice with the
previous period and the rest of its period when the caller passes those conversations.

The tokenizer and IDF table are loaded once, lazily and without log output, by ``Segmenter``.
Nothing here reads a database or the network.
"""

from __future__ import annotations

import logging
import re
import statistics
import threading
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any

from tether.packs.finance_cs import contrast
from tether.packs.finance_cs.query import SessionQuery, parse_query

with warnings.catch_warnings():
    # jieba's sources trip invalid-escape warnings when first compiled; they are not ours to fix.
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.simplefilter("ignore", SyntaxWarning)
    import jieba

_RESOURCES = "tether.packs.finance_cs"
_NOISE = re.compile(r"^[\d\W_]+$")
_ASCII = re.compile(r"^[\x00-\x7f]+$")
QUOTE_CHARS = 120


def _resource_lines(name: str) -> list[str]:
    text = (resources.files(_RESOURCES) / "resources" / name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


class Segmenter:
    """jieba with the finance lexicon and stop words, plus the reference IDF table."""

    def __init__(self) -> None:
        self._tokenizer = jieba.Tokenizer()
        logger = logging.getLogger("jieba")
        level = logger.level
        logger.setLevel(logging.WARNING)
        try:
            self._tokenizer.initialize()
            self.lexicon: list[str] = []
            for line in _resource_lines("finance_dict.txt"):
                word, *freq = line.split()
                self._tokenizer.add_word(word, int(freq[0]) if freq else None)
                self.lexicon.append(word)
        finally:
            logger.setLevel(level)
        self.stop_words = frozenset(_resource_lines("stopwords.txt"))
        self.idf, self.median_idf = _load_idf()

    def cut(self, text: str) -> list[str]:
        """The kept tokens of ``text``, in order (repeats included)."""
        tokens = []
        for raw in self._tokenizer.cut(text, HMM=False):
            token = raw.strip()
            if _ASCII.match(token):
                token = token.lower()
            if len(token) < 2 or token in self.stop_words or _NOISE.match(token):
                continue
            tokens.append(token)
        return tokens

    def idf_of(self, term: str) -> float:
        """The term's reference IDF, or the table's median for a term the table lacks."""
        return self.idf.get(term, self.median_idf)


def _load_idf() -> tuple[dict[str, float], float]:
    path = Path(jieba.__file__).parent / "analyse" / "idf.txt"
    table: dict[str, float] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            word, _, value = line.rstrip("\n").partition(" ")
            if value:
                table[word] = float(value)
    return table, statistics.median(table.values())


_lock = threading.Lock()
_shared: list[Segmenter] = []


def default_segmenter() -> Segmenter:
    """The process-wide segmenter, built on first use (about a second) and reused after."""
    with _lock:
        if not _shared:
            _shared.append(Segmenter())
        return _shared[0]


def _day(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str) and len(value) >= 10:
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def _text(record: Mapping[str, Any], fields: Sequence[str]) -> str:
    return "\n".join(str(record.get(name) or "") for name in fields)


def document_frequency(documents: Iterable[set[str]]) -> Counter[str]:
    """Documents mentioning each term."""
    df: Counter[str] = Counter()
    for terms in documents:
        df.update(terms)
    return df


def extract_keywords(documents: Sequence[set[str]], segmenter: Segmenter, top_n: int = 20) -> list[dict[str, Any]]:
    """Top terms by (share of documents mentioning the term) × reference IDF."""
    return rank_keywords(document_frequency(documents), len(documents), segmenter, top_n)


def rank_keywords(df: Mapping[str, int], n: int, segmenter: Segmenter, top_n: int = 20) -> list[dict[str, Any]]:
    """``extract_keywords`` from document frequencies (term -> documents mentioning it) out of ``n``."""
    if n == 0:
        return []
    scored = sorted(((count / n * segmenter.idf_of(term), term) for term, count in df.items()), reverse=True)
    return [
        {"keyword": term, "score": round(score, 4), "documents": df[term], "share": round(df[term] / n, 4)}
        for score, term in scored[:top_n]
    ]


def keyword_trend(
    days: Sequence[date | None], documents: Sequence[set[str]], keywords: Sequence[str]
) -> dict[str, Any]:
    """Documents per day (all, and per keyword) over every day from the first to the last.

    ``change`` compares each keyword's mean daily count over the last 7 days with the days before
    (``ratio`` is None when the earlier mean is zero).
    """
    totals: Counter[date] = Counter()
    hits: Counter[tuple[date, str]] = Counter()
    for day, terms in zip(days, documents, strict=True):
        if day is None:
            continue
        totals[day] += 1
        hits.update((day, kw) for kw in keywords if kw in terms)
    return trend_from_counts(totals, hits, keywords)


def trend_from_counts(
    totals: Mapping[date, int], hits: Mapping[tuple[date, str], int], keywords: Sequence[str]
) -> dict[str, Any]:
    """``keyword_trend`` from counts: documents per day, and per (day, keyword)."""
    if not totals:
        return {"days": [], "documents": [], "series": {}, "change": {}}
    first, last = min(totals), max(totals)
    axis = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    series = {kw: [hits.get((d, kw), 0) for d in axis] for kw in keywords}
    change = {}
    for kw, counts in series.items():
        recent, before = counts[-7:], counts[:-7]
        recent_mean = sum(recent) / len(recent)
        before_mean = sum(before) / len(before) if before else 0.0
        change[kw] = {
            "lastWeekDaily": round(recent_mean, 3),
            "beforeDaily": round(before_mean, 3),
            "ratio": round(recent_mean / before_mean, 3) if before_mean else None,
        }
    documents = [totals.get(d, 0) for d in axis]
    return {"days": [d.isoformat() for d in axis], "documents": documents, "series": series, "change": change}


def split_by(groups: Sequence[str], documents: Sequence[set[str]], keywords: Sequence[str]) -> list[dict[str, Any]]:
    """Per group (channel, tier…): its documents and how many mention each keyword, largest first."""
    sizes: Counter[str] = Counter(groups)
    hits: Counter[tuple[str, str]] = Counter()
    for group, terms in zip(groups, documents, strict=True):
        hits.update((group, kw) for kw in keywords if kw in terms)
    return split_from_counts(sizes, hits, keywords)


def split_from_counts(
    sizes: Mapping[str, int], hits: Mapping[tuple[str, str], int], keywords: Sequence[str]
) -> list[dict[str, Any]]:
    """``split_by`` from counts: documents per group, and per (group, keyword)."""
    return [
        {
            "group": group,
            "documents": size,
            "keywords": {kw: hits.get((group, kw), 0) for kw in keywords},
        }
        for group, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    ]


def cooccurrence(documents: Sequence[set[str]], keywords: Sequence[str], top_pairs: int = 20) -> list[dict[str, Any]]:
    """Keyword pairs mentioned in the same conversation, with counts and Jaccard overlap."""
    single: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    wanted = list(keywords)
    for terms in documents:
        present = [kw for kw in wanted if kw in terms]
        single.update(present)
        pairs.update(combinations(present, 2))
    return pairs_from_counts(single, pairs, wanted, top_pairs)


def pairs_from_counts(
    single: Mapping[str, int], pairs: Mapping[tuple[str, str], int], keywords: Sequence[str], top_pairs: int = 20
) -> list[dict[str, Any]]:
    """``cooccurrence`` from counts: documents per keyword, and per pair (a before b in ``keywords``)."""
    wanted = list(keywords)
    ranked = sorted(pairs.items(), key=lambda item: (-item[1], wanted.index(item[0][0]), wanted.index(item[0][1])))
    return [
        {"a": a, "b": b, "documents": n, "jaccard": round(n / (single[a] + single[b] - n), 4)}
        for (a, b), n in ranked[:top_pairs]
    ]


def representative_quotes(
    records: Sequence[Mapping[str, Any]],
    documents: Sequence[set[str]],
    keywords: Sequence[str],
    per_keyword: int = 3,
    field: str = "userMessage",
) -> dict[str, list[dict[str, Any]]]:
    """Up to ``per_keyword`` distinct customer messages per keyword.

    Preferred, in order: messages not yet quoted for another keyword, that mention more of the top
    keywords, of moderate length (15–80 characters), the newest. Messages that mention the same set
    of top keywords count as one, so the quotes show different angles. The choice is deterministic.
    """
    top = set(keywords)
    used: set[int] = set()
    result: dict[str, list[dict[str, Any]]] = {}
    for kw in keywords:
        candidates = []
        for position, (record, terms) in enumerate(zip(records, documents, strict=True)):
            text = str(record.get(field) or "").strip()
            if kw not in terms or not text:
                continue
            fit = quote_fit(text)
            candidates.append((position in used, -len(terms & top), fit, position, text))
        candidates.sort(key=lambda c: str(records[c[3]].get("occurredAt") or ""), reverse=True)
        candidates.sort(key=lambda c: c[:3])
        seen: set[frozenset[str]] = set()
        quotes = []
        for *_, position, text in candidates:
            gist = frozenset(documents[position] & top)
            if gist in seen:
                continue
            seen.add(gist)
            used.add(position)
            quotes.append(quote(records[position], text))
            if len(quotes) == per_keyword:
                break
        result[kw] = quotes
    return result


def quote_fit(text: str) -> int:
    """0 for a message of moderate length (15-80 characters), which quotes prefer; else 1."""
    return 0 if 15 <= len(text) <= 80 else 1


def quote(record: Mapping[str, Any], text: str) -> dict[str, Any]:
    short = text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"
    occurred = record.get("occurredAt")
    return {
        "id": record.get("id"),
        "sessionCode": record.get("sessionCode"),
        "channel": record.get("channel"),
        "customerTier": record.get("customerTier"),
        "occurredAt": occurred.isoformat() if isinstance(occurred, datetime) else occurred,
        "text": short,
    }


def _tag_counts(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return tags_from_counts(Counter(str(record.get("tags") or "") for record in records))


def tags_from_counts(tag_lists: Mapping[str, int]) -> list[dict[str, Any]]:
    """Documents per tag, from documents per comma-separated tag list."""
    counts: Counter[str] = Counter()
    for tags, n in tag_lists.items():
        for tag in {t.strip() for t in tags.split(",") if t.strip()}:
            counts[tag] += n
    return [{"tag": tag, "documents": n} for tag, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))]


def method(seg: Segmenter, text_fields: Sequence[str] = ("userMessage",)) -> dict[str, Any]:
    """How the keywords were found (part of every analysis result)."""
    return {
        "segmentation": f"jieba precise mode + finance lexicon ({len(seg.lexicon)} words) + stop words",
        "keywords": "TF-IDF: share of conversations mentioning the term x jieba reference IDF; "
        "the query's keywords and channel / business-line names left out",
        "distinctive": f"lift of the term's share against the previous period and the rest of the period "
        f"(each at least {contrast.MIN_LIFT}x; shares smoothed), ranked by share x log2(smaller lift)",
        "fields": list(text_fields),
    }


def empty_result(
    seg: Segmenter, references: dict[str, Any], text_fields: Sequence[str] = ("userMessage",)
) -> dict[str, Any]:
    """The result for a slice without conversations (``references``: ``contrast.describe``'s)."""
    return {
        "documents": 0,
        "period": {"start": None, "end": None},
        "method": method(seg, text_fields),
        "keywords": [],
        "excluded": [],
        "distinctive": [],
        "contrast": references,
        "trend": trend_from_counts({}, {}, []),
        "byChannel": [],
        "byTier": [],
        "cooccurrence": [],
        "quotes": {},
        "tags": [],
    }


def analyze(
    records: Sequence[Mapping[str, Any]],
    top_n: int = 20,
    *,
    text_fields: Sequence[str] = ("userMessage",),
    series: int = 8,
    quotes_per_keyword: int = 3,
    segmenter: Segmenter | None = None,
    query: SessionQuery | Mapping[str, Any] | None = None,
    previous: Sequence[Mapping[str, Any]] | None = None,
    rest: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Analyse camelCase customer-session records (as ``CustomerSessionRepo`` returns them).

    Keywords come from ``text_fields`` (the customer's own words by default). The trend covers the
    top ``series`` keywords; splits, co-occurrence and quotes cover the top ``top_n``. ``query``
    is the slice's filters (its keywords are left out of the keywords; its period places the
    references); ``previous`` and ``rest`` are the conversations of ``contrast.previous_query``
    and of ``contrast.period_query`` outside the slice, the references of the distinctive terms.
    """
    seg = segmenter or default_segmenter()
    q = parse_query(query)
    rest_channels = None if rest is None else Counter(str(r.get("channel") or "unknown") for r in rest)
    references = contrast.describe(q, None if previous is None else len(previous), rest_channels)
    if not records:
        return empty_result(seg, references, text_fields)
    documents = [set(seg.cut(_text(record, text_fields))) for record in records]
    n = len(documents)
    df = document_frequency(documents)
    excluded = contrast.defining_terms(q, seg.cut)
    keywords = rank_keywords({t: c for t, c in df.items() if t not in excluded}, n, seg, top_n)
    against = {
        name: (document_frequency(set(seg.cut(_text(r, text_fields))) for r in others), len(others))
        for name, others in (("previous", previous), ("rest", rest))
        if others and references[name] is not None
    }
    names = [k["keyword"] for k in keywords]
    days = [_day(record.get("occurredAt")) for record in records]
    dated = [d for d in days if d is not None]
    return {
        "documents": n,
        "period": {
            "start": min(dated).isoformat() if dated else None,
            "end": max(dated).isoformat() if dated else None,
        },
        "method": method(seg, text_fields),
        "keywords": keywords,
        "excluded": contrast.excluded_terms(df, n, excluded),
        "distinctive": contrast.distinctive(df, n, against, excluded),
        "contrast": references,
        "trend": keyword_trend(days, documents, names[:series]),
        "byChannel": split_by([str(r.get("channel") or "unknown") for r in records], documents, names),
        "byTier": split_by([str(r.get("customerTier") or "unknown") for r in records], documents, names),
        "cooccurrence": cooccurrence(documents, names),
        "quotes": representative_quotes(records, documents, names[:10], quotes_per_keyword),
        "tags": _tag_counts(records),
    }
