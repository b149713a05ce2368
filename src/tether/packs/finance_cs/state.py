"""The pack's own state beside ``customer_session``: result handles, the analysis job queue,
analysis results and reports. Every row is owned (user + tenant) and read back by owner.

These tables are the pack's own and are made by its Alembic history (``migrations/``, run by
tether on start-up and by ``tether db upgrade``); a change here needs a new revision there (a
test compares the two).

The job queue is durable: a job is claimed with a lease and a fresh claim token; a worker that
dies leaves an expired lease, and the job runs again (up to ``attempts``) or ends FAILED. Any
number of workers may share the queue: on PostgreSQL and MariaDB/MySQL the candidates are read
``FOR UPDATE SKIP LOCKED``, and everywhere (SQLite included, whose writers are serialised) the
claim itself is a conditional UPDATE that only succeeds if the row is still as it was read. Every
later write of a worker (renew, finish, hold, settle) is conditional on its claim token, so a
worker whose job was taken over after its lease lapsed cannot finish it: a job completes once.

The keyword index (``cs_indexed_session``, ``cs_session_keyword``) is written by
``keyword_index`` and read by ``indexed_analysis``; its rows copy the filtered columns of
``customer_session`` so the analysis aggregates without reading the conversations.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from tether.pack import NotFound, Owner

metadata = sa.MetaData()
_BODY = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
_KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


def _owned(name: str, *columns: sa.Column[Any]) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("owner_user", sa.String(128), nullable=False),
        sa.Column("owner_tenant", sa.String(128), nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        *columns,
        **_KW,
    )


handles = _owned(
    "cs_result_handle",
    sa.Column("filters", sa.Text, nullable=False),
    sa.Column("ids", _BODY, nullable=False),
    sa.Column("expires_at", sa.Double, nullable=False),
)
jobs = _owned(
    "cs_analysis_job",
    # queued | running | ending (given up, being failed by one sweeper) | undelivered | done | failed;
    # a job with an empty callback_url is detached
    # (started by POST /tools/analyze-keywords-async): its outcome stays in `outcome`
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("params", sa.Text, nullable=False),
    sa.Column("callback_url", sa.String(512), nullable=False),
    sa.Column("callback_token", sa.String(128), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("lease_until", sa.Double, nullable=True),
    sa.Column("deadline", sa.Double, nullable=False),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("outcome", _BODY, nullable=True),  # an outcome whose callback could not be delivered yet
    sa.Column("claim_token", sa.String(32), nullable=True),  # who holds the job now (cs0002)
)
analyses = _owned(
    "cs_analysis", sa.Column("scope", sa.Text, nullable=False), sa.Column("result", _BODY, nullable=False)
)
reports = _owned(
    "cs_report",
    sa.Column("title", sa.String(255), nullable=False),
    sa.Column("markdown", _BODY, nullable=False),
    sa.Column("html", _BODY, nullable=False),
)


# The keyword index (cs0002). Keywords compare byte for byte on MySQL/MariaDB (a *_ci collation
# would merge distinct tokens); KEYWORD_CHARS bounds a token (longer ones are cut there).
KEYWORD_CHARS = 255
_KEYWORD = sa.String(KEYWORD_CHARS).with_variant(
    mysql.VARCHAR(KEYWORD_CHARS, collation="utf8mb4_bin"), "mysql", "mariadb"
)


def _filtered_columns() -> list[sa.Column[Any]]:
    """customer_session's columns the analysis filters and groups on, copied into the index."""
    return [
        sa.Column("occurred_at", sa.DateTime, nullable=False),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("business_line", sa.String(32), nullable=False),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("customer_tier", sa.String(16), nullable=False),
    ]


# one row per indexed conversation (also those without a keyword): "this one is indexed"
indexed_sessions = sa.Table(
    "cs_indexed_session",
    metadata,
    sa.Column("conversation_id", sa.Integer, primary_key=True, autoincrement=False),
    *_filtered_columns(),
    sa.Column("quote_fit", sa.SmallInteger, nullable=False),  # 0: the message is 15-80 characters
    sa.Index("ix_cs_indexed_session_line_time", "business_line", "occurred_at"),
    sa.Index("ix_cs_indexed_session_time", "occurred_at"),
    **_KW,
)
# one row per (conversation, distinct kept token of its customer message)
session_keywords = sa.Table(
    "cs_session_keyword",
    metadata,
    sa.Column("conversation_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("keyword", _KEYWORD, primary_key=True),
    *_filtered_columns(),
    sa.Index("ix_cs_session_keyword_line_time", "business_line", "occurred_at"),
    sa.Index("ix_cs_session_keyword_time", "occurred_at"),
    **_KW,
)


_RETRIES = 5


def _is_conflict(exc: DBAPIError) -> bool:
    """A serialization failure or deadlock (PostgreSQL 40001/40P01, MySQL 1213/1205): retry."""
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in ("40001", "40P01"):
        return True
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    return len(args) > 0 and args[0] in (1213, 1205)


def _held(token: str) -> sa.ColumnElement[bool]:
    return sa.and_(jobs.c.claim_token == token, jobs.c.status.in_(("running", "ending", "undelivered")))


def _unchanged(row: Any) -> sa.ColumnElement[bool]:
    """The job row is still as ``row`` read it (nobody claimed it in between)."""
    token = jobs.c.claim_token.is_(None) if row["claim_token"] is None else jobs.c.claim_token == row["claim_token"]
    return sa.and_(jobs.c.id == row["id"], jobs.c.status == row["status"], jobs.c.attempts == row["attempts"], token)


class FinanceState:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _insert(self, table: sa.Table, id_: str, owner: Owner, **values: Any) -> None:
        with self.engine.begin() as c:
            c.execute(
                table.insert().values(
                    id=id_, owner_user=owner.user_id, owner_tenant=owner.tenant, created_at=time.time(), **values
                )
            )

    def _get(self, table: sa.Table, id_: str, owner: Owner | None, what: str) -> dict[str, Any]:
        with self.engine.connect() as c:
            row = c.execute(table.select().where(table.c.id == id_)).mappings().first()
        if row is None or (
            owner is not None and (row["owner_user"], row["owner_tenant"]) != (owner.user_id, owner.tenant)
        ):
            raise NotFound(f"{what} {id_} not found")
        return dict(row)

    # handles
    def save_handle(self, id_: str, owner: Owner, filters: dict[str, Any], ids: list[int], ttl_s: float) -> None:
        self._insert(
            handles,
            id_,
            owner,
            filters=json.dumps(filters, ensure_ascii=False),
            ids=json.dumps(ids),
            expires_at=time.time() + ttl_s,
        )

    def handle(self, id_: str, owner: Owner) -> tuple[dict[str, Any], list[int]]:
        row = self._get(handles, id_, owner, "result handle")
        if row["expires_at"] < time.time():
            raise NotFound(f"result handle {id_} has expired; run the query again")
        return json.loads(row["filters"]), json.loads(row["ids"])

    # analyses and reports
    def save_analysis(self, id_: str, owner: Owner, scope: dict[str, Any], result: dict[str, Any]) -> None:
        self._insert(
            analyses,
            id_,
            owner,
            scope=json.dumps(scope, ensure_ascii=False, default=str),
            result=json.dumps(result, ensure_ascii=False, default=str),
        )

    def analysis(self, id_: str, owner: Owner) -> tuple[dict[str, Any], dict[str, Any]]:
        row = self._get(analyses, id_, owner, "analysis")
        return json.loads(row["scope"]), json.loads(row["result"])

    def save_report(self, id_: str, owner: Owner, title: str, markdown: str, html: str) -> None:
        self._insert(reports, id_, owner, title=title[:255], markdown=markdown, html=html)

    def report(self, id_: str, owner: Owner) -> dict[str, Any]:
        return self._get(reports, id_, owner, "report")

    # the job queue
    def enqueue(
        self, id_: str, owner: Owner, params: dict[str, Any], callback_url: str, token: str, timeout_s: float
    ) -> None:
        self._insert(
            jobs,
            id_,
            owner,
            status="queued",
            params=json.dumps(params, ensure_ascii=False),
            callback_url=callback_url,
            callback_token=token,
            attempts=0,
            deadline=time.time() + timeout_s,
        )

    def _take(
        self,
        where: sa.ColumnElement[bool],
        values: dict[str, Any] | Callable[[Any], dict[str, Any]],
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Claim the rows matching ``where`` (oldest first), each under a fresh token: read them
        ``FOR UPDATE SKIP LOCKED`` where the database has it, then update each only if unchanged.
        ``values`` may be a callable of the row."""
        for attempt in range(_RETRIES):
            try:
                return self._take_once(where, values, limit)
            except DBAPIError as exc:  # REPEATABLE READ: a row changed under the snapshot; read again
                if attempt == _RETRIES - 1 or not _is_conflict(exc):
                    raise
                time.sleep(0.01 * (attempt + 1))
        return []

    def _take_once(
        self,
        where: sa.ColumnElement[bool],
        values: dict[str, Any] | Callable[[Any], dict[str, Any]],
        limit: int | None,
    ) -> list[dict[str, Any]]:
        taken: list[dict[str, Any]] = []
        with self.engine.begin() as c:
            stmt = sa.select(jobs.c.id, jobs.c.status, jobs.c.attempts, jobs.c.claim_token).where(where)
            stmt = stmt.order_by(jobs.c.created_at, jobs.c.id).limit(limit or 100)
            if c.dialect.name != "sqlite":  # SQLite: the write engine's BEGIN IMMEDIATE serialises claims
                stmt = stmt.with_for_update(skip_locked=True)
            for row in c.execute(stmt).mappings().all():
                token = secrets.token_hex(16)
                update = values(row) if callable(values) else values
                done = c.execute(jobs.update().where(_unchanged(row)).values(claim_token=token, **update))
                if done.rowcount == 1:
                    taken.append(dict(c.execute(jobs.select().where(jobs.c.id == row["id"])).mappings().one()))
                    if limit is not None and len(taken) >= limit:
                        break
        return taken

    def claim(self, lease_s: float, max_attempts: int) -> dict[str, Any] | None:
        """Take the oldest runnable job (queued, or running with an expired lease) under a lease;
        the job comes back with its ``claim_token``, which every later write must show."""
        now = time.time()
        runnable = sa.or_(jobs.c.status == "queued", sa.and_(jobs.c.status == "running", jobs.c.lease_until < now))
        taken = self._take(
            sa.and_(runnable, jobs.c.attempts < max_attempts),
            lambda row: {"status": "running", "attempts": row["attempts"] + 1, "lease_until": now + lease_s},
            limit=1,
        )
        return taken[0] if taken else None

    def renew(self, id_: str, token: str, lease_s: float) -> bool:
        """Extend a running job's lease (its worker is alive); False if the claim was lost."""
        with self.engine.begin() as c:
            done = c.execute(
                jobs.update()
                .where(jobs.c.id == id_, jobs.c.status.in_(("running", "ending")), jobs.c.claim_token == token)
                .values(lease_until=time.time() + lease_s)
            )
        return done.rowcount == 1

    def given_up(self, max_attempts: int, lease_s: float = 30.0) -> list[dict[str, Any]]:
        """Claim the jobs past their deadline, or whose runs all died, for the caller to end FAILED
        (each goes to one caller only)."""
        now = time.time()
        dead = sa.and_(jobs.c.status == "running", jobs.c.lease_until < now, jobs.c.attempts >= max_attempts)
        late = sa.and_(jobs.c.status.in_(("queued", "running")), jobs.c.deadline < now)
        orphaned = sa.and_(jobs.c.status == "ending", jobs.c.lease_until < now)  # its sweeper died
        return self._take(sa.or_(dead, late, orphaned), {"status": "ending", "lease_until": now + lease_s})

    def undelivered(self, lease_s: float = 30.0) -> list[dict[str, Any]]:
        """Claim the outcomes whose callback is still owed (not being re-sent by another worker)."""
        now = time.time()
        free = sa.or_(jobs.c.lease_until.is_(None), jobs.c.lease_until < now)
        return self._take(sa.and_(jobs.c.status == "undelivered", free), {"lease_until": now + lease_s})

    def release(self, id_: str, token: str) -> bool:
        """Let another round (of any worker) re-send an undelivered outcome now."""
        with self.engine.begin() as c:
            done = c.execute(
                jobs.update()
                .where(jobs.c.id == id_, jobs.c.claim_token == token, jobs.c.status == "undelivered")
                .values(lease_until=None)
            )
        return done.rowcount == 1

    def _conclude(self, id_: str, token: str, **values: Any) -> bool:
        with self.engine.begin() as c:
            done = c.execute(jobs.update().where(jobs.c.id == id_, _held(token)).values(lease_until=None, **values))
        return done.rowcount == 1

    def finish(self, id_: str, token: str, status: str, error: str | None = None) -> bool:
        """End the job, only if ``token`` still holds it; False (nothing written) otherwise."""
        return self._conclude(id_, token, status=status, error=error)

    def hold(self, id_: str, token: str, outcome: str) -> bool:
        """Keep a finished job's outcome until its callback is delivered (the claim is kept)."""
        return self._conclude(id_, token, status="undelivered", outcome=outcome)

    def settle(self, id_: str, token: str, status: str, outcome: str, error: str | None) -> bool:
        """A detached job (no callback) ends: its outcome stays on the row for the job's owner."""
        return self._conclude(id_, token, status=status, outcome=outcome, error=error)

    def owned_job(self, id_: str, owner: Owner) -> dict[str, Any]:
        return self._get(jobs, id_, owner, "analysis job")

    def job(self, id_: str) -> dict[str, Any]:
        return self._get(jobs, id_, None, "analysis job")
