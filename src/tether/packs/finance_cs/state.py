"""The pack's own state beside ``customer_session``: result handles, the analysis job queue,
analysis results and reports. Every row is owned (user + tenant) and read back by owner.

These tables are the pack's own and are made by its Alembic history (``migrations/``, run by
tether on start-up and by ``tether db upgrade``); a change here needs a new revision there (a
test compares the two).

The job queue is durable: a job is claimed with a lease; a worker that dies leaves an expired
lease, and the job runs again (up to ``attempts``) or ends FAILED.
"""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Engine

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
    # queued | running | undelivered | done | failed; a job with an empty callback_url is detached
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

    def claim(self, lease_s: float, max_attempts: int) -> dict[str, Any] | None:
        """Take the oldest runnable job (queued, or running with an expired lease) under a lease."""
        now = time.time()
        runnable = sa.or_(jobs.c.status == "queued", sa.and_(jobs.c.status == "running", jobs.c.lease_until < now))
        with self.engine.begin() as c:
            for row in c.execute(
                jobs.select().where(runnable, jobs.c.attempts < max_attempts).order_by(jobs.c.created_at).limit(5)
            ).mappings():
                taken = c.execute(
                    jobs.update()
                    .where(jobs.c.id == row["id"], jobs.c.status == row["status"], jobs.c.attempts == row["attempts"])
                    .values(status="running", attempts=row["attempts"] + 1, lease_until=now + lease_s)
                )
                if taken.rowcount == 1:
                    return {**row, "attempts": row["attempts"] + 1}
        return None

    def renew(self, id_: str, lease_s: float) -> None:
        """Extend a running job's lease (its worker is alive)."""
        with self.engine.begin() as c:
            c.execute(
                jobs.update()
                .where(jobs.c.id == id_, jobs.c.status == "running")
                .values(lease_until=time.time() + lease_s)
            )

    def given_up(self, max_attempts: int) -> list[dict[str, Any]]:
        """Jobs past their deadline, or whose runs all died: they end FAILED."""
        now = time.time()
        dead = sa.and_(jobs.c.status == "running", jobs.c.lease_until < now, jobs.c.attempts >= max_attempts)
        late = sa.and_(jobs.c.status.in_(("queued", "running")), jobs.c.deadline < now)
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(jobs.select().where(sa.or_(dead, late))).mappings()]

    def finish(self, id_: str, status: str, error: str | None = None) -> None:
        with self.engine.begin() as c:
            c.execute(jobs.update().where(jobs.c.id == id_).values(status=status, error=error, lease_until=None))

    def hold(self, id_: str, outcome: str) -> None:
        """Keep a finished job's outcome until its callback is delivered."""
        with self.engine.begin() as c:
            c.execute(
                jobs.update().where(jobs.c.id == id_).values(status="undelivered", outcome=outcome, lease_until=None)
            )

    def settle(self, id_: str, status: str, outcome: str, error: str | None) -> None:
        """A detached job (no callback) ends: its outcome stays on the row for the job's owner."""
        with self.engine.begin() as c:
            c.execute(
                jobs.update()
                .where(jobs.c.id == id_)
                .values(status=status, outcome=outcome, error=error, lease_until=None)
            )

    def owned_job(self, id_: str, owner: Owner) -> dict[str, Any]:
        return self._get(jobs, id_, owner, "analysis job")

    def undelivered(self) -> list[dict[str, Any]]:
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(jobs.select().where(jobs.c.status == "undelivered")).mappings()]

    def job(self, id_: str) -> dict[str, Any]:
        return self._get(jobs, id_, None, "analysis job")
