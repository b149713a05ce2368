"""The shape check: the answers the facts alone would pass — the sum of seven quotations that lists
the latest among them, a count of phone numbers, a row count where the quantity was asked — fail."""

from __future__ import annotations

from typing import Any

import pytest

from tether.evals.checks import shape_problem
from tether.evals.tasks import TaskError, load_file


def query(sql: str, rows: list[Any]) -> dict[str, Any]:
    return {"toolId": "query_data", "status": "SUCCEEDED", "args": {"sql": sql}, "result": {"rows": rows}}


SUM_OF_ALL = query("SELECT SUM(total_amount) AS total_amount, COUNT(*) FROM viw_quotation WHERE x", [[191493.87, 7]])
LATEST = query("SELECT bill_no, total_amount FROM viw_quotation ORDER BY bill_date DESC LIMIT 1", [["QT1", 53405.39]])


def test_the_latest_record_is_one_record_ordered_by_its_date() -> None:
    assert shape_problem("latest", "含税合计 191,493.87（共 7 条记录）", [SUM_OF_ALL])
    assert shape_problem("latest", "| QT1 | 53,405.39 |", [LATEST]) == ""


def test_a_value_asked_is_not_a_count() -> None:
    assert shape_problem("value", "按 客户档案（1001），客户名称 含 恒达：联系电话 共 1 个（不同的值）。", [])
    assert shape_problem("value", "From 客户档案 (1001), name: 1 different 联系电话.", [])
    assert shape_problem("value", "| 客户名称 | 联系电话 |\n| 恒达 | 18442515953 |", []) == ""


def test_a_quantity_asked_is_summed() -> None:
    count = {"toolId": "read_form_data", "status": "SUCCEEDED", "args": {}, "result": {"rows": [], "total": 1}}
    assert shape_problem("quantity", "共 1 条。", [count])
    summed = query("SELECT SUM(qty) AS qty, COUNT(*) AS record_count FROM viw_inventory", [[2, 1]])
    assert shape_problem("quantity", "库存数量合计 2.00", [summed]) == ""


def test_a_top_n_ranks_and_a_list_of_amounts_carries_its_total() -> None:
    assert shape_problem("top", "共 20 条", [query("SELECT * FROM viw_quotation LIMIT 20", [])])
    assert shape_problem("top", "", [query("SELECT * FROM viw_quotation ORDER BY total_amount DESC LIMIT 5", [])]) == ""
    assert shape_problem("total", "共 7 条。\n\n| QT1 | 1.00 |", [])
    assert shape_problem("total", "共 7 条，含税合计 191,493.87。", []) == ""


def test_an_unknown_shape_is_refused_when_the_suite_loads(tmp_path: Any) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("tasks:\n  - {id: a, category: read, user: sales01, say: x, shape: biggest}\n")
    with pytest.raises(TaskError, match="shape must be one of"):
        load_file(path)
