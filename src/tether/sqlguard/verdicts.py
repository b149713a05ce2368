"""``GuardCache``: ``guard()``'s verdicts reused — the rewritten query, or the rejection — for the
same SQL text, dialect and policy.

``guard`` is a pure function of those three, so its answer for them never changes within a
process; the cache skips sqlglot (~1 ms) when a question's SQL comes again. The key is the exact
SQL text (not normalised), the dialect, ``GUARD_RULES`` (this module's revision of the guard) and
``Policy.fingerprint`` — every field of the policy: tables and their tenant columns, the tenant,
the row cap, column restrictions, extra functions, the per-table filters (subsidiary, own rows)
and the policy's version. A caller with another brand, grant set, row scope or policy version
therefore never reads another's entry; there is no partial match and no sharing across keys.

Bounded: at most ``max_entries`` verdicts, least recently used dropped first, and SQL longer than
``max_sql_chars`` is guarded every time and never stored. Thread-safe (a lock around the map).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from tether.sqlguard.guard import guard
from tether.sqlguard.policy import GuardedQuery, Policy, Reason, SqlRejected

GUARD_RULES = 1  # bump with any change to what guard() accepts or how it rewrites

Verdict = GuardedQuery | tuple[Reason, str]
Key = tuple[str, str, int, tuple[object, ...]]


class GuardCache:
    def __init__(self, max_entries: int = 1024, max_sql_chars: int = 8000) -> None:
        self.max_entries = max_entries
        self.max_sql_chars = max_sql_chars
        self._verdicts: OrderedDict[Key, Verdict] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def lookup(self, sql: str, *, dialect: str, policy: Policy) -> GuardedQuery | None:
        """The cached verdict, without guarding: the query, ``SqlRejected`` raised, or None (not cached)."""
        if not isinstance(sql, str) or len(sql) > self.max_sql_chars:
            return None
        key = (sql, dialect, GUARD_RULES, policy.fingerprint)
        with self._lock:
            verdict = self._verdicts.get(key)
            if verdict is None:
                return None
            self._verdicts.move_to_end(key)
            self.hits += 1
        if isinstance(verdict, GuardedQuery):
            return verdict
        raise SqlRejected(*verdict)  # a fresh exception each time: never a shared, mutable one

    def guard(self, sql: str, *, dialect: str, policy: Policy) -> GuardedQuery:
        """``guard(sql, dialect=, policy=)``, answered from the cache when it can be."""
        cached = self.lookup(sql, dialect=dialect, policy=policy)
        if cached is not None:
            return cached
        with self._lock:
            self.misses += 1
        try:
            query = guard(sql, dialect=dialect, policy=policy)
        except SqlRejected as exc:
            self._store(sql, dialect, policy, (exc.code, exc.message))
            raise
        self._store(sql, dialect, policy, query)
        return query

    def _store(self, sql: str, dialect: str, policy: Policy, verdict: Verdict) -> None:
        if not isinstance(sql, str) or len(sql) > self.max_sql_chars:
            return
        key = (sql, dialect, GUARD_RULES, policy.fingerprint)
        with self._lock:
            self._verdicts[key] = verdict
            self._verdicts.move_to_end(key)
            while len(self._verdicts) > self.max_entries:
                self._verdicts.popitem(last=False)

    def __len__(self) -> int:
        return len(self._verdicts)
