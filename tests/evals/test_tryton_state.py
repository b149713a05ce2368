"""The end state of a Tryton trial on its own: a write's fresh values (ids, times, tether's op mark,
a many2one to a row the write made) are left out, so the same write in two runs compares equal,
and any other difference — a value, an extra row, a missing one — shows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tether.evals.state import compare
from tether.evals.tryton_state import TrytonState, changed

SCHEMA = (
    "create table ir_model_field (id integer primary key, model text, name text, relation text, ttype text)",
    "create table sale_sale (id integer primary key, party integer, comment text, create_date text)",
    "create table sale_line (id integer primary key, sale integer, quantity real, write_date text)",
    "insert into ir_model_field (model, name, relation, ttype) values ('sale.line', 'sale', 'sale.sale', 'many2one')",
    "insert into sale_sale values (1, 7, null, '2026-11-30')",
    "insert into sale_line values (1, 1, 2.0, null)",
)


def _db(path: Path, *sql: str) -> Path:
    with sqlite3.connect(path) as conn:
        for statement in (*SCHEMA, *sql):
            conn.execute(statement)
    return path


def _quote(sale_id: int, op: str, qty: float) -> tuple[str, ...]:
    return (
        f"insert into sale_sale values ({sale_id}, 7, '[tether-op:{op}]', datetime('now'))",
        f"insert into sale_line values ({sale_id + 10}, {sale_id}, {qty}, datetime('now'))",
    )


def test_the_same_write_compares_equal_and_another_value_shows(tmp_path: Path) -> None:
    state = TrytonState(_db(tmp_path / "prepared.sqlite"))
    tables = {"sale_sale", "sale_line"}
    reference = state.snapshot(_db(tmp_path / "ref.sqlite", *_quote(2, "op-a", 5.0)), tables)
    same = state.snapshot(_db(tmp_path / "same.sqlite", *_quote(3, "op-b", 5.0)), tables)  # another id, op, time
    assert compare(same, reference).empty
    other = state.snapshot(_db(tmp_path / "other.sqlite", *_quote(2, "op-a", 6.0)), tables)
    assert compare(other, reference).summary() == "tryton.sale_line: 1 extra; tryton.sale_line: 1 missing"
    nothing = state.snapshot(tmp_path / "prepared.sqlite", tables)
    assert "tryton.sale_sale: 1 missing" in compare(nothing, state.expected(reference, tables)).summary()
    assert compare(nothing, state.expected(None, tables)).empty  # no reference: nothing written is right


def test_the_tables_compared_are_those_a_run_changed() -> None:
    assert changed({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == {"b", "c"}
