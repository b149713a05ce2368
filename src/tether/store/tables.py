"""The store's schema as SQLAlchemy Core tables: what Alembic migrates to and what reads query.

Types are chosen to work unchanged on SQLite, PostgreSQL and MariaDB/MySQL: ids are bounded
``String`` (MariaDB needs lengths on indexed strings), timestamps are ``Double`` (MySQL's FLOAT is
single precision), JSON bodies are compact JSON text (LONGTEXT on MySQL), and a session's own
rows (messages, events, steps, state) are binary bodies in ``store/compact.py``'s format, keyed by
the session's integer ``session_key``. This module only declares; it must never execute SQL or
import the core.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

ID = 64  # session ids, dsl ids, event/turn ids ("ses-" + 32 hex)
NAME = 128  # owner ids, tool ids, tool call ids, job ids, hashes

# Large bodies (results, DSL arguments): LONGTEXT on MySQL/MariaDB.
Body = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")
# Stored session bodies (store/compact.py: UTF-8 JSON or compressed): LONGBLOB on MySQL/MariaDB.
Blob = sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
# Surrogate keys: BIGINT, but SQLite's INTEGER so that it is the table's rowid.
Key = sa.BigInteger().with_variant(sa.Integer, "sqlite")

metadata = sa.MetaData()
_table_kw: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
# Rows keyed (parent id, position) are stored clustered by that key on SQLite too.
_clustered_kw: dict[str, Any] = {**_table_kw, "sqlite_with_rowid": False}

agent_session = sa.Table(
    "agent_session",
    metadata,
    # the key the child tables use: a few bytes per row where the id takes 27
    sa.Column("session_key", Key, primary_key=True, autoincrement=True),
    sa.Column("id", sa.String(ID), nullable=False),
    sa.Column("owner_user", sa.String(NAME), nullable=False),
    sa.Column("owner_tenant", sa.String(NAME), nullable=False),
    sa.Column("title", sa.Text, nullable=False),  # set at creation, then only by a rename
    sa.Column("archived", sa.Boolean, nullable=False),
    sa.Column("query", Body, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("lease_until", sa.Double, nullable=True),
    sa.Column("last_seq", sa.BigInteger, nullable=False),
    # small JSON: global context, skills, pending interaction, waiting jobs, turn, error, summary
    sa.Column("state", Blob, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
    sa.Column("lease_owner", sa.String(NAME), nullable=True),  # the replica holding the lease (0005)
    sa.Index("ux_agent_session_id", "id", unique=True),
    sa.Index("ix_agent_session_owner_list", "owner_tenant", "owner_user", "archived", "updated_at"),
    sa.Index("ix_agent_session_status_lease", "status", "lease_until"),
    sqlite_autoincrement=True,  # a key is never reused, even after the newest session is deleted
    **_table_kw,
)

agent_message = sa.Table(
    "agent_message",
    metadata,
    sa.Column("session_key", Key, primary_key=True, autoincrement=False),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("body", Blob, nullable=False),  # one transcript message (compact.pack)
    **_clustered_kw,
)

# A row per commit holding that commit's events (compact.event_batch), keyed by its last seq.
agent_event = sa.Table(
    "agent_event",
    metadata,
    sa.Column("session_key", Key, primary_key=True, autoincrement=False),
    sa.Column("last_seq", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("body", Blob, nullable=False),
    **_clustered_kw,
)

# A row per executed step (compact.step_record), in order; a PENDING step is updated in place.
agent_step = sa.Table(
    "agent_step",
    metadata,
    sa.Column("session_key", Key, primary_key=True, autoincrement=False),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("body", Blob, nullable=False),
    **_clustered_kw,
)

async_job = sa.Table(
    "async_job",
    metadata,
    sa.Column("job_id", sa.String(NAME), primary_key=True),
    sa.Column("session_id", sa.String(ID), nullable=False),
    sa.Column("tool_call_id", sa.String(NAME), nullable=False),
    sa.Column("tool_id", sa.String(NAME), nullable=False),
    sa.Column("token_hash", sa.String(NAME), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("result", Body, nullable=True),
    sa.Column("error", Body, nullable=True),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("deadline", sa.Double, nullable=False),
    sa.Column("applied", sa.Boolean, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Index("ix_async_job_session_status", "session_id", "status"),
    sa.Index("ix_async_job_status_deadline", "status", "deadline"),
    **_table_kw,
)

dsl_instance = sa.Table(
    "dsl_instance",
    metadata,
    sa.Column("dsl_id", sa.String(ID), primary_key=True),
    sa.Column("owner_user", sa.String(NAME), nullable=False),
    sa.Column("owner_tenant", sa.String(NAME), nullable=False),
    sa.Column("source_session_id", sa.String(ID), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("params", Body, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Index("ix_dsl_instance_owner", "owner_tenant", "owner_user", "created_at"),
    **_table_kw,
)

dsl_step = sa.Table(
    "dsl_step",
    metadata,
    sa.Column("dsl_id", sa.String(ID), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("step_id", sa.String(ID), nullable=False),
    sa.Column("tool_id", sa.String(NAME), nullable=False),
    sa.Column("args", Body, nullable=False),
    sa.Column("schema_hash", sa.String(NAME), nullable=False),
    **_clustered_kw,
)

dsl_execution_log = sa.Table(
    "dsl_execution_log",
    metadata,
    sa.Column("execution_id", sa.String(ID), primary_key=True),
    sa.Column("dsl_id", sa.String(ID), nullable=False),
    sa.Column("params", Body, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("steps", Body, nullable=False),
    sa.Column("error", Body, nullable=True),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
    sa.Index("ix_dsl_execution_log_dsl", "dsl_id", "created_at"),
    **_table_kw,
)

# Append-only, hash-chained record of tool calls that read or write business data.
audit_log = sa.Table(
    "audit_log",
    metadata,
    sa.Column("id", Key, primary_key=True, autoincrement=True),
    sa.Column("at", sa.Double, nullable=False),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    sa.Column("tenant", sa.String(NAME), nullable=False),
    sa.Column("session_id", sa.String(ID), nullable=False),
    sa.Column("tool_call_id", sa.String(NAME), nullable=False),
    sa.Column("tool_id", sa.String(NAME), nullable=False),
    sa.Column("args", Body, nullable=False),
    sa.Column("outcome", sa.String(32), nullable=False),
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Index("ix_audit_log_tenant_at", "tenant", "at"),
    sa.Index("ux_audit_log_prev_hash", "prev_hash", unique=True),  # one successor per row (0006)
    **_table_kw,
)

# The audit chain's head (0007): the number of rows and the last row's hash, moved in the same
# transaction as every append, so rows deleted from the end (or all of them) are seen as missing.
audit_head = sa.Table(
    "audit_head",
    metadata,
    sa.Column("name", sa.String(16), primary_key=True),  # "chain": one row
    sa.Column("entries", sa.BigInteger, nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    **_table_kw,
)

# Write proposals and their lifecycle (tether/ops): the op id is the deep-link token, the
# business system's staging id and the idempotency key of confirm and execute.
op_queue = sa.Table(
    "op_queue",
    metadata,
    sa.Column("op_id", sa.String(ID), primary_key=True),
    sa.Column("owner_user", sa.String(NAME), nullable=False),
    sa.Column("owner_tenant", sa.String(NAME), nullable=False),
    sa.Column("brand", sa.String(64), nullable=True),
    sa.Column("subsidiary", sa.String(64), nullable=True),
    sa.Column("session_id", sa.String(ID), nullable=True),
    sa.Column("tool_call_id", sa.String(NAME), nullable=True),
    sa.Column("interaction_id", sa.String(ID), nullable=True),
    sa.Column("executor", sa.String(64), nullable=False),
    sa.Column("op_type", sa.String(16), nullable=False),
    sa.Column("form_id", sa.String(64), nullable=False),
    sa.Column("form_name", sa.String(NAME), nullable=True),
    sa.Column("module", sa.String(64), nullable=True),
    sa.Column("target_table", sa.String(NAME), nullable=True),
    sa.Column("target_id", sa.String(NAME), nullable=True),
    sa.Column("payload", Body, nullable=False),
    sa.Column("source_ref", Body, nullable=True),
    sa.Column("diff", Body, nullable=False),
    sa.Column("summary", sa.Text, nullable=True),
    sa.Column("base_version", sa.String(64), nullable=True),
    sa.Column("auto_execute", sa.Boolean, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("result_bill_id", sa.String(NAME), nullable=True),
    sa.Column("result_bill_no", sa.String(64), nullable=True),
    sa.Column("link", sa.String(512), nullable=True),
    sa.Column("message", sa.Text, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("lease_until", sa.Double, nullable=True),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("confirmed_at", sa.Double, nullable=True),
    sa.Column("executed_at", sa.Double, nullable=True),
    sa.Column("expire_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
    sa.Index("ix_op_queue_owner_created", "owner_tenant", "owner_user", "created_at"),
    sa.Index("ix_op_queue_status_expire", "status", "expire_at"),
    sa.Index("ix_op_queue_session", "session_id"),
    **_table_kw,
)

# Approvals of ops a policy matched (tether/ops/approvals, migration 0008): one request per op
# (what it needs, the fingerprint approvals sign, its expiry and outcome) and one row per approval
# given; a person counts once per fingerprint (unique), and an approval voided by a change keeps
# its row with the reason.
op_approval_request = sa.Table(
    "op_approval_request",
    metadata,
    sa.Column("op_id", sa.String(ID), primary_key=True),
    sa.Column("tenant", sa.String(NAME), nullable=False),
    sa.Column("rules", Body, nullable=False),
    sa.Column("needs", Body, nullable=False),
    sa.Column("policy_version", sa.String(64), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("requested_at", sa.Double, nullable=False),
    sa.Column("expire_at", sa.Double, nullable=False),
    sa.Column("decided_at", sa.Double, nullable=True),
    sa.Column("decided_by", sa.String(NAME), nullable=True),
    sa.Column("comment", sa.Text, nullable=True),
    sa.Column("void_reason", sa.Text, nullable=True),
    sa.Index("ix_op_approval_request_tenant", "tenant", "status", "requested_at"),
    **_table_kw,
)

op_approval = sa.Table(
    "op_approval",
    metadata,
    sa.Column("id", Key, primary_key=True, autoincrement=True),
    sa.Column("op_id", sa.String(ID), nullable=False),
    sa.Column("approver_user", sa.String(NAME), nullable=False),
    sa.Column("approver_tenant", sa.String(NAME), nullable=False),
    sa.Column("grants", Body, nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("policy_version", sa.String(64), nullable=False),
    sa.Column("at", sa.Double, nullable=False),
    sa.Column("void_reason", sa.Text, nullable=True),
    sa.UniqueConstraint("op_id", "approver_user", "approver_tenant", "fingerprint", name="ux_op_approval_once"),
    **_table_kw,
)

# The abuse limits' counters when replicas share no Redis (tether/abuse/sql_storage.py, migration
# 0009): ``name`` is a digest of namespace and key (keys hold usernames of any length).
abuse_counter = sa.Table(
    "abuse_counter",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("namespace", sa.String(NAME), nullable=False),
    sa.Column("rate_key", sa.Text, nullable=False),
    sa.Column("hits", sa.BigInteger, nullable=False),  # a fixed window's count
    sa.Column("expire_at", sa.Double, nullable=False),
    **_table_kw,
)

abuse_window = sa.Table(
    "abuse_window",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("namespace", sa.String(NAME), nullable=False),
    sa.Column("rate_key", sa.Text, nullable=False),
    sa.Column("entries", Body, nullable=False),  # a moving window's newest entries' times, newest first
    sa.Column("expire_at", sa.Double, nullable=False),
    **_table_kw,
)
