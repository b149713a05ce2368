"""The SQL sandbox: model-written SQL becomes one read-only, tenant-filtered, row-capped SELECT.

Guarantees of ``guard(sql, dialect=..., policy=...)`` (details in ``docs/security.md``):

- the result is exactly one SELECT / set operation of SELECTs (CTEs allowed), regenerated from the
  checked tree with comments dropped; the input string is never passed on;
- no node outside an allowlist of read-only syntax: no DML/DDL anywhere (data-modifying CTEs,
  EXPLAIN ANALYZE), no INTO, locking reads, variables, placeholders, hints, opaque commands;
  MySQL executable comments are refused at token level;
- no function outside an allowlist; no table outside ``Policy.tables``, at any depth; no qualified
  names or system catalogues; CTE names resolved by scope;
- every reference to a whitelisted table is replaced by a derived table filtered on the tenant
  column (and restricted to ``Policy.columns`` when given); the outer LIMIT is at most ``max_rows``.

It does not bound CPU or memory (the executor's statement timeout does), does not hide data of the
tenant's own rows beyond ``Policy.columns``, and trusts the policy: a table listed with tenant
column ``None`` is readable in full. ``executor.ReadOnlyExecutor`` adds the second wall: a read-only
session and a statement timeout, which must hold even if the guard is bypassed.

``verdicts.GuardCache`` reuses a verdict for the same SQL text, dialect and whole policy.

This package imports no web framework and no ORM; only ``executor`` touches a database driver.
"""

from tether.sqlguard.guard import guard
from tether.sqlguard.policy import GuardedQuery, Policy, Reason, SqlRejected
from tether.sqlguard.verdicts import GuardCache

__all__ = ["GuardCache", "GuardedQuery", "Policy", "Reason", "SqlRejected", "guard"]
