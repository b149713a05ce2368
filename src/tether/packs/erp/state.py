"""The pack's own tables, in tether's database: the per-brand cache of normalised question →
validated SQL (seed's ``ai_global_agent_question_sql``) and the SQL error history (seed's
``ai_sql_error_history``). Cached SQL is only ever a candidate: it is guarded again on every use."""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()
_kw: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}
Body = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")

question_sql = sa.Table(
    "erp_question_sql",
    metadata,
    sa.Column("brands_id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("question_hash", sa.String(64), primary_key=True),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("sql_text", Body, nullable=False),
    sa.Column("hits", sa.Integer, nullable=False, default=0),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("used_at", sa.Double, nullable=False),
    **_kw,
)

sql_error = sa.Table(
    "erp_sql_error",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.Double, nullable=False),
    sa.Column("brands_id", sa.Integer, nullable=False),
    sa.Column("user_id", sa.String(128), nullable=False),
    sa.Column("session_id", sa.String(64), nullable=False),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("sql_text", Body, nullable=False),
    sa.Column("error", sa.Text, nullable=False),
    **_kw,
)

_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[？?。.!！,，;；:：\"'“”‘’]+")


def normalise_question(question: str) -> str:
    text = unicodedata.normalize("NFKC", question).strip().lower()
    return _SPACE.sub(" ", _PUNCT.sub(" ", text)).strip()


def question_key(question: str) -> str:
    return hashlib.sha256(normalise_question(question).encode()).hexdigest()


TOUCH_S = 60.0  # a cache row's hit count and last use are written at most this often


class QueryState:
    """The cache keeps no durable write on its hot path: a hit is a read, and storing the SQL a
    row already holds is skipped (``_stored`` remembers what this process wrote or read). A lost
    cache row only costs a model call that writes the SQL again."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._stored: dict[tuple[int, str], tuple[str, float, int]] = {}  # -> (sql, last touch, hits since)

    def cached_sql(self, brand: int, question: str) -> str | None:
        key = question_key(question)
        where = (question_sql.c.brands_id == brand) & (question_sql.c.question_hash == key)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(question_sql.c.sql_text).where(where)).first()
        if row is None:
            self._stored.pop((brand, key), None)
            return None
        sql_text, now = str(row[0]), time.time()
        _, touched, hits = self._stored.get((brand, key), (sql_text, 0.0, 0))
        if now - touched >= TOUCH_S:
            with self.engine.begin() as conn:
                conn.execute(
                    question_sql.update().where(where).values(hits=question_sql.c.hits + hits + 1, used_at=now)
                )
            self._stored[(brand, key)] = (sql_text, now, 0)
        else:
            self._stored[(brand, key)] = (sql_text, touched, hits + 1)
        return sql_text

    def holds(self, brand: int, question: str, sql_text: str) -> bool:
        """Whether this process already stored (or read) exactly this SQL for the question: then
        ``remember`` has nothing to write."""
        known = self._stored.get((brand, question_key(question)))
        return known is not None and known[0] == sql_text

    def remember(self, brand: int, question: str, sql_text: str) -> None:
        key, now = question_key(question), time.time()
        known = self._stored.get((brand, key))
        if known is not None and known[0] == sql_text:
            return  # this process stored or read this very SQL for the question: nothing to write
        self._stored[(brand, key)] = (sql_text, now, 0)
        where = (question_sql.c.brands_id == brand) & (question_sql.c.question_hash == key)
        with self.engine.begin() as conn:
            if conn.execute(sa.select(question_sql.c.hits).where(where)).first() is None:
                conn.execute(
                    question_sql.insert().values(
                        brands_id=brand,
                        question_hash=key,
                        question=normalise_question(question)[:2000],
                        sql_text=sql_text,
                        hits=0,
                        created_at=now,
                        used_at=now,
                    )
                )
            else:
                conn.execute(question_sql.update().where(where).values(sql_text=sql_text, used_at=now))

    def forget(self, brand: int, question: str) -> None:
        self._stored.pop((brand, question_key(question)), None)
        with self.engine.begin() as conn:
            conn.execute(
                question_sql.delete().where(
                    question_sql.c.brands_id == brand, question_sql.c.question_hash == question_key(question)
                )
            )

    def record_error(self, brand: int, user_id: str, session_id: str, question: str, sql_text: str, error: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                sql_error.insert().values(
                    at=time.time(),
                    brands_id=brand,
                    user_id=user_id,
                    session_id=session_id,
                    question=question[:2000],
                    sql_text=sql_text[:20_000],
                    error=error[:2000],
                )
            )

    def errors(self, brand: int | None = None) -> list[dict[str, object]]:
        query = sa.select(sql_error).order_by(sql_error.c.id)
        if brand is not None:
            query = query.where(sql_error.c.brands_id == brand)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]
