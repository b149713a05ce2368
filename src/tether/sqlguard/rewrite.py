"""The two rewrites of a checked query: the tenant predicate on every base-table reference, and the
row cap.

Each reference ``t [AS a]`` becomes ``(SELECT * FROM t WHERE t.tenant_col = 'B001') AS a`` (and
each of the table's ``Policy.filters`` ANDed to it): the filter sits inside the derived table, so
it holds at any depth, under outer joins (the preserved side is filtered, the null-extended side
still extends) and whatever the surrounding ``OR``s say.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from tether.sqlguard.checks import TableRef
from tether.sqlguard.policy import Policy, Reason, SqlRejected


def inject_tenant_predicate(refs: Sequence[TableRef], policy: Policy) -> None:
    """Replace each reference in place by the policy's view of that table."""
    for ref in refs:
        ref.node.replace(_restricted_source(ref, policy))


def drop_dual(tables: Sequence[exp.Table]) -> None:
    """Remove MySQL's ``FROM DUAL`` (the generator would quote it into a real table name)."""
    for table in tables:
        parent = table.parent
        if isinstance(parent, exp.From):
            parent.pop()


def _restricted_source(ref: TableRef, policy: Policy) -> exp.Expr:
    node = ref.node
    alias = node.args.get("alias")
    if alias is None:
        # Keep the name as written as the alias, so qualifiers like t.col still resolve.
        alias = exp.TableAlias(this=node.this)
    tenant_column = policy.tables[ref.table]
    columns = policy.columns.get(ref.table)
    predicates = {tenant_column: policy.tenant} if tenant_column is not None else {}  # Policy requires the tenant
    predicates.update(policy.filters.get(ref.table, {}))
    if not predicates and columns is None:
        return exp.Table(this=exp.to_identifier(ref.table), alias=alias)
    projection: list[exp.Expr] = (
        [exp.Column(this=exp.to_identifier(c)) for c in columns] if columns is not None else [exp.Star()]
    )
    select = exp.Select(expressions=projection, from_=exp.From(this=exp.Table(this=exp.to_identifier(ref.table))))
    if predicates:
        conditions = [
            exp.EQ(
                this=exp.Column(this=exp.to_identifier(column), table=exp.to_identifier(ref.table)),
                expression=_literal(value),
            )
            for column, value in predicates.items()
        ]
        select.set("where", exp.Where(this=exp.and_(*conditions)))
    return exp.Subquery(this=select, alias=alias)


def _literal(value: str | int | None) -> exp.Expr:
    if isinstance(value, int):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def cap_limit(root: exp.Expr, max_rows: int) -> int:
    """Add a LIMIT to the outermost query, or lower it to ``max_rows``; return the limit applied."""
    offset = root.args.get("offset")
    if offset is not None and _int_literal(offset.args.get("expression")) is None:
        raise SqlRejected(Reason.INVALID_OFFSET, "OFFSET must be a non-negative integer literal")
    current = root.args.get("limit")
    requested: int | None = None
    inner_offset = None
    if isinstance(current, exp.Limit):
        inner_offset = current.args.get("offset")
        if inner_offset is not None and _int_literal(inner_offset) is None:
            raise SqlRejected(Reason.INVALID_OFFSET, "OFFSET must be a non-negative integer literal")
        requested = _int_literal(current.args.get("expression"))
    elif isinstance(current, exp.Fetch):
        requested = _int_literal(current.args.get("count"))
        options = current.args.get("limit_options")
        if options is not None and (options.args.get("percent") or options.args.get("with_ties")):
            requested = None
    applied = max_rows if requested is None else min(requested, max_rows)
    root.set("limit", exp.Limit(expression=exp.Literal.number(applied), offset=inner_offset))
    return applied


def _int_literal(node: object) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        text = str(node.this)
        if text.isdigit():
            return int(text)
    return None
