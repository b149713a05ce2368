"""Token-level checks that must run before (or instead of) parsing.

MySQL and MariaDB execute the body of ``/*! ... */`` and ``/*M! ... */`` comments, while the parser
keeps them as comments; the guard refuses them in every dialect. When the parser fails, the tokens
still say what the statement was trying to be, so the model gets a precise reason.
"""

from __future__ import annotations

import re

from sqlglot.tokens import Token, TokenType

from tether.sqlguard.nodes import COMMAND_KEYWORDS
from tether.sqlguard.policy import Reason, SqlRejected

# The comment text as the tokenizer keeps it: delimiters stripped, so "/*!50000 x */" is "!50000 x ".
_EXECUTABLE = re.compile(r"^\s*(?:[mM])?!|/\*\s*[mM]?!")


def reject_executable_comments(tokens: list[Token]) -> None:
    for token in tokens:
        for comment in token.comments:
            if _EXECUTABLE.search(comment):
                raise SqlRejected(
                    Reason.EXECUTABLE_COMMENT,
                    "executable comments (/*! ... */, /*M! ... */) are not allowed: the server runs "
                    "their contents; write the SQL without them",
                )


def statement_groups(tokens: list[Token]) -> list[list[Token]]:
    """Tokens split at top-level semicolons, empty groups dropped."""
    groups: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            groups.append([])
        else:
            groups[-1].append(token)
    return [g for g in groups if g]


def classify_unparsed(tokens: list[Token], error: str) -> SqlRejected:
    """The most specific rejection for input the parser could not turn into a tree."""
    groups = statement_groups(tokens)
    if len(groups) > 1:
        return multiple_statements(len(groups))
    words = [t.text.upper() for t in groups[0]] if groups else []
    first = words[0] if words else ""
    if "OUTFILE" in words or "DUMPFILE" in words:
        return SqlRejected(Reason.SELECT_INTO, "SELECT ... INTO OUTFILE/DUMPFILE is not allowed: return rows instead")
    if "LOCK" in words and "SHARE" in words:
        return locking_read()
    if first in COMMAND_KEYWORDS:
        return for_command(first)
    return SqlRejected(
        Reason.PARSE_ERROR,
        f"the query could not be parsed ({error.splitlines()[0] if error else 'syntax error'}); "
        "send one plain SELECT statement",
    )


def multiple_statements(count: int) -> SqlRejected:
    return SqlRejected(
        Reason.MULTIPLE_STATEMENTS,
        f"found {count} statements; send exactly one SELECT (no ';' between statements)",
    )


def locking_read() -> SqlRejected:
    return SqlRejected(
        Reason.LOCKING_READ,
        "locking reads (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE) are not allowed; remove the locking clause",
    )


def for_command(keyword: str) -> SqlRejected:
    code = COMMAND_KEYWORDS.get(keyword, Reason.OPAQUE_COMMAND)
    if code is Reason.WRITE_STATEMENT:
        return SqlRejected(code, f"{keyword} changes data or schema; only a read-only SELECT is allowed")
    if code is Reason.SESSION_COMMAND:
        return SqlRejected(code, f"{keyword} statements are not allowed; only a single read-only SELECT can be run")
    if code is Reason.NOT_SELECT:
        return SqlRejected(code, f"{keyword} is not a SELECT; write a SELECT over the allowed tables")
    return SqlRejected(code, f"'{keyword} ...' is not a query the sandbox understands; write a plain SELECT")
