"""``guard()``: one model-written SQL string in, one checked and rewritten query out (or a rejection).

Order: tokenize (refuse executable comments), parse, count statements, check the root, walk the
tree, rewrite tables and LIMIT, regenerate without comments. The input string is never returned.
"""

from __future__ import annotations

import re
from functools import cache

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, TokenError, UnsupportedError

from tether.errors import ConfigError
from tether.sqlguard.checks import QueryChecker
from tether.sqlguard.nodes import COMMAND_KEYWORDS, FORBIDDEN_INSIDE, QUERY_ROOTS
from tether.sqlguard.policy import DIALECTS, GuardedQuery, Policy, Reason, SqlRejected
from tether.sqlguard.rewrite import cap_limit, drop_dual, inject_tenant_predicate
from tether.sqlguard.tokens import (
    classify_unparsed,
    for_command,
    multiple_statements,
    reject_executable_comments,
)

MAX_SQL_CHARS = 100_000
_EXPLAIN_ANALYZE = re.compile(r"\s*(\([^)]*\bANALY[SZ]E\b|ANALY[SZ]E\b)")


@cache
def _dialect(name: str) -> Dialect:
    return Dialect.get_or_raise(name)


def guard(sql: str, *, dialect: str, policy: Policy) -> GuardedQuery:
    """Check ``sql`` against ``policy`` for a server speaking ``dialect``; raise ``SqlRejected`` if it
    is anything but one read-only SELECT over whitelisted tables.
    """
    if dialect not in DIALECTS:
        raise ConfigError(f"unknown SQL dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")
    if not isinstance(sql, str) or not sql.strip():
        raise SqlRejected(Reason.EMPTY, "the query is empty; send one SELECT statement")
    if len(sql) > MAX_SQL_CHARS or "\x00" in sql:
        raise SqlRejected(Reason.PARSE_ERROR, f"the query must be under {MAX_SQL_CHARS} characters of text")
    d = _dialect(dialect)
    try:
        tokens = d.tokenize(sql)
    except TokenError as e:
        raise SqlRejected(Reason.PARSE_ERROR, f"the query could not be tokenized ({e}); check quotes") from e
    reject_executable_comments(tokens)
    try:
        statements = d.parser().parse(tokens, sql)
    except ParseError as e:
        raise classify_unparsed(tokens, str(e)) from e
    found = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if not found:
        raise SqlRejected(Reason.EMPTY, "the query has no statement (only comments or ';'); send one SELECT")
    if len(found) > 1:
        raise multiple_statements(len(found))
    root = _query_root(found[0], tokens[0].text.upper())
    scan = QueryChecker(policy, dialect).check(root)
    inject_tenant_predicate(scan.refs, policy)
    drop_dual(scan.dual)
    limit = cap_limit(root, policy.max_rows)
    try:
        text = d.generator(comments=False, unsupported_level=ErrorLevel.RAISE).generate(root, copy=False)
    except UnsupportedError as e:
        raise SqlRejected(Reason.UNEXPECTED_NODE, f"the query uses syntax {dialect} cannot run: {e}") from e
    return GuardedQuery(
        sql=text,
        tables=tuple(sorted({ref.table for ref in scan.refs})),
        limit=limit,
        dialect=dialect,
    )


def _query_root(statement: exp.Expr, first_word: str) -> exp.Expr:
    node = statement
    while isinstance(node, exp.Subquery):
        if any(value not in (None, False, []) for key, value in node.args.items() if key != "this"):
            raise SqlRejected(
                Reason.NOT_SELECT, "write the query without outer parentheses around a SELECT with ORDER BY/LIMIT"
            )
        node = node.this
    if type(node) in QUERY_ROOTS:
        return node
    if isinstance(node, exp.Command):
        keyword = str(node.this).split()[0].upper() if str(node.this).strip() else first_word
        rest = node.expression.name.upper() if isinstance(node.expression, exp.Literal) else ""
        if keyword == "EXPLAIN" and _EXPLAIN_ANALYZE.match(rest):
            raise SqlRejected(Reason.WRITE_STATEMENT, "EXPLAIN ANALYZE executes its statement; send a SELECT")
        raise for_command(keyword)
    if isinstance(node, exp.Describe):
        if str(node.args.get("style") or "").upper() == "ANALYZE":
            raise SqlRejected(Reason.WRITE_STATEMENT, "EXPLAIN ANALYZE executes its statement; send a SELECT")
        raise SqlRejected(Reason.NOT_SELECT, "EXPLAIN/DESCRIBE is not allowed; send the SELECT itself")
    if first_word in COMMAND_KEYWORDS:
        raise for_command(first_word)
    reason = FORBIDDEN_INSIDE.get(type(node))
    if reason in (Reason.WRITE_STATEMENT, Reason.SESSION_COMMAND):
        raise SqlRejected(
            reason,
            f"{type(node).__name__.upper()} statements are not allowed; only one read-only SELECT can run",
        )
    raise SqlRejected(
        Reason.NOT_SELECT,
        f"the statement is a {type(node).__name__}, not a SELECT; write one SELECT (UNION and WITH allowed)",
    )
