"""What a guarded query may touch (``Policy``), what came out (``GuardedQuery``), and why not (``SqlRejected``).

Reason codes are stable strings: callers, audit logs and tests match on them; messages may change.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from tether.errors import ConfigError, ToolError

DIALECTS = ("mysql", "postgres", "sqlite")

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


class Reason(StrEnum):
    """Stable reason codes of ``SqlRejected``."""

    EMPTY = "empty"
    MULTIPLE_STATEMENTS = "multiple_statements"
    PARSE_ERROR = "parse_error"
    NOT_SELECT = "not_select"
    WRITE_STATEMENT = "write_statement"
    OPAQUE_COMMAND = "opaque_command"
    UNEXPECTED_NODE = "unexpected_node"
    SELECT_INTO = "select_into"
    LOCKING_READ = "locking_read"
    VARIABLE = "variable"
    PLACEHOLDER = "placeholder"
    SESSION_COMMAND = "session_command"
    EXECUTABLE_COMMENT = "executable_comment"
    OPTIMIZER_HINT = "optimizer_hint"
    FUNCTION_NOT_ALLOWED = "function_not_allowed"
    TABLE_FUNCTION = "table_function"
    TABLE_NOT_ALLOWED = "table_not_allowed"
    QUALIFIED_NAME = "qualified_name"
    SYSTEM_SCHEMA = "system_schema"
    COLUMN_NOT_ALLOWED = "column_not_allowed"
    INVALID_OFFSET = "invalid_offset"


class SqlRejected(ToolError):
    """The query was refused; ``code`` is a stable ``Reason``, ``message`` says what to change.

    The model wrote the query, so it can retry with a corrected one (``retryable`` is true).
    """

    def __init__(self, code: Reason, message: str) -> None:
        super().__init__(message, retryable=True)
        self.code = code

    def __repr__(self) -> str:
        return f"SqlRejected({self.code.value!r}, {self.message!r})"


@dataclass(frozen=True, slots=True)
class GuardedQuery:
    """A query that passed the guard: run ``sql`` (regenerated from the checked tree), never the input."""

    sql: str
    tables: tuple[str, ...]
    limit: int
    dialect: str


@dataclass(frozen=True)
class Policy:
    """The tables one user may read, the tenant they belong to, and the row cap.

    ``tables`` maps each whitelisted table to its tenant column (``None``: the table is not split by
    tenant). ``filters`` adds, per table, more ``column = value`` predicates that hold wherever the
    table is read, like the tenant's (a subsidiary, the user's own rows). ``columns`` optionally
    restricts a table to the listed columns. ``functions`` adds names to the function allowlist.
    Names are written as they would be unquoted in SQL; table names match case-insensitively and
    are emitted as spelled here. ``version`` is the caller's revision of what the policy means
    beyond its fields (bump it to make every cached verdict under the old one unreachable).

    ``fingerprint`` is every field in a canonical, hashable form — the key under which a verdict
    may be reused (``verdicts.GuardCache``): two policies share it only if they would let the same
    SQL through with the same rewrite.
    """

    tables: Mapping[str, str | None]
    tenant: str | int | None = None
    max_rows: int = 500
    columns: Mapping[str, Collection[str]] = field(default_factory=dict)
    functions: Collection[str] = ()
    filters: Mapping[str, Mapping[str, str | int]] = field(default_factory=dict)
    version: str | int = 0
    _by_lower: dict[str, str] = field(init=False, repr=False, compare=False)
    _functions: frozenset[str] = field(init=False, repr=False, compare=False)
    fingerprint: tuple[object, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.tables:
            raise ConfigError("Policy.tables is empty: whitelist at least one table")
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, int) or self.max_rows < 1:
            raise ConfigError(f"Policy.max_rows must be a positive integer, got {self.max_rows!r}")
        by_lower: dict[str, str] = {}
        for name, tenant_column in self.tables.items():
            _check_name(name, "table")
            if tenant_column is not None:
                _check_name(tenant_column, "tenant column")
            if name.lower() in by_lower:
                raise ConfigError(f"Policy.tables lists {name!r} twice (names match case-insensitively)")
            by_lower[name.lower()] = name
        needs_tenant = any(col is not None for col in self.tables.values())
        if needs_tenant and (self.tenant is None or isinstance(self.tenant, bool)):
            raise ConfigError("Policy.tenant is required when a table has a tenant column")
        self._check_filters()
        for name, cols in self.columns.items():
            if name not in self.tables:
                raise ConfigError(f"Policy.columns names {name!r}, which is not in Policy.tables")
            if isinstance(cols, str) or not cols:
                raise ConfigError(f"Policy.columns[{name!r}] must be a non-empty collection of names")
            for col in cols:
                _check_name(col, "column")
        object.__setattr__(self, "_by_lower", by_lower)
        object.__setattr__(self, "_functions", frozenset(f.lower() for f in self.functions))
        object.__setattr__(self, "fingerprint", self._fingerprint())

    def _fingerprint(self) -> tuple[object, ...]:
        # values keep their type (1 and "1" are different tenants to the rewrite); names their spelling
        return (
            tuple(sorted(self.tables.items(), key=lambda kv: kv[0])),
            (type(self.tenant).__name__, self.tenant),
            self.max_rows,
            tuple(sorted((t, tuple(sorted(cols))) for t, cols in self.columns.items())),
            tuple(sorted(self._functions)),
            tuple(
                sorted(
                    (t, tuple(sorted((c, type(v).__name__, v) for c, v in preds.items())))
                    for t, preds in self.filters.items()
                )
            ),
            (type(self.version).__name__, self.version),
        )

    def _check_filters(self) -> None:
        for name, predicates in self.filters.items():
            if name not in self.tables:
                raise ConfigError(f"Policy.filters names {name!r}, which is not in Policy.tables")
            for col, value in predicates.items():
                _check_name(col, "filter column")
                if isinstance(value, bool) or not isinstance(value, str | int):
                    raise ConfigError(f"Policy.filters[{name!r}][{col!r}] must be a string or an integer")

    def canonical_table(self, name: str) -> str | None:
        """The whitelisted spelling of ``name`` (case-insensitive), or ``None`` if not whitelisted."""
        return self._by_lower.get(name.lower())

    def allows_function(self, name: str) -> bool:
        return name.lower() in self._functions


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str) or not name or "\x00" in name:
        raise ConfigError(f"Policy: invalid {what} name {name!r}")


def is_plain_name(name: str) -> bool:
    return bool(_PLAIN_NAME.match(name))
