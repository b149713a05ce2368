"""Compact session storage and conversations: integer session keys, a row per step and per commit's
events, binary bodies, and the archived flag.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03

- ``agent_session`` is keyed by a new integer ``session_key`` (``id`` stays, unique), gains
  ``archived`` (false for every existing session), stores ``state`` as a binary body and loses
  ``steps``, which become rows of the new ``agent_step`` (session_key, idx);
- ``agent_message`` is keyed by (session_key, idx), its body binary;
- ``agent_event`` holds batches of events keyed by (session_key, last seq of the batch).

Every row is kept. Sessions and messages are copied in SQL (keys in creation order); steps and
events are re-encoded here, in chunks of sessions. Bodies are written as plain UTF-8 JSON, which
the store reads as well as the compressed bodies it writes itself. Rows of a session that does
not exist (there should be none) cannot be keyed and are dropped. There is no downgrade: take a
backup before upgrading.

Frozen on purpose: a revision never imports tether (tables.py describes only the latest schema;
the encodings below are the store's format as of this revision).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

KW: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
CLUSTERED: dict[str, Any] = {**KW, "sqlite_with_rowid": False}
CHUNK = 200  # sessions per round trip when re-encoding steps and events
BATCH = 64  # events per migrated event row


def _blob() -> sa.types.TypeEngine[bytes]:
    return sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")


def _key() -> sa.types.TypeEngine[int]:
    return sa.BigInteger().with_variant(sa.Integer, "sqlite")


def _body() -> sa.types.TypeEngine[str]:
    return sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def _children(name: str, second: str, second_type: sa.types.TypeEngine[int]) -> sa.Table:
    return op.create_table(
        name,
        sa.Column("session_key", _key(), primary_key=True, autoincrement=False),
        sa.Column(second, second_type, primary_key=True, autoincrement=False),
        sa.Column("body", _blob(), nullable=False),
        **CLUSTERED,
    )


def upgrade() -> None:
    bind = op.get_bind()
    new_session = op.create_table(
        "agent_session_v3",
        sa.Column("session_key", _key(), primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("owner_user", sa.String(128), nullable=False),
        sa.Column("owner_tenant", sa.String(128), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("archived", sa.Boolean, nullable=False),
        sa.Column("query", _body(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("lease_until", sa.Double, nullable=True),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
        sa.Column("state", _blob(), nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sqlite_autoincrement=True,
        **KW,
    )
    assert new_session is not None
    new_message = _children("agent_message_v3", "idx", sa.Integer())
    new_event = _children("agent_event_v3", "last_seq", sa.BigInteger())
    new_step = _children("agent_step", "idx", sa.Integer())
    assert new_message is not None and new_event is not None and new_step is not None

    old_session = sa.table(
        "agent_session",
        *(sa.column(c) for c in ("id", "owner_user", "owner_tenant", "title", "query", "status", "version")),
        *(sa.column(c) for c in ("lease_until", "last_seq", "state", "steps", "created_at", "updated_at")),
    )
    old_message = sa.table("agent_message", sa.column("session_id"), sa.column("idx"), sa.column("body"))
    old_event = sa.table("agent_event", *(sa.column(c) for c in ("session_id", "seq", "turn_id", "type", "ts", "data")))

    # sessions, keyed in creation order, then their messages
    kept = ("id", "owner_user", "owner_tenant", "title", "query", "status", "version", "lease_until", "last_seq")
    columns = [*kept, "archived", "state", "created_at", "updated_at"]
    source = sa.select(
        *(old_session.c[c] for c in kept),
        sa.false(),
        _as_blob(bind, old_session.c.state),
        old_session.c.created_at,
        old_session.c.updated_at,
    ).order_by(old_session.c.created_at, old_session.c.id)
    bind.execute(new_session.insert().from_select(columns, source))
    s = new_session.alias("s")
    bind.execute(
        new_message.insert().from_select(
            ["session_key", "idx", "body"],
            sa.select(s.c.session_key, old_message.c.idx, _as_blob(bind, old_message.c.body)).join_from(
                old_message, s, s.c.id == old_message.c.session_id
            ),
        )
    )

    last = bind.execute(sa.select(sa.func.max(new_session.c.session_key))).scalar() or 0
    for lo in range(1, last + 1, CHUNK):
        keys = s.c.session_key.between(lo, lo + CHUNK - 1)
        steps = bind.execute(
            sa.select(s.c.session_key, old_session.c.steps)
            .join_from(old_session, s, s.c.id == old_session.c.id)
            .where(keys)
        ).all()
        step_rows = [
            {"session_key": key, "idx": i, "body": _step(d).encode()}
            for key, text in steps
            for i, d in enumerate(json.loads(text or "[]"))
        ]
        if step_rows:
            bind.execute(new_step.insert(), step_rows)
        events = bind.execute(
            sa.select(s.c.session_key, *(old_event.c[c] for c in ("seq", "turn_id", "type", "ts", "data")))
            .join_from(old_event, s, s.c.id == old_event.c.session_id)
            .where(keys)
            .order_by(s.c.session_key, old_event.c.seq)
        ).all()
        event_rows = [
            {"session_key": key, "last_seq": batch[-1][0], "body": _batch(batch).encode()}
            for key, batch in _batches(events)
        ]
        if event_rows:
            bind.execute(new_event.insert(), event_rows)

    for table in ("agent_event", "agent_message", "agent_session"):
        op.drop_table(table)
    for table in ("agent_session", "agent_message", "agent_event"):
        op.rename_table(f"{table}_v3", table)
        if bind.dialect.name == "postgresql":  # names PostgreSQL derived from the temporary one
            op.execute(f"ALTER INDEX {table}_v3_pkey RENAME TO {table}_pkey")
    if bind.dialect.name == "postgresql":
        op.execute("ALTER SEQUENCE agent_session_v3_session_key_seq RENAME TO agent_session_session_key_seq")
    op.create_index("ux_agent_session_id", "agent_session", ["id"], unique=True)
    op.create_index(
        "ix_agent_session_owner_list", "agent_session", ["owner_tenant", "owner_user", "archived", "updated_at"]
    )
    op.create_index("ix_agent_session_status_lease", "agent_session", ["status", "lease_until"])


def downgrade() -> None:
    raise NotImplementedError("0003 re-encodes sessions, steps and events; restore the backup taken before it")


def _as_blob(bind: sa.Connection, column: Any) -> Any:
    """A text column's UTF-8 bytes (MySQL converts text to a BLOB by itself)."""
    if bind.dialect.name == "postgresql":
        return sa.func.convert_to(column, "UTF8")
    if bind.dialect.name == "sqlite":
        return sa.cast(column, sa.LargeBinary)
    return column


# ---- the store's encodings as of this revision (store/compact.py), plain --------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _bits(x: float) -> int:
    value: int = struct.unpack("<q", struct.pack("<d", float(x)))[0]
    return value


def _step(d: dict[str, Any]) -> str:
    """A step record: [turnId, toolCallId, toolId, args, status, startedAt, finish - start in float bits]."""
    started, finished = float(d.get("startedAt", 0.0)), float(d.get("finishedAt", 0.0))
    record = [d["turnId"], d["toolCallId"], d["toolId"], d.get("args") or {}, d["status"], started]
    return _dumps([*record, _bits(finished) - _bits(started)])


def _batches(rows: Sequence[Any]) -> Iterator[tuple[int, list[tuple[Any, ...]]]]:
    """(session key, up to BATCH of its events as (seq, turn_id, type, ts, data)) in seq order."""
    batch: list[tuple[Any, ...]] = []
    key = 0
    for row in rows:
        if batch and (row[0] != key or len(batch) == BATCH):
            yield key, batch
            batch = []
        key = row[0]
        batch.append(tuple(row[1:]))
    if batch:
        yield key, batch


def _batch(events: list[tuple[Any, ...]]) -> str:
    """An event batch: [first seq, turn id, first ts, [[type, ts - previous ts in float bits, data,
    (turn id, seq when not the batch's turn or not the next seq)]...]]."""
    first_seq, turn, first_ts = int(events[0][0]), events[0][1], float(events[0][3])
    prev_bits, prev_seq = _bits(first_ts), first_seq - 1
    entries = []
    for seq, turn_id, kind, ts, data in events:
        bits = _bits(ts)
        entry = [kind, bits - prev_bits, json.loads(data)]
        if turn_id != turn or int(seq) != prev_seq + 1:
            entry += [turn_id, int(seq)]
        entries.append(entry)
        prev_bits, prev_seq = bits, int(seq)
    return _dumps([first_seq, turn, first_ts, entries])
