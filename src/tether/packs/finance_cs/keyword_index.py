"""The keyword index: each conversation's customer message segmented once, kept as rows.

For every ``customer_session`` row the indexer writes one ``cs_indexed_session`` row (the
conversation is indexed, with the columns the analysis filters and groups on and whether its
message suits a quote) and one ``cs_session_keyword`` row per distinct kept token of its
``user_message`` (the tokens ``Segmenter.cut`` keeps, as the analysis counts them). The analysis
then aggregates in the database (``indexed_analysis``) instead of segmenting at request time.

Rows are indexed when they are seeded (``generator.generate``), by ``tether finance index``, by
the analysis worker between jobs (``index_new``: rows newer than the newest indexed one, a batch
per idle round), and in the request path for any row of the analysed slice that has no
``cs_indexed_session`` row yet, so a conversation written by other means (a team's own table
filling up) is never silently left out. Indexers may run at once:
a batch another one wrote first is skipped row by row. The index copies ``customer_session``'s
columns and follows inserts only: a conversation changed in place keeps its old entries (run
``tether finance index --rebuild``), and so does a change of the lexicon or stop words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from tether.packs.finance_cs.analysis import Segmenter, default_segmenter, quote_fit
from tether.packs.finance_cs.data import SessionDataError, bulk_insert, customer_session
from tether.packs.finance_cs.state import KEYWORD_CHARS, indexed_sessions, session_keywords

BATCH = 2000


def entries(row: Any, seg: Segmenter) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One conversation's ``cs_indexed_session`` row and its ``cs_session_keyword`` rows."""
    text = str(row.user_message or "")
    filtered = {
        "occurred_at": row.occurred_at,
        "day": row.occurred_at.date(),
        "business_line": row.business_line,
        "channel": row.channel,
        "customer_tier": row.customer_tier,
    }
    terms = sorted({token[:KEYWORD_CHARS] for token in seg.cut(text)})
    doc = {"conversation_id": int(row.id), **filtered, "quote_fit": quote_fit(text.strip())}
    return doc, [{"conversation_id": int(row.id), "keyword": term, **filtered} for term in terms]


def _write(conn: Connection, docs: Sequence[dict[str, Any]], keywords: Sequence[dict[str, Any]]) -> None:
    bulk_insert(conn, session_keywords, keywords)
    bulk_insert(conn, indexed_sessions, docs)


def index_new(engine: Engine, max_rows: int = BATCH, segmenter: Segmenter | None = None) -> int:
    """The background indexer's round: index up to ``max_rows`` conversations newer than the
    newest indexed one (cheap: two primary-key range reads). Older gaps are left to the analysis."""
    try:
        with engine.connect() as conn:
            newest = conn.execute(sa.select(sa.func.max(indexed_sessions.c.conversation_id))).scalar()
    except SQLAlchemyError as exc:
        raise SessionDataError(f"keyword index failed: {exc.__class__.__name__}: {exc}", retryable=True) from exc
    where = [customer_session.c.id > int(newest)] if newest is not None else []
    return index_pending(engine, where, batch=max_rows, max_rows=max_rows, segmenter=segmenter)


def index_pending(
    engine: Engine,
    where: Sequence[sa.ColumnElement[bool]] = (),
    *,
    batch: int = BATCH,
    max_rows: int | None = None,
    segmenter: Segmenter | None = None,
) -> int:
    """Index every ``customer_session`` row matching ``where`` that is not indexed yet (or the
    first ``max_rows`` of them), ``batch`` rows per transaction, in id order; returns how many
    this call indexed."""
    t = customer_session.c
    pending = ~sa.exists().where(indexed_sessions.c.conversation_id == t.id)
    columns = (t.id, t.user_message, t.occurred_at, t.business_line, t.channel, t.customer_tier)
    last, written = 0, 0
    seg: Segmenter | None = segmenter
    try:
        while True:
            stmt = sa.select(*columns).where(*where, t.id > last, pending).order_by(t.id).limit(batch)
            with engine.connect() as conn:
                rows = conn.execute(stmt).all()
            if not rows or (max_rows is not None and written >= max_rows):
                return written
            last = int(rows[-1].id)
            seg = seg or default_segmenter()
            built = [entries(row, seg) for row in rows]
            try:
                with engine.begin() as conn:
                    _write(conn, [d for d, _ in built], [k for _, kws in built for k in kws])
                written += len(built)
            except IntegrityError:  # another indexer wrote some of them first: the rest one by one
                for doc, keywords in built:
                    try:
                        with engine.begin() as conn:
                            _write(conn, [doc], keywords)
                        written += 1
                    except IntegrityError:
                        continue
    except SQLAlchemyError as exc:
        raise SessionDataError(f"keyword index failed: {exc.__class__.__name__}: {exc}", retryable=True) from exc


def clear(engine: Engine) -> None:
    """Drop every index entry (before a rebuild)."""
    with engine.begin() as conn:
        conn.execute(session_keywords.delete())
        conn.execute(indexed_sessions.delete())


def index_ready(engine: Engine) -> bool:
    """Whether the index tables exist here (the pack's migrations have run on this database)."""
    inspector = sa.inspect(engine)
    return inspector.has_table(indexed_sessions.name) and inspector.has_table(session_keywords.name)
