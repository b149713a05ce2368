"""The AST walk: every node of the query is allowed by type, every function by name, every table by
the whitelist, with CTE names resolved by scope.

The walk only reads the tree; it returns the base-table references for the tenant rewrite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from tether.sqlguard.functions import ALLOWED_ANONYMOUS, ALLOWED_FUNCTIONS, function_label
from tether.sqlguard.nodes import (
    ANY_LITERAL_SPELLING,
    FORBIDDEN_INSIDE,
    LITERAL_SPELLINGS,
    SESSION_WORDS,
    STRUCTURAL,
    SYSTEM_SCHEMAS,
    SYSTEM_TABLE_PREFIXES,
)
from tether.sqlguard.policy import Policy, Reason, SqlRejected

_TABLE_ARGS = frozenset({"this", "alias"})
_EMPTY: tuple[object, ...] = (None, False, "", [])
# What each literal spelling may carry besides its text: flags, UESCAPE's character, the
# introducer's literal.
_LITERAL_ARGS: dict[str, frozenset[str]] = {
    "HexString": frozenset({"this", "is_integer"}),
    "ByteString": frozenset({"this", "is_bytes"}),
    "UnicodeString": frozenset({"this", "escape"}),
    "Introducer": frozenset({"this", "expression"}),
}
_DIGITS = {"HexString": re.compile(r"^[0-9A-Fa-f]*$"), "BitString": re.compile(r"^[01]*$")}
_CHARSET = re.compile(r"^_[A-Za-z0-9]+$")


@dataclass(slots=True)
class TableRef:
    """One reference to a whitelisted base table, and the policy's spelling of its name."""

    node: exp.Table
    table: str


@dataclass(slots=True)
class Scan:
    refs: list[TableRef] = field(default_factory=list)
    qualified_columns: list[exp.Column] = field(default_factory=list)
    dual: list[exp.Table] = field(default_factory=list)  # MySQL's FROM DUAL: no table at all


class QueryChecker:
    """Walks one query tree; raises ``SqlRejected`` at the first violation."""

    def __init__(self, policy: Policy, dialect: str) -> None:
        self._policy = policy
        self._dialect = dialect
        self._scan = Scan()

    def check(self, root: exp.Expr) -> Scan:
        self._visit(root, frozenset())
        if self._policy.columns:
            self._check_qualified_columns()
        return self._scan

    def _visit(self, node: exp.Expr, ctes: frozenset[str]) -> None:
        cls = type(node)
        if cls not in STRUCTURAL:
            self._non_structural(node)
        elif cls is exp.Table:
            self._table(node, ctes)  # type: ignore[arg-type]
            return
        elif cls is exp.DataType:
            return
        elif cls is exp.Column:
            self._column(node)  # type: ignore[arg-type]
        elif cls is exp.Var:
            self._session_word(node.name, node)
        elif cls is exp.Lateral and not isinstance(node.this, exp.Subquery):
            raise SqlRejected(Reason.UNEXPECTED_NODE, "LATERAL is allowed only before a parenthesised subquery")
        args = node.args
        with_ = args.get("with_")
        if with_ is not None:
            ctes = self._with(with_, ctes)
        for key, value in args.items():
            if key == "with_" or value is None:
                continue
            if isinstance(value, exp.Expr):
                self._visit(value, ctes)
            elif type(value) is list:
                for item in value:
                    if isinstance(item, exp.Expr):
                        self._visit(item, ctes)

    def _non_structural(self, node: exp.Expr) -> None:
        """A node outside the syntax allowlist: a literal spelling, an allowed function, or a rejection."""
        cls = type(node)
        if cls in ANY_LITERAL_SPELLING:
            self._literal(node)
            return
        reason = FORBIDDEN_INSIDE.get(cls)
        if cls is exp.Parameter and isinstance(node.this, exp.Literal):
            reason = Reason.PLACEHOLDER  # PostgreSQL's $1
        if reason is not None:
            raise _forbidden(node, reason)
        if not isinstance(node, exp.Func):
            raise SqlRejected(
                Reason.UNEXPECTED_NODE,
                f"the query uses syntax the sandbox does not allow ({cls.__name__}); "
                "use plain SELECT, joins, subqueries, CTEs, GROUP BY, window functions",
            )
        self._function(node)

    def _literal(self, node: exp.Expr) -> None:
        """A literal in another spelling than '...': one value, of a spelling this dialect has."""
        cls = type(node)
        name = cls.__name__
        if cls not in LITERAL_SPELLINGS[self._dialect]:
            raise SqlRejected(
                Reason.UNEXPECTED_NODE,
                f"{self._dialect} has no literal written like this ({name}); write the value as a plain '...' string",
            )
        allowed = _LITERAL_ARGS.get(name, frozenset({"this"}))
        text = node.args.get("this")
        odd = [key for key, value in node.args.items() if key not in allowed and value not in _EMPTY]
        if odd or not isinstance(text, str) or (name in _DIGITS and not _DIGITS[name].match(text)):
            raise _forbidden(node, Reason.UNEXPECTED_NODE)
        if name == "UnicodeString":
            escape = node.args.get("escape")
            if escape not in _EMPTY and not (
                isinstance(escape, exp.Literal) and escape.is_string and len(escape.name) == 1
            ):
                raise _forbidden(node, Reason.UNEXPECTED_NODE)
        if name == "Introducer":
            inner = node.args.get("expression")
            if not _CHARSET.match(text) or not (
                (isinstance(inner, exp.Literal) and inner.is_string) or type(inner) in (exp.HexString, exp.BitString)
            ):
                raise _forbidden(node, Reason.UNEXPECTED_NODE)  # the walk goes on into the literal

    def _with(self, with_: exp.Expr, ctes: frozenset[str]) -> frozenset[str]:
        """Visit each CTE body with the names visible to it; return the names visible after WITH.

        A CTE body sees the CTEs before it (and itself under RECURSIVE), never later ones: this is
        the narrowest visibility of the supported servers, so a name is treated as a CTE only where
        every server also resolves it to the CTE.
        """
        if not isinstance(with_, exp.With):
            raise _forbidden(with_, Reason.UNEXPECTED_NODE)
        # SQLite resolves a CTE's own name inside its body to the CTE, RECURSIVE or not.
        recursive = bool(with_.args.get("recursive")) or self._dialect == "sqlite"
        visible = set(ctes)
        for key, value in with_.args.items():
            if key not in ("expressions", "recursive") and value not in _EMPTY:
                raise _forbidden(with_, Reason.UNEXPECTED_NODE)
        for cte in with_.expressions:
            if not isinstance(cte, exp.CTE):
                raise _forbidden(cte, Reason.UNEXPECTED_NODE)
            alias = cte.args.get("alias")
            ident = alias.this if isinstance(alias, exp.TableAlias) else None
            if not isinstance(ident, exp.Identifier):
                raise _forbidden(cte, Reason.UNEXPECTED_NODE)
            key = self._name_key(ident)
            self._visit(cte, frozenset(visible | {key}) if recursive else frozenset(visible))
            visible.add(key)
        return frozenset(visible)

    def _name_key(self, ident: exp.Identifier) -> str:
        # PostgreSQL folds unquoted names to lower case; the others compare CTE names exactly here
        # (narrower than the server, which is the safe direction).
        if self._dialect == "postgres" and not ident.quoted:
            return str(ident.this).lower()
        return str(ident.this)

    def _table(self, node: exp.Table, ctes: frozenset[str]) -> None:
        ident = node.this
        if not isinstance(ident, exp.Identifier):
            raise SqlRejected(
                Reason.TABLE_FUNCTION,
                f"table-valued functions ({function_label(ident)}) are not allowed in FROM; "
                "select from an allowed table",
            )
        if not isinstance(node.parent, (exp.From, exp.Join)):
            raise _forbidden(node, Reason.UNEXPECTED_NODE)
        name = str(ident.this)
        schema = node.args.get("catalog") or node.args.get("db")
        lowered = name.lower()
        is_system = lowered in SYSTEM_SCHEMAS or lowered.startswith(SYSTEM_TABLE_PREFIXES)
        if schema is not None:
            if schema.name.lower() in SYSTEM_SCHEMAS or is_system:
                raise _system(f"{schema.name}.{name}")
            raise SqlRejected(
                Reason.QUALIFIED_NAME,
                f"schema- or database-qualified names ({schema.name}.{name}) are not allowed; "
                f"write the bare table name: {self._allowed_tables()}",
            )
        for key, value in node.args.items():
            if key not in _TABLE_ARGS and value not in _EMPTY:
                raise SqlRejected(
                    Reason.UNEXPECTED_NODE,
                    f"table options ({key}: index hints, TABLESAMPLE, ONLY, ...) are not allowed on {name}",
                )
        alias = node.args.get("alias")
        if alias is not None:
            self._visit(alias, ctes)
        if self._name_key(ident) in ctes:
            return
        if is_system:
            raise _system(name)
        canonical = self._policy.canonical_table(name)
        if canonical is None:
            if self._is_dual(node, ident):
                self._scan.dual.append(node)
                return
            raise SqlRejected(
                Reason.TABLE_NOT_ALLOWED,
                f"table {name!r} is not allowed; this query may read only: {self._allowed_tables()}",
            )
        self._scan.refs.append(TableRef(node, canonical))

    def _is_dual(self, node: exp.Table, ident: exp.Identifier) -> bool:
        parent = node.parent
        return (
            self._dialect == "mysql"
            and str(ident.this).lower() == "dual"
            and not ident.quoted
            and node.args.get("alias") is None
            and isinstance(parent, exp.From)
            and isinstance(parent.parent, exp.Select)
            and not parent.parent.args.get("joins")
        )

    def _column(self, node: exp.Column) -> None:
        if node.args.get("db") is not None or node.args.get("catalog") is not None:
            raise SqlRejected(
                Reason.QUALIFIED_NAME,
                f"column {node.sql()} is schema-qualified; qualify columns by table alias only",
            )
        if node.args.get("table") is None:
            ident = node.this
            if isinstance(ident, exp.Identifier) and not ident.quoted:
                self._session_word(str(ident.this), node)
                if self._dialect != "mysql" and str(ident.this).startswith("$"):
                    raise _forbidden(node, Reason.PLACEHOLDER)  # SQLite's $name binds a parameter
        elif self._policy.columns:
            self._scan.qualified_columns.append(node)

    def _session_word(self, name: str, node: exp.Expr) -> None:
        # Bare CURRENT_USER, SESSION_USER, USER, ... read session state in PostgreSQL.
        if self._dialect == "postgres" and name.lower() in SESSION_WORDS:
            raise _forbidden(node, Reason.VARIABLE)

    def _function(self, node: exp.Func) -> None:
        if type(node) in ALLOWED_FUNCTIONS:
            return
        if isinstance(node, exp.Anonymous) and str(node.name).lower() in ALLOWED_ANONYMOUS:
            return
        label = function_label(node)
        if self._policy.allows_function(label):
            return
        raise SqlRejected(
            Reason.FUNCTION_NOT_ALLOWED,
            f"function {label}() is not allowed; use aggregates, window, string, math and date functions",
        )

    def _check_qualified_columns(self) -> None:
        restricted: dict[str, tuple[str, frozenset[str]]] = {}
        for ref in self._scan.refs:
            cols = self._policy.columns.get(ref.table)
            if cols is not None:
                restricted[ref.node.alias_or_name.lower()] = (ref.table, frozenset(c.lower() for c in cols))
        for column in self._scan.qualified_columns:
            entry = restricted.get(column.table.lower())
            if entry is None or isinstance(column.this, exp.Star):
                continue
            table, allowed = entry
            if column.name.lower() not in allowed:
                raise SqlRejected(
                    Reason.COLUMN_NOT_ALLOWED,
                    f"column {column.name!r} of {table} is not allowed; allowed columns: "
                    f"{', '.join(sorted(self._policy.columns[table]))}",
                )

    def _allowed_tables(self) -> str:
        return ", ".join(sorted(self._policy.tables))


def _system(name: str) -> SqlRejected:
    return SqlRejected(
        Reason.SYSTEM_SCHEMA,
        f"{name} is a system schema or catalogue table and cannot be read; query the allowed tables",
    )


_MESSAGES: dict[Reason, str] = {
    Reason.WRITE_STATEMENT: "data-changing or schema-changing statements are not allowed anywhere in the query "
    "(including CTEs); only read with SELECT",
    Reason.SESSION_COMMAND: "session, file and procedure statements are not allowed; send one SELECT",
    Reason.SELECT_INTO: "SELECT ... INTO (tables, files, variables) is not allowed; return the rows instead",
    Reason.LOCKING_READ: "locking reads (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE) are not allowed; "
    "remove the locking clause",
    Reason.VARIABLE: "variables, assignments and session/system values (@x, @@x, :=, CURRENT_USER) are "
    "not allowed; use literal values",
    Reason.PLACEHOLDER: "bind placeholders (?, :name, $1) are not allowed; write literal values",
    Reason.OPTIMIZER_HINT: "optimizer hints (/*+ ... */) are not allowed; remove them",
    Reason.OPAQUE_COMMAND: "the query contains a statement the sandbox cannot inspect; send a plain SELECT",
    Reason.QUALIFIED_NAME: "qualified names (schema.table, schema.function) are not allowed; use bare names",
    Reason.TABLE_FUNCTION: "table-valued functions are not allowed; select from an allowed table",
    Reason.UNEXPECTED_NODE: "the query uses syntax the sandbox does not allow; use plain SELECT syntax",
}


def _forbidden(node: exp.Expr, reason: Reason) -> SqlRejected:
    return SqlRejected(reason, f"{_MESSAGES[reason]} (found: {type(node).__name__})")
