"""Which AST node types a read-only query may contain, and the reason code for each forbidden one.

An allowlist: a node type not named here is refused as ``unexpected_node``, so a parser upgrade that
adds node types can only make the guard stricter, never looser.
"""

from __future__ import annotations

from sqlglot import exp

from tether.sqlguard.policy import Reason


def _classes(names: str) -> frozenset[type[exp.Expr]]:
    return frozenset(getattr(exp, name) for name in names.split() if hasattr(exp, name))


# Syntax nodes that read and compute only. Functions (exp.Func) are checked in functions.py;
# Table, Column, Var, Identifier and DataType have their own rules in the walker.
STRUCTURAL = _classes(
    """
    Select Union Intersect Except Subquery From Join Where Group Having Order Ordered Limit Offset
    With CTE TableAlias Alias Literal Star Paren And Or Not Xor EQ NEQ NullSafeEQ NullSafeNEQ GT GTE
    LT LTE Is In Between Like ILike SimilarTo Glob Escape Add Sub Mul Div Mod IntDiv Neg BitwiseAnd
    BitwiseOr BitwiseXor BitwiseNot BitwiseLeftShift BitwiseRightShift DPipe Null Boolean Distinct
    Interval Window WindowSpec Filter WithinGroup IgnoreNulls RespectNulls Rollup Cube GroupingSets
    Values Tuple Collate Exists Any All Lateral Identifier Column Var Table DataType DataTypeParam
    Bracket Case If Cast TryCast Extract Array Qualify LimitOptions Fetch
    """
)

QUERY_ROOTS = _classes("Select Union Intersect Except")

# Ways of spelling a literal other than '...', per dialect: each is one value whose text the
# tokenizer has already taken apart, so a ';', a comment or a function call inside it is part of
# the value. The walker checks their shape (``QueryChecker._literal``) and the generator writes
# them back as literals of the same dialect. A spelling a dialect does not have is refused.
LITERAL_SPELLINGS: dict[str, frozenset[type[exp.Expr]]] = {
    # $$…$$ / $tag$…$tag$, E'…', U&'…' [UESCAPE 'c'], N'…', B'…' and X'…' bit strings
    "postgres": _classes("RawString ByteString UnicodeString National HexString BitString"),
    # N'…', X'…' / 0x…, b'…' / 0b…, a charset introducer (_utf8mb4'…'); backslash escapes in '…'
    "mysql": _classes("National HexString BitString Introducer"),
    # X'…' blobs
    "sqlite": _classes("HexString"),
}
ANY_LITERAL_SPELLING = frozenset().union(*LITERAL_SPELLINGS.values())

# Statement types that change data, schema or grants.
WRITES = _classes(
    """
    Insert Update Delete Merge Create Drop Alter TruncateTable Grant Revoke Analyze Refresh Comment
    Cache Uncache LoadData Kill
    """
)

# Statements that change or read session state, run other code, or touch files.
SESSION = _classes("Set SetItem Pragma Use Copy Attach Detach Transaction Commit Rollback Declare Execute")

FORBIDDEN_INSIDE: dict[type[exp.Expr], Reason] = {
    **dict.fromkeys(WRITES, Reason.WRITE_STATEMENT),
    **dict.fromkeys(SESSION, Reason.SESSION_COMMAND),
    **dict.fromkeys(_classes("Into"), Reason.SELECT_INTO),
    **dict.fromkeys(_classes("Lock"), Reason.LOCKING_READ),
    **dict.fromkeys(
        _classes("Parameter SessionParameter PropertyEQ CurrentUser SessionUser CurrentRole"),
        Reason.VARIABLE,
    ),
    **dict.fromkeys(_classes("Placeholder"), Reason.PLACEHOLDER),
    **dict.fromkeys(_classes("Hint"), Reason.OPTIMIZER_HINT),
    **dict.fromkeys(_classes("Command"), Reason.OPAQUE_COMMAND),
    **dict.fromkeys(_classes("Dot"), Reason.QUALIFIED_NAME),
    **dict.fromkeys(
        _classes("Unnest GenerateSeries ExplodingGenerateSeries JSONTable Explode Posexplode"),
        Reason.TABLE_FUNCTION,
    ),
}

# First keyword of a statement the parser could only keep as an opaque command (or not parse).
COMMAND_KEYWORDS: dict[str, Reason] = {
    **dict.fromkeys(
        [
            "CALL",
            "DO",
            "HANDLER",
            "LOAD",
            "PRAGMA",
            "ATTACH",
            "DETACH",
            "COPY",
            "PREPARE",
            "EXECUTE",
            "DEALLOCATE",
            "SET",
            "USE",
            "LOCK",
            "UNLOCK",
            "BEGIN",
            "START",
            "COMMIT",
            "ROLLBACK",
            "SAVEPOINT",
            "RELEASE",
            "LISTEN",
            "NOTIFY",
            "UNLISTEN",
            "DECLARE",
            "FETCH",
            "CLOSE",
            "MOVE",
            "RESET",
            "DISCARD",
            "VACUUM",
            "CHECKPOINT",
            "SOURCE",
        ],
        Reason.SESSION_COMMAND,
    ),
    **dict.fromkeys(
        [
            "INSERT",
            "UPDATE",
            "DELETE",
            "REPLACE",
            "MERGE",
            "UPSERT",
            "CREATE",
            "DROP",
            "ALTER",
            "TRUNCATE",
            "RENAME",
            "GRANT",
            "REVOKE",
            "ANALYZE",
            "OPTIMIZE",
            "REPAIR",
            "FLUSH",
            "KILL",
            "SHUTDOWN",
            "INSTALL",
            "UNINSTALL",
            "REINDEX",
            "CLUSTER",
            "COMMENT",
            "SECURITY",
            "REFRESH",
            "IMPORT",
        ],
        Reason.WRITE_STATEMENT,
    ),
    **dict.fromkeys(["SHOW", "DESCRIBE", "DESC", "EXPLAIN", "VALUES", "TABLE", "HELP", "CHECKSUM"], Reason.NOT_SELECT),
}

# Schemas and name prefixes that expose the server's catalogue, users or files.
SYSTEM_SCHEMAS = frozenset(
    [
        "information_schema",
        "mysql",
        "performance_schema",
        "sys",
        "pg_catalog",
        "pg_toast",
        "sqlite_master",
        "sqlite_schema",
        "sqlite_temp_master",
        "sqlite_temp_schema",
    ]
)
SYSTEM_TABLE_PREFIXES = ("pg_", "sqlite_")

# Niladic SQL words that read session state when written as a bare name.
SESSION_WORDS = frozenset(
    [
        "current_user",
        "session_user",
        "user",
        "current_role",
        "system_user",
        "current_schema",
        "current_catalog",
        "current_database",
        "current_path",
        "localuser",
    ]
)
