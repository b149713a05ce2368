"""The task format: the shipped suites load and meet the issue's counts; a malformed task is
refused with a message that names the file, the task and what to fix; variables fill in everywhere;
an answer carries a number however it is written."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.evals.conftest import ROOT, tasks_from
from tether.evals.oracles import mentions_number
from tether.evals.tasks import TaskError, bind, load_suite


def test_the_shipped_suites_cover_what_the_issue_asks() -> None:
    tasks = load_suite(ROOT / "evals", "all")
    erp = [t for t in tasks if t.suite == "erp"]
    kinds = Counter(t.category for t in erp)
    assert len(tasks) >= 120 and len(erp) >= 80 and len(tasks) - len(erp) >= 30
    assert kinds["read"] >= 40 and kinds["write"] >= 20 and kinds["refusal"] + kinds["hostile"] >= 10
    read_forms = {f for t in erp if t.category == "read" for f in t.forms}
    assert len(read_forms) >= 10
    assert {"admin", "sales01", "sales02", "wh01", "fin01"} <= {t.user for t in erp if t.category == "read"}
    assert any(t.fast for t in tasks)
    tryton = [t for t in tasks if t.suite == "tryton"]
    assert len(tryton) >= 30 and all(t.erp == "tryton" for t in tryton)
    writes = [t for t in tryton if t.reference]  # issue 38: writes on Tryton, end state in Tryton's database
    assert len(writes) >= 8 and {r["args"]["op"] for t in writes for r in t.reference} >= {"create", "update", "delete"}
    assert any(t.turns[0].values for t in writes) and any(t.user == "stock" and t.refuse for t in tryton)
    assert {"sales", "stock", "accountant", "manager", "admin"} <= {t.user for t in tryton if t.category == "read"}
    assert Counter(t.category for t in tryton)["refusal"] >= 5 and any(t.category == "login" for t in tryton)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("tasks:\n  - {id: a, category: chat, user: sales01, say: hi}\n", "category must be one of"),
        ("tasks:\n  - {id: a, category: read, user: sales01}\n", "say: <message> or turns"),
        ("tasks:\n  - {id: a, category: read, user: sales01, say: hi, facts: [{count: 12}]}\n", "takes an SQL query"),
        ("tasks:\n  - {id: a, category: read, user: sales01, say: hi, colour: red}\n", "unknown field(s) ['colour']"),
        (
            "tasks:\n  - {id: a, category: write, user: sales01, turns: [{say: x, proposal: maybe}]}\n",
            "proposal must be",
        ),
        ("defaults: {}\n", "holds tasks"),
        ("tasks:\n  - {id: a, category: read, user: sales, say: hi, erp: odoo}\n", "erp must be one of demo, tryton"),
    ],
)
def test_a_malformed_task_is_refused_saying_what_to_fix(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(TaskError) as err:
        tasks_from(tmp_path, text)
    assert says in str(err.value) and "tasks.yaml" in str(err.value)


def test_variables_fill_in_messages_facts_filters_and_the_reference(tmp_path: Path) -> None:
    (task,) = tasks_from(
        tmp_path,
        "tasks:\n  - id: a\n    category: write\n    user: sales01\n    say: 审核报价单{q}\n"
        "    filters: {bill_no: '{q}'}\n    facts: [{any: \"select 1 where '{q}' <> ''\"}]\n"
        "    reference: [{tool: propose_write, args: {form_id: '2001', op: examine, record_id: '{q}'}}]\n",
    )
    bound = bind(task, {"q": "QT202612-0004"})
    assert bound.turns[0].say == "审核报价单QT202612-0004"
    assert bound.filters == {"bill_no": "QT202612-0004"}
    assert "'QT202612-0004'" in bound.facts[0].query
    assert bound.reference[0]["args"]["record_id"] == "QT202612-0004"


def test_a_number_is_found_however_the_answer_writes_it() -> None:
    assert mentions_number("未收余额合计 412,972.78 元", 412972.78)
    assert mentions_number("共 22 张", 22) and not mentions_number("共 23 张", 22)
    assert mentions_number("合计 41.3 万元", 412972.78)  # in 万, to the nearest 0.05 % or 50 元
    assert not mentions_number("合计 40 万元", 412972.78) and not mentions_number("合计 41.3 元", 412972.78)
    assert mentions_number("没有未审核的发货单", 0) and not mentions_number("有 3 张", 0)


def test_without_trytond_all_leaves_the_tryton_tasks_out_and_tryton_alone_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from io import StringIO

    from tether.evals import tryton_site
    from tether.evals.runner import RunConfig, Runner

    monkeypatch.setattr(tryton_site, "available", lambda: False)
    tasks = tasks_from(tmp_path, "tasks:\n  - {id: a, category: read, user: stock, say: hi, erp: tryton}\n", "tryton")
    demo = tasks_from(tmp_path, "tasks:\n  - {id: b, category: read, user: wh01, say: hi}\n")
    out = StringIO()
    assert Runner(RunConfig(suite="all", work_root=tmp_path), out)._with_tryton([*tasks, *demo]) == demo
    assert "left out 1 Tryton tasks" in out.getvalue() and "make tryton" in out.getvalue()
    with pytest.raises(TaskError, match="make tryton"):
        Runner(RunConfig(suite="tryton", work_root=tmp_path), out)._with_tryton(tasks)
