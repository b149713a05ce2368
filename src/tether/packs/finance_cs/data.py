"""The ``customer_session`` table and its repository: every read of customer conversations goes here.

The table has seed 000's fields and lives on its own ``MetaData`` so the pack can be pointed at a
team's own database without tether's migrations. The same SQLAlchemy Core statements run on
SQLite, PostgreSQL and MySQL/MariaDB: keyword matching is a case-insensitive ``LIKE`` with ``%``,
``_`` and the escape character escaped, which works for Chinese text on all three.

Records leave this module as the seed's camelCase JSON (§2.3) with ``occurredAt`` in ISO form.
Driver errors are translated here into ``SessionDataError``; a SQLAlchemy exception never escapes.
This module never writes anything but the rows it is given (``insert_many``, which streams them
with ``COPY`` on PostgreSQL and batched executemany elsewhere, see ``bulk_insert``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from tether.pack import InvalidInput, ToolError
from tether.packs.finance_cs.query import SessionQuery, parse_query

metadata = sa.MetaData()

customer_session = sa.Table(
    "customer_session",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_code", sa.String(32), nullable=False),
    sa.Column("channel", sa.String(16), nullable=False),
    sa.Column("customer_id", sa.String(32), nullable=False),
    sa.Column("customer_tier", sa.String(16), nullable=False),
    sa.Column("agent_id", sa.String(32), nullable=False),
    sa.Column("business_line", sa.String(32), nullable=False),
    sa.Column("user_message", sa.Text, nullable=False),
    sa.Column("agent_reply", sa.Text, nullable=False),
    sa.Column("tags", sa.String(255), nullable=False, default=""),
    sa.Column("occurred_at", sa.DateTime, nullable=False),
    sa.Index("ix_customer_session_line_time", "business_line", "occurred_at"),
    sa.Index("ix_customer_session_time", "occurred_at"),
    sa.Index("ix_customer_session_channel", "channel"),
    sa.Index("ix_customer_session_customer", "customer_id"),
)

# camelCase record field -> table column, in the order records carry them.
RECORD_FIELDS: dict[str, str] = {
    "id": "id",
    "sessionCode": "session_code",
    "channel": "channel",
    "customerId": "customer_id",
    "customerTier": "customer_tier",
    "agentId": "agent_id",
    "businessLine": "business_line",
    "userMessage": "user_message",
    "agentReply": "agent_reply",
    "tags": "tags",
    "occurredAt": "occurred_at",
}
_COLUMN_TO_FIELD = {column: name for name, column in RECORD_FIELDS.items()}

MAX_SAMPLE = 2000
_ID_CHUNK = 500

Stratum = Literal["channel", "day"]
Filters = SessionQuery | Mapping[str, Any] | None


class SessionDataError(ToolError):
    """The customer-session database could not answer (unreachable, missing table, bad SQL)."""


def create_schema(engine: Engine) -> None:
    """Create ``customer_session`` and its indexes if they are missing (idempotent)."""
    try:
        metadata.create_all(engine, checkfirst=True)
    except SQLAlchemyError as exc:
        raise SessionDataError(f"could not create customer_session: {exc.__class__.__name__}: {exc}") from exc


def to_record(row: Mapping[Any, Any]) -> dict[str, Any]:
    """One table row (column names as keys) as the seed's camelCase JSON record."""
    record: dict[str, Any] = {}
    for column, value in row.items():
        name = _COLUMN_TO_FIELD.get(column)
        if name is None:
            continue
        record[name] = value.isoformat(timespec="seconds") if isinstance(value, datetime) else value
    return record


def bulk_insert(conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` (all with the same keys) into ``table`` on ``conn``'s transaction: one
    ``COPY … FROM STDIN`` on PostgreSQL with psycopg, an executemany elsewhere."""
    if not rows:
        return
    names = list(rows[0])
    same_keys = all(len(row) == len(names) and all(n in row for n in names) for row in rows)
    if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg" and same_keys:
        quote = conn.dialect.identifier_preparer
        columns = ", ".join(quote.quote(n) for n in names)
        dbapi = conn.connection.driver_connection
        assert dbapi is not None
        sql = f"COPY {quote.format_table(table)} ({columns}) FROM STDIN"
        driver = conn.dialect.loaded_dbapi
        try:
            with dbapi.cursor() as cursor, cursor.copy(sql) as copy:
                for row in rows:
                    copy.write_row([row[n] for n in names])
        except driver.IntegrityError as exc:  # the driver's own: raised as SQLAlchemy's, like execute()
            raise IntegrityError(sql, None, exc) from exc
        except driver.Error as exc:
            raise DBAPIError(sql, None, exc) from exc
        return
    conn.execute(table.insert(), list(rows))


def slice_conditions(query: SessionQuery) -> list[sa.ColumnElement[bool]]:
    """The WHERE conditions on ``customer_session`` that select ``query``'s rows."""
    return _conditions(query)


def _conditions(query: SessionQuery) -> list[sa.ColumnElement[bool]]:
    t = customer_session.c
    conds: list[sa.ColumnElement[bool]] = []
    if query.keywords:
        conds.append(
            sa.or_(
                *(
                    column.icontains(keyword, autoescape=True)
                    for keyword in query.keywords
                    for column in (t.user_message, t.agent_reply, t.tags)
                )
            )
        )
    exact = (
        (t.business_line, query.business_line),
        (t.channel, query.channel),
        (t.customer_id, query.customer_id),
        (t.customer_tier, query.customer_tier),
    )
    conds.extend(column == value for column, value in exact if value is not None)
    if query.start_time is not None:
        conds.append(t.occurred_at >= query.start_time)
    if query.end_time is not None:
        conds.append(t.occurred_at <= query.end_time)
    return conds


@dataclass(frozen=True)
class Sample:
    """A stratified random sample: ``strata`` maps each stratum to (population, sampled)."""

    total: int
    by: Stratum
    seed: int
    strata: dict[str, tuple[int, int]]
    records: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The sample as JSON: totals, per-stratum counts and the sampled records."""
        return {
            "total": self.total,
            "sampled": len(self.records),
            "stratifiedBy": self.by,
            "seed": self.seed,
            "strata": {k: {"population": p, "sampled": s} for k, (p, s) in self.strata.items()},
            "records": self.records,
        }


def allocate(populations: Mapping[str, int], size: int) -> dict[str, int]:
    """Split ``size`` across strata in proportion to their populations (largest remainder)."""
    total = sum(populations.values())
    if size >= total:
        return dict(populations)
    quotas = {key: size * count / total for key, count in populations.items()}
    shares = {key: int(quota) for key, quota in quotas.items()}
    left = size - sum(shares.values())
    for key in sorted(quotas, key=lambda k: (shares[k] - quotas[k], k))[:left]:
        shares[key] += 1
    return shares


class CustomerSessionRepo:
    """Reads (and bulk-writes) ``customer_session`` through one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def _connect(self, what: str) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise SessionDataError(
                f"customer_session {what} failed: {exc.__class__.__name__}: {exc}", retryable=True
            ) from exc

    def count(self) -> int:
        """All rows in the table."""
        with self._connect("count") as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(customer_session)).scalar_one())

    def query(self, filters: Filters) -> tuple[int, list[dict[str, Any]]]:
        """Seed 000 §2.3: ``total`` counts every match; ``records`` are the newest ``limit`` of them."""
        query = parse_query(filters)
        conds = _conditions(query)
        t = customer_session.c
        counted = sa.select(sa.func.count()).select_from(customer_session).where(*conds)
        listed = (
            sa.select(customer_session).where(*conds).order_by(t.occurred_at.desc(), t.id.desc()).limit(query.limit)
        )
        with self._connect("query") as conn:
            total = int(conn.execute(counted).scalar_one())
            records = [to_record(row) for row in conn.execute(listed).mappings()]
        return total, records

    def ids(self, filters: Filters, max_ids: int | None = None) -> list[int]:
        """Every matching id in ascending order (``limit`` is ignored), for result handles."""
        query = parse_query(filters)
        stmt = sa.select(customer_session.c.id).where(*_conditions(query)).order_by(customer_session.c.id)
        if max_ids is not None:
            stmt = stmt.limit(max_ids)
        with self._connect("id lookup") as conn:
            return [int(i) for i in conn.execute(stmt).scalars()]

    def fetch_by_ids(self, ids: Sequence[int], columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The records with these ids, in the order given (unknown ids are skipped).

        ``columns`` names camelCase record fields to return (``id`` always comes along); ``None``
        returns them all.
        """
        names = list(RECORD_FIELDS) if columns is None else ["id", *(c for c in columns if c != "id")]
        unknown = [name for name in names if name not in RECORD_FIELDS]
        if unknown:
            raise InvalidInput(
                f"columns: unknown field(s) {', '.join(unknown)}; choose from {', '.join(RECORD_FIELDS)}",
                field="columns",
            )
        selected = [customer_session.c[RECORD_FIELDS[name]] for name in dict.fromkeys(names)]
        wanted = list(dict.fromkeys(int(i) for i in ids))
        found: dict[int, dict[str, Any]] = {}
        with self._connect("fetch") as conn:
            for start in range(0, len(wanted), _ID_CHUNK):
                chunk = wanted[start : start + _ID_CHUNK]
                stmt = sa.select(*selected).where(customer_session.c.id.in_(chunk))
                for row in conn.execute(stmt).mappings():
                    found[int(row["id"])] = to_record(row)
        return [found[i] for i in wanted if i in found]

    def sample(self, filters: Filters, size: int, seed: int, by: Stratum = "channel") -> Sample:
        """A stratified random sample of the matches, the same for the same data, filters and seed.

        Strata are channels or calendar days; ``size`` is split across them in proportion to their
        populations, and each stratum draws its share with its own ``Random(f"{seed}/{stratum}")``.
        """
        if not 1 <= size <= MAX_SAMPLE:
            raise InvalidInput(f"size: must be between 1 and {MAX_SAMPLE}, got {size}", field="size")
        if by not in ("channel", "day"):
            raise InvalidInput(f"by: stratify by 'channel' or 'day', not '{by}'", field="by")
        query = parse_query(filters)
        t = customer_session.c
        stmt = sa.select(t.id, t.channel, t.occurred_at).where(*_conditions(query)).order_by(t.id)
        population: dict[str, list[int]] = {}
        with self._connect("sample") as conn:
            for row_id, channel, occurred_at in conn.execute(stmt):
                key = channel if by == "channel" else occurred_at.date().isoformat()
                population.setdefault(key, []).append(int(row_id))
        population = dict(sorted(population.items()))
        shares = allocate({key: len(ids) for key, ids in population.items()}, size)
        chosen: list[int] = []
        for key, ids in population.items():
            chosen.extend(sorted(random.Random(f"{seed}/{key}").sample(ids, shares[key])))
        return Sample(
            total=sum(len(ids) for ids in population.values()),
            by=by,
            seed=seed,
            strata={key: (len(ids), shares[key]) for key, ids in population.items()},
            records=self.fetch_by_ids(chosen),
        )

    def insert_many(self, rows: Iterable[Mapping[str, Any]], chunk_size: int = 2000) -> int:
        """Bulk-insert rows keyed by column name, ``chunk_size`` per executemany; returns the count."""
        batch: list[Mapping[str, Any]] = []
        written = 0
        try:
            with self.engine.begin() as conn:
                for row in rows:
                    batch.append(row)
                    if len(batch) >= chunk_size:
                        bulk_insert(conn, customer_session, batch)
                        written += len(batch)
                        batch = []
                if batch:
                    bulk_insert(conn, customer_session, batch)
                    written += len(batch)
        except SQLAlchemyError as exc:
            raise SessionDataError(
                f"customer_session insert failed: {exc.__class__.__name__}: {exc}", retryable=True
            ) from exc
        return written
