"""``summaries.summarize``: the totals, counts, group-bys and top-Ns computed over the rows an
ERP lists (the answer to an aggregate where no SQL runs on the ERP's database), and the plans
that use it for a form without a view."""

from __future__ import annotations

from typing import Any

import pytest

from tether.pack import ToolError
from tether.packs.erp import plans
from tether.packs.erp.metadata import FieldMeta, FilterMeta, FormMeta
from tether.packs.erp.readings import Reading
from tether.packs.erp.summaries import summarize

ROWS: list[dict[str, Any]] = [
    {"id": 1, "party_name": "甲", "total_amount": 100.0, "sale_date": "2026-11-01", "state": "done"},
    {"id": 2, "party_name": "乙", "total_amount": 250.5, "sale_date": "2026-11-20", "state": "draft"},
    {"id": 3, "party_name": "甲", "total_amount": 40.0, "sale_date": "2026-10-03", "state": "done"},
    {"id": 4, "party_name": "丙", "total_amount": None, "sale_date": "2026-09-09", "state": "draft"},
]


def test_aggregates_skip_empty_values_and_count_every_row() -> None:
    assert summarize(ROWS, {"kind": "aggregate", "agg": "sum", "measure": "total_amount"}, [])["rows"] == [[390.5, 4]]
    assert summarize(ROWS, {"kind": "aggregate", "agg": "max", "measure": "total_amount"}, [])["rows"] == [[250.5, 4]]
    assert (
        summarize(ROWS, {"kind": "aggregate", "agg": "avg", "measure": "total_amount"}, [])["rows"][0][0] == 130.166667
    )
    assert summarize([], {"kind": "aggregate", "agg": "sum", "measure": "total_amount"}, [])["rows"] == [[None, 0]]


def test_where_compares_numbers_as_numbers_and_dates_as_text() -> None:
    big = summarize(ROWS, {"kind": "count"}, [("total_amount", ">=", "100")])
    assert big["rows"] == [[2]]  # 100 and 250.5; "40" > "100" as text, not as a number
    late = summarize(ROWS, {"kind": "count"}, [("sale_date", ">=", "2026-11-01")])
    assert late["rows"] == [[2]]
    assert summarize(ROWS, {"kind": "count", "distinct": "party_name"}, [])["rows"] == [[3]]


def test_group_by_orders_by_the_measure_and_cuts_at_the_limit() -> None:
    out = summarize(ROWS, {"kind": "group", "group": "party_name", "measure": "total_amount", "limit": 2}, [])
    assert out["columns"] == ["party_name", "record_count", "total_amount"]
    assert out["rows"] == [["乙", 1, 250.5], ["甲", 2, 140.0]]
    counted = summarize(ROWS, {"kind": "group", "group": "state", "ascending": True}, [])
    assert counted["rows"] == [["done", 2], ["draft", 2]] or counted["rows"] == [["draft", 2], ["done", 2]]


def test_a_group_having_keeps_the_groups_whose_sum_passes() -> None:
    select = {"kind": "group", "group": "party_name", "measure": "total_amount", "having": ["<", 200]}
    assert summarize(ROWS, select, [])["rows"] == [["甲", 2, 140.0]]  # 乙's 250.5 is not below 200
    with pytest.raises(ToolError, match="having"):
        summarize(ROWS, {"kind": "group", "group": "party_name", "having": ["<", 200]}, [])


def test_rows_order_numbers_and_dates_and_put_empty_values_out() -> None:
    top = summarize(ROWS, {"kind": "rows", "columns": ["id", "total_amount"], "order": "total_amount", "limit": 2}, [])
    assert top["rows"] == [[2, 250.5], [1, 100.0]]
    latest = summarize(ROWS, {"kind": "rows", "columns": ["id"], "order": "sale_date", "limit": 1}, [])
    assert latest["rows"] == [[2]]
    smallest = summarize(ROWS, {"kind": "rows", "columns": ["id"], "order": "total_amount", "ascending": True}, [])
    assert smallest["rows"] == [[3], [1], [2]]  # the row without an amount is not the smallest


def test_bad_selects_are_refused_with_what_to_fix() -> None:
    with pytest.raises(ToolError, match=r"select\.kind"):
        summarize(ROWS, {"kind": "pivot"}, [])
    with pytest.raises(ToolError, match="limit"):
        summarize(ROWS, {"kind": "rows", "columns": ["id"], "limit": 10_000}, [])


def _form(view: str) -> FormMeta:
    fields = (FieldMeta("party_name", "客户", "text"), FieldMeta("total_amount", "含税合计", "number"))
    filters = (FilterMeta("party_name", "客户", "text", "party_name", "like"),)
    return FormMeta(
        "329", "销售订单", (), "", "", view, None, fields, filters, frozenset({"party_name", "total_amount"})
    )


def test_a_form_without_a_view_is_summarised_through_the_erp_never_by_sql() -> None:
    reading = Reading(_form(""), "aggregate", filters={"party_name": "甲"}, measure=_form("").fields[1], agg="sum")
    planned = plans.plan_of(reading, "甲的含税合计")
    step = planned["plan"][0]
    assert step["tool"] == "summarize_form_data"
    assert step["args"]["select"] == {"kind": "aggregate", "agg": "sum", "measure": "total_amount"}
    assert step["args"]["filters"] == {"party_name": "甲"}
    with_view = plans.plan_of(Reading(_form("viw_sale"), "aggregate", measure=_form("").fields[1]), "含税合计")
    assert with_view["plan"][0]["tool"] == "query_data"
