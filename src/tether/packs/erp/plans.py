"""A reader's outcome as the offline planner's steps and answer template: ``read_form_data`` with
the form's own filters where they say it all, ``query_data`` with SQL built from the form's view
and field dictionary for sums, averages, extremes, group-by and top-N (guarded by the SQL sandbox
like any other query), ``ask_user`` when the reader has a question. The answer says what was
done — the form, the filters, the period — in the language asked."""

from __future__ import annotations

from typing import Any

from tether.packs.erp.metadata import FormMeta
from tether.packs.erp.readings import Ask, FormFill, Outcome, Proposal, Reading, Refusal

LIST_SIZE = 20
TABLE_COLUMNS = 8
AGG_SQL = {"sum": "SUM", "avg": "AVG", "max": "MAX", "min": "MIN"}
AGG_ZH = {"sum": "合计", "avg": "平均", "max": "最大", "min": "最小"}
AGG_EN = {"sum": "total", "avg": "average", "max": "largest", "min": "smallest"}
NAME_COLUMNS = ("name", "material_name", "customer_name", "supplier_name", "bill_no")
SQL_OPS = {"eq": "=", "gte": ">=", "lte": "<=", "like": "LIKE"}


def number_text(value: float) -> str:
    """1000000, not 1e+06; 0.5 as 0.5."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def sql_text(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number_text(value)
    return "'" + str(value).replace("'", "''") + "'"


def display_columns(form: FormMeta) -> list[str]:
    """What a table of the form shows: its fields, a reference by its name column — and the record
    a row is about (its first field, a reference: a stock row's material) by its code too."""
    out: list[str] = []
    for i, f in enumerate(form.fields):
        column = f.column
        if f.type == "ref" or column.endswith("_id"):
            stem = column[: -len("_id")] if column.endswith("_id") else column
            named = next((c for c in (f"{stem}_name", "bill_no") if c in form.columns), None)
            if named is None or (named == "bill_no" and stem not in ("invoice",)):
                continue
            if i == 0 and f"{stem}_code" in form.columns:
                out.append(f"{stem}_code")
            column = named
        if f.type == "textarea" or (form.columns and column not in form.columns):
            continue
        out.append(column)
    return list(dict.fromkeys(out))[:TABLE_COLUMNS]


def _where(reading: Reading) -> list[str]:
    form = reading.form
    out = []
    for name, value in reading.filters.items():
        flt = next(f for f in form.filters if f.name == name)
        if flt.op == "like":
            out.append(f"{flt.column} LIKE {sql_text('%' + str(value) + '%')}")
        else:
            out.append(f"{flt.column} {SQL_OPS.get(flt.op, '=')} {sql_text(value)}")
    out += [f"{column} {op} {sql_text(value)}" for column, op, value in reading.where]
    return out


def build_sql(reading: Reading) -> str:
    form = reading.form
    where = _where(reading)
    tail = f" WHERE {' AND '.join(where)}" if where else ""
    measure = reading.measure.column if reading.measure else None
    if reading.shape == "aggregate" and measure:
        agg = AGG_SQL[reading.agg or "sum"]
        return f"SELECT {agg}({measure}) AS {measure}, COUNT(*) AS record_count FROM {form.view}{tail}"
    if reading.shape in ("group", "top") and reading.group:
        total = f", SUM({measure}) AS {measure}" if measure else ""
        order = measure or "record_count"
        limit = reading.top or 50
        way = "ASC" if reading.ascending else "DESC"
        named = name_beside(reading)
        beside = f", MAX({named}) AS {named}" if named else ""
        having = " AND ".join(f"SUM({column}) {op} {sql_text(value)}" for column, op, value in reading.having)
        having = f" HAVING {having}" if having else ""
        return (
            f"SELECT {reading.group}{beside}, COUNT(*) AS record_count{total} FROM {form.view}{tail} "
            f"GROUP BY {reading.group}{having} ORDER BY {order} {way} LIMIT {limit}"
        )
    if reading.shape == "count":
        counted = f"DISTINCT {reading.distinct.column}" if reading.distinct else "*"
        return f"SELECT COUNT({counted}) AS record_count FROM {form.view}{tail}"
    return f"SELECT {', '.join(_columns(reading))} FROM {form.view}{tail}{_order(reading)} LIMIT {reading.top or LIST_SIZE}"


def _columns(reading: Reading) -> list[str]:
    """A table's columns: the form's display columns, what was asked first for the latest record."""
    form, measure = reading.form, reading.measure.column if reading.measure else None
    columns = display_columns(form)
    if reading.latest:
        names = [c for c in NAME_COLUMNS if c in form.columns][:2]
        columns = [*names, *(f.column for f in reading.asked), *columns]
    if measure and measure not in columns:
        columns.append(measure)
    return [c for c in dict.fromkeys(columns) if not form.columns or c in form.columns]


def _order(reading: Reading) -> str:
    measure = reading.measure.column if reading.measure else None
    if reading.shape != "top" or not measure:
        return ""
    way = "ASC" if reading.ascending else "DESC"
    tie = f", bill_no {way}" if reading.latest and "bill_no" in reading.form.columns else ""
    return f" ORDER BY {measure} {way}{tie}"


def rows_sql(reading: Reading) -> str:
    """The rows a sum adds up (还剩几个: each warehouse's stock beside the total)."""
    where = _where(reading)
    tail = f" WHERE {' AND '.join(where)}" if where else ""
    return f"SELECT {', '.join(_columns(reading))} FROM {reading.form.view}{tail} LIMIT {LIST_SIZE}"


def name_beside(reading: Reading) -> str | None:
    """A code grouped by is shown with its name (C0001 and 苏州工业园区恒达…; M0015 and 工业铝型材)."""
    group, columns = reading.group or "", reading.form.columns
    stem = group[: -len("code")] if group.endswith("code") else None
    if stem is None:
        return None
    name = f"{stem}name" if stem else "name"
    return name if name in columns else None


def _lead(reading: Reading) -> str:
    form = reading.form
    if reading.english:
        said = "; ".join(reading.said) or "no filter"
        return f"From {form.name} ({form.form_id}), {said}"
    said = "，".join(reading.said) or "全部"
    return f"按 {form.name}（{form.form_id}），{said}"


def _label(reading: Reading, column: str | None) -> str:
    return reading.form.label_of(column) if column else ""


def plan_of(outcome: Outcome, question: str) -> dict[str, Any]:
    """``{plan, answer}``: the steps for the planner to run and the answer template."""
    if isinstance(outcome, Refusal):
        return {"plan": [], "answer": outcome.text, "outcome": outcome.outcome}
    if isinstance(outcome, Proposal):  # a change: a proposal the person confirms, never a write
        return {"plan": [{"tool": "propose_write", "args": outcome.args}], "answer": "${prev.text}"}
    if isinstance(outcome, FormFill):  # a new bill not finished: the form, with what was understood
        return {
            "plan": [
                {"tool": "collect_form", "args": {"form_id": outcome.form_id, "prefill": outcome.prefill}},
                {
                    "tool": "propose_write",
                    "args": {"form_id": outcome.form_id, "op": "create", "payload": "${prev.values}"},
                },
            ],
            "answer": "${prev.text}",
        }
    if isinstance(outcome, Ask):
        return {
            "plan": [
                {
                    "tool": "ask_user",
                    "args": {"question": outcome.question, "options": outcome.options, "allow_free_text": False},
                },
                {"tool": "read_question", "args": {"question": question, "choice": "${prev.answer}"}},
                {"steps": "${steps.2.plan}"},
            ],
            "answer": "${steps.2.answer|render}",
        }
    return _reading_plan(outcome, question)


def _no_rows(reading: Reading, test: str) -> dict[str, str]:
    """The planner's ``noRows``: when ``test`` (a template over the steps' results) renders empty
    or 0, the answer is this instead, and the turn's outcome ``no_rows`` — the filters said in
    words, as the answer would have led with them."""
    form = reading.form
    if reading.english:
        said = "; ".join(reading.said)
        text = f"No records match: {said} ({form.name})." if said else f"{form.name} holds no records you can see."
    else:
        said = "，".join(reading.said)
        text = f"没有符合条件的记录：{said}（{form.name}）。" if said else f"{form.name}里没有您能查看的记录。"
    return {"test": test, "answer": text}


def _reading_plan(reading: Reading, question: str) -> dict[str, Any]:
    """The steps and answer of a reading, with its ``noRows`` test where an empty result is no
    answer (a count of 0 is one: 上海有几个客户 — 0)."""
    planned = _steps_of(reading, question)
    test = _EMPTY.get(reading.shape)
    if reading.needs_sql:
        test = _empty_sql(reading)
    elif reading.beside and reading.measure and reading.shape not in ("count",):
        test = "${prev2.total}"
    if test:
        planned["noRows"] = _no_rows(reading, test)
    return planned


_EMPTY = {"list": "${prev.total}", "field": "${prev.total}"}  # read_form_data: its total


def _empty_sql(reading: Reading) -> str | None:
    if reading.shape == "count":
        return None
    if reading.shape == "aggregate" and reading.measure:
        return "${prev2.rows.0.1}" if reading.beside else "${prev.rows.0.1}"  # its record_count
    if reading.group or reading.latest or reading.top:
        return "${prev.rows.0}"
    if reading.beside and reading.measure:
        return "${prev.rows.0.1}"  # a list with its total: the total step's record_count
    return "${prev.rows.0.0}"  # a list through SQL: the count step after it


def _sql_step(reading: Reading, question: str, kind: str) -> dict[str, Any]:
    """A step that needs more than a form's filters: ``query_data`` over the form's view, or — an
    ERP whose database tether may not query (the form has no view: Tryton) — the same summary
    computed from the form's rows read through the ERP (``summarize_form_data``, summaries.py)."""
    form = reading.form
    if form.view:
        where = _where(reading)
        tail = f" WHERE {' AND '.join(where)}" if where else ""
        measure = reading.measure.column if reading.measure else None
        sql = {
            "main": lambda: build_sql(reading),
            "rows": lambda: rows_sql(reading),
            "count": lambda: f"SELECT COUNT(*) AS record_count FROM {form.view}{tail}",
            "total": lambda: f"SELECT SUM({measure}) AS {measure}, COUNT(*) AS record_count FROM {form.view}{tail}",
        }[kind]()
        return {"tool": "query_data", "args": {"question": question, "sql": sql}}
    args = {"form_id": form.form_id, "filters": reading.filters, "where": [list(w) for w in reading.where]}
    return {"tool": "summarize_form_data", "args": {**args, "select": _select(reading, kind)}}


def _select(reading: Reading, kind: str) -> dict[str, Any]:
    """``summarize_form_data``'s select for what ``build_sql`` / ``rows_sql`` would have asked."""
    measure = reading.measure.column if reading.measure else None
    if kind == "count":
        return {"kind": "count"}
    if kind == "total":
        return {"kind": "aggregate", "agg": "sum", "measure": measure}
    if kind == "rows":
        return {"kind": "rows", "columns": _columns(reading), "limit": LIST_SIZE}
    if reading.shape == "aggregate" and measure:
        return {"kind": "aggregate", "agg": reading.agg or "sum", "measure": measure}
    if reading.shape in ("group", "top") and reading.group:
        having = [[op, value] for _, op, value in reading.having][:1] or None
        return {"kind": "group", "group": reading.group, "beside": name_beside(reading), "measure": measure,
                "ascending": reading.ascending, "limit": reading.top or 50, "having": having}  # fmt: skip
    if reading.shape == "count":
        return {"kind": "count", "distinct": reading.distinct.column if reading.distinct else None}
    order = measure if reading.shape == "top" else None
    return {"kind": "rows", "columns": _columns(reading), "order": order, "ascending": reading.ascending,
            "limit": reading.top or LIST_SIZE}  # fmt: skip


def _steps_of(reading: Reading, question: str) -> dict[str, Any]:
    form, lead, en = reading.form, _lead(reading), reading.english
    if reading.needs_sql:
        step = _sql_step(reading, question, "main")
        measure = reading.measure.column if reading.measure else None
        if reading.shape == "aggregate" and measure:
            agg, label = reading.agg or "sum", _label(reading, measure)
            what = f"{AGG_EN[agg]} {label}"
            zh = (
                label if agg == "sum" and label.endswith("合计") else f"{label}{AGG_ZH[agg]}"
            )  # 含税合计, not 含税合计合计
            src = "prev2" if reading.beside else "prev"
            text = (
                f"{lead}: {what} = ${{{src}|sum:{measure}}} (over ${{{src}.rows.0.1}} records)."
                if en
                else f"{lead}：{zh} ${{{src}|sum:{measure}}}（共 ${{{src}.rows.0.1}} 条记录）。"
            )
            if not reading.beside:
                return {"plan": [step], "answer": text}
            rows = _sql_step(reading, question, "rows")
            return {"plan": [step, rows], "answer": text + "\n\n${prev|table}"}
        if reading.shape == "count" and reading.distinct:
            label = _label(reading, reading.distinct.column)
            text = (
                f"{lead}: ${{prev.rows.0.0}} different {label}."
                if en
                else f"{lead}：{label} 共 ${{prev.rows.0.0}} 个（不同的值）。"
            )
            return {"plan": [step], "answer": text}
        if reading.shape == "count":
            text = f"{lead}: ${{prev.rows.0.0}} records." if en else f"{lead}：共 ${{prev.rows.0.0}} 条。"
            return {"plan": [step], "answer": text}
        if reading.group:
            columns = ",".join(c for c in (reading.group, name_beside(reading), "record_count", measure) if c)
            head = f"by {_label(reading, reading.group)}" if en else f"按{_label(reading, reading.group)}汇总"
            top = f" top {reading.top}" if en and reading.top else (f"前 {reading.top} 名" if reading.top else "")
            text = (
                f"{lead}, {head}{top}:\n\n${{prev|table:{columns}}}"
                if en
                else f"{lead}，{head}{top}：\n\n${{prev|table:{columns}}}"
            )
            return {"plan": [step], "answer": text}
        if reading.latest:
            what = _label(reading, reading.measure.column if reading.measure else None)
            head = f"the latest by {what}" if en else f"按{what}最新的一条"
            text = f"{lead}, {head}:\n\n${{prev|table}}" if en else f"{lead}，{head}：\n\n${{prev|table}}"
            return {"plan": [step], "answer": text}
        if reading.top:
            text = f"{lead}:\n\n${{prev|table}}" if en else f"{lead}：\n\n${{prev|table}}"
            return {"plan": [step], "answer": text}
        if reading.beside and reading.measure:  # the list's amounts with their total, over every row
            measure, label = reading.measure.column, _label(reading, reading.measure.column)
            total = _sql_step(reading, question, "total")
            text = (
                f"{lead}: ${{prev.rows.0.1}} records (first {LIST_SIZE} shown), {label} total "
                f"${{prev|sum:{measure}}}.\n\n${{prev2|table}}"
                if en
                else f"{lead}：共 ${{prev.rows.0.1}} 条（至多显示 {LIST_SIZE} 条），{label}合计 "
                f"${{prev|sum:{measure}}}。\n\n${{prev2|table}}"
            )
            return {"plan": [step, total], "answer": text}
        count = _sql_step(reading, question, "count")  # a list says how many rows there are, not only 20
        text = (
            f"{lead}: ${{prev.rows.0.0}} records (first {LIST_SIZE} shown).\n\n${{prev2|table}}"
            if en
            else f"{lead}：共 ${{prev.rows.0.0}} 条（至多显示 {LIST_SIZE} 条）。\n\n${{prev2|table}}"
        )
        return {"plan": [step, count], "answer": text}
    size = 1 if reading.shape == "count" else LIST_SIZE
    step = {
        "tool": "read_form_data",
        "args": {"form_id": form.form_id, "filters": reading.filters, "page": 1, "page_size": size},
    }
    if reading.shape == "count":
        text = f"{lead}: ${{prev.total}} records." if en else f"{lead}：共 ${{prev.total}} 条。"
        return {"plan": [step], "answer": text}
    if reading.shape == "field":
        key = next((f.column for f in form.filters if f.name in reading.filters and f.type == "text"), None)
        # and which record each row is, where the filter is a trait (电机 suppliers: their names)
        names = next((c for c in NAME_COLUMNS if c in form.columns or form.field(c)), None)
        columns = ",".join(dict.fromkeys(c for c in (names, key, *(f.column for f in reading.asked)) if c))
        text = f"{lead}:\n\n${{prev|table:{columns}}}" if en else f"{lead}：\n\n${{prev|table:{columns}}}"
        return {"plan": [step], "answer": text}
    columns = ",".join(display_columns(form))
    shown = f" (first {LIST_SIZE} shown)" if en else f"（至多显示 {LIST_SIZE} 条）"
    if reading.beside and reading.measure:  # the list's amounts with their total, over every row
        measure, label = reading.measure.column, _label(reading, reading.measure.column)
        total = _sql_step(reading, question, "total")
        text = (
            f"{lead}: ${{prev2.total}} records{shown}, {label} total ${{prev|sum:{measure}}}.\n\n${{prev2|table:{columns}}}"
            if en
            else f"{lead}：共 ${{prev2.total}} 条{shown}，{label}合计 ${{prev|sum:{measure}}}。\n\n${{prev2|table:{columns}}}"
        )
        return {"plan": [step, total], "answer": text}
    text = (
        f"{lead}: ${{prev.total}} records{shown}.\n\n${{prev|table:{columns}}}"
        if en
        else f"{lead}：共 ${{prev.total}} 条{shown}。\n\n${{prev|table:{columns}}}"
    )
    return {"plan": [step], "answer": text}
