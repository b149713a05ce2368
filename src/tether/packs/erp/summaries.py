"""Totals, counts, group-bys and top-Ns over an ERP form's rows read through the ERP itself, as the
user: ``summarize_form_data``, the answer to an aggregate where no SQL may be run on the ERP's
database (Tryton: its rows are only handed out by Tryton's own rights, so tether never reads its
tables). The rows come from ``read`` page by page (at most ``MAX_ROWS``); the arithmetic is done
here and the result has query_data's shape (``columns``, ``rows``), so one answer template serves
both.

``select`` is one of:
``{"kind": "aggregate", "agg": sum|avg|max|min, "measure"}`` → measure, record_count;
``{"kind": "group", "group", "beside"?, "measure"?, "ascending"?, "limit"?, "having"?}`` → group,
beside, record_count, measure (ordered by the measure's sum, else the count; ``having``: ``[op, value]``
on that sum — 总库存低于10的物料);
``{"kind": "count", "distinct"?}`` → record_count;
``{"kind": "rows", "columns", "order"?, "ascending"?, "limit"?}`` → those columns.
``where``: ``[column, op, value]`` conditions beyond the form's filters (``=``, ``!=``, ``>``, ``>=``,
``<``, ``<=``), on the form's own columns.
"""

from __future__ import annotations

from typing import Any

from tether.pack import Tool, ToolContext, ToolError, tool
from tether.packs.erp import messages
from tether.packs.erp.tools import RECORD_COUNT, Erp, labels_of, login_guard, token, value_labels, whitelist

MAX_ROWS = 5000  # rows one summary may read through the ERP
PAGE = 100  # the ERP's page (the demo ERP's largest)
MAX_LIMIT = 200
_OPS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
}


def _bad(message: str) -> ToolError:
    return ToolError(message, code=messages.BAD_ARGUMENTS, params={"tool": "summarize_form_data"})


def _comparable(value: Any, like: Any) -> Any:
    """``value`` as the row's own type (a number compared as a number, a date as its ISO text)."""
    if isinstance(like, (int, float)) and not isinstance(like, bool):
        try:
            return float(value)
        except (TypeError, ValueError):
            return None
    return None if value is None else str(value)


def _matches(row: dict[str, Any], where: list[tuple[str, str, Any]]) -> bool:
    for column, op, value in where:
        have = row.get(column)
        if have is None:
            return False
        wanted = _comparable(value, have)
        if wanted is None or not _OPS[op](have if isinstance(wanted, float) else str(have), wanted):
            return False
    return True


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _order_key(value: Any) -> tuple[int, float, str]:
    """Numbers by their value, anything else (dates as ISO text) by its text."""
    number = _number(value)
    return (0, number, "") if number is not None else (1, 0.0, str(value))


def _aggregate(agg: str, values: list[float]) -> float | None:
    if not values:
        return None
    if agg == "avg":
        return round(sum(values) / len(values), 6)
    if agg == "max":
        return max(values)
    return min(values) if agg == "min" else sum(values)


def summarize(rows: list[dict[str, Any]], select: dict[str, Any], where: list[tuple[str, str, Any]]) -> dict[str, Any]:
    """The pure part: ``rows`` (the form's, as the ERP gave them) summarised by ``select``."""
    kept = [r for r in rows if _matches(r, where)]
    kind = select.get("kind")
    if kind == "aggregate":
        measure, agg = str(select["measure"]), str(select.get("agg") or "sum")
        values = [v for r in kept if (v := _number(r.get(measure))) is not None]
        out = [[_aggregate(agg, values), len(kept)]]
        return _result([measure, "record_count"], out)
    if kind == "count":
        distinct: str | None = select.get("distinct")
        n = len({r.get(distinct) for r in kept if r.get(distinct) not in (None, "")}) if distinct else len(kept)
        return _result(["record_count"], [[n]])
    if kind == "group":
        group, beside, summed = str(select["group"]), select.get("beside"), select.get("measure")
        buckets: dict[Any, list[dict[str, Any]]] = {}
        for r in kept:
            buckets.setdefault(r.get(group), []).append(r)
        table = []
        for key, members in buckets.items():
            line = [key]
            if beside:
                line.append(max((str(m.get(beside)) for m in members if m.get(beside) is not None), default=None))
            line.append(len(members))
            if summed:
                values = [v for m in members if (v := _number(m.get(summed))) is not None]
                line.append(sum(values) if values else None)  # SQL's SUM: no values, no sum
            table.append(line)
        if having := select.get("having"):
            test = _OPS.get(str(having[0]))
            if test is None or not summed:
                raise _bad("select.having must be [op, value] over a measure")
            table = [line for line in table if line[-1] is not None and test(line[-1], _number(having[1]))]
        table.sort(key=lambda line: line[-1] or 0, reverse=not select.get("ascending"))
        columns = [group, *([beside] if beside else []), "record_count", *([summed] if summed else [])]
        return _result(columns, table[: _limit(select, 50)])
    if kind == "rows":
        columns = [str(c) for c in select.get("columns") or []]
        order = select.get("order")
        if order:
            present = [r for r in kept if r.get(order) is not None]
            present.sort(key=lambda r: _order_key(r.get(order)))
            kept = present if select.get("ascending") else present[::-1]
        return _result(columns, [[r.get(c) for c in columns] for r in kept[: _limit(select, 20)]])
    raise _bad("select.kind must be aggregate, count, group or rows")


def _limit(select: dict[str, Any], default: int) -> int:
    limit = select.get("limit") or default
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise _bad(f"select.limit must be between 1 and {MAX_LIMIT}")
    return limit


def _result(columns: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    return {"columns": columns, "rows": rows, "rowCount": len(rows), "truncated": False}


def _columns_of(select: dict[str, Any], where: list[tuple[str, str, Any]]) -> set[str]:
    named = {select.get(k) for k in ("measure", "group", "beside", "distinct", "order")}
    named |= set(select.get("columns") or [])
    named |= {w[0] for w in where}
    return {str(c) for c in named if c}


def _conditions(where: Any) -> list[tuple[str, str, Any]]:
    if not isinstance(where, list):
        raise _bad("where must be a list of [column, op, value]")
    out = []
    for item in where:
        if not isinstance(item, list | tuple) or len(item) != 3 or item[1] not in _OPS:
            raise _bad(f"each where must be [column, op, value] with op one of {' '.join(_OPS)}")
        out.append((str(item[0]), str(item[1]), item[2]))
    return out


def build_summarize(erp: Erp) -> Tool:
    @tool(read_only=True, audited=True)
    @login_guard
    async def summarize_form_data(
        ctx: ToolContext,
        form_id: str,
        select: dict[str, Any],
        filters: dict[str, Any] | None = None,
        where: list[Any] | None = None,
    ) -> Any:
        """A total, count, group-by or top-N over one of your forms, computed from its rows as the
        ERP lists them to you (at most 5,000): for an ERP whose database tether may not query.
        select: {"kind": "aggregate"|"count"|"group"|"rows", ...}; filters: the form's own."""
        config = await erp.form_config(ctx, form_id)
        params = whitelist(config, filters or {})
        conditions = _conditions(where or [])
        if not isinstance(select, dict):
            raise _bad("select must be an object with a kind")
        known = {str(f.get("column")) for f in config.get("master") or []}
        unknown = sorted(_columns_of(select, conditions) - known)
        if unknown:
            raise _bad(f"not columns of form {config.get('formId')}: {', '.join(unknown)[:200]}")
        form = str(config.get("formId", form_id))
        rows: list[dict[str, Any]] = []
        page, total = 1, None
        while total is None or len(rows) < total:
            answer = await erp.client.read(token(ctx), form, params, page, PAGE)
            total = int(answer["total"])
            if total > MAX_ROWS:
                raise ToolError(
                    f"{total} records are more than the {MAX_ROWS} a summary reads through the ERP; narrow it down "
                    "(a date, a customer, a state)",
                    code=messages.BAD_ARGUMENTS,
                    params={"tool": "summarize_form_data"},
                )
            if not answer["rows"]:
                break
            rows += answer["rows"]
            page += 1
        ctx.audit_notes["rows"] = len(rows)
        result = summarize(rows, select, conditions)
        result["labels"] = {"record_count": RECORD_COUNT, **labels_of(config, result["columns"])}
        result["valueLabels"] = value_labels(config, result["columns"])
        return result

    return summarize_form_data
