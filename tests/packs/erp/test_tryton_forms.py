"""``tryton_forms``: Tryton's ``fields_get`` as a form's fields and filters, whitelisted filter
values as a Tryton search domain, and Tryton's rows as the form's columns — pure functions over
the shapes Tryton's JSON-RPC answers with (checked against a real trytond in tests/tryton)."""

from __future__ import annotations

from typing import Any

import pytest

from tether.packs.erp.tryton_forms import BY_MODEL, domain_of, field_meta, filters_of, flatten, read_fields

SPECS: dict[str, dict[str, Any]] = {
    "number": {"type": "char", "string": "单号", "searchable": True},
    "party": {"type": "many2one", "string": "客户", "relation": "party.party", "searchable": True},
    "sale_date": {"type": "date", "string": "销售日期", "searchable": True},
    "state": {"type": "selection", "string": "状态", "selection": [["draft", "草稿"], ["done", "已完成"], [None, ""]]},
    "total_amount": {"type": "numeric", "string": "含税合计", "searchable": False},
}


def test_a_many2one_is_its_id_and_its_name_and_a_selection_keeps_trytons_options() -> None:
    party = field_meta("party", SPECS["party"])
    assert [(f["column"], f["label"], f["ref"]) for f in party] == [
        ("party_id", "客户", "party.party"),
        ("party_name", "客户", None),
    ]
    state = field_meta("state", SPECS["state"])[0]
    assert state["type"] == "select" and state["options"] == [
        {"value": "draft", "label": "草稿"},
        {"value": "done", "label": "已完成"},
    ]


def test_filters_follow_the_types_and_leave_out_what_tryton_cannot_search() -> None:
    filters = {f["name"]: f for f in filters_of(list(SPECS.items()))}
    assert filters["number"]["op"] == "like"
    assert filters["party_name"]["op"] == "like" and filters["party_id"]["op"] == "eq"
    assert (filters["sale_date_from"]["op"], filters["sale_date_to"]["op"]) == ("gte", "lte")
    assert "total_amount_from" not in filters  # a function field Tryton cannot search


def test_a_domain_holds_the_forms_fixed_clause_and_each_filter_as_tryton_writes_it() -> None:
    form = BY_MODEL["account.invoice"]
    filters = filters_of(list(SPECS.items()))
    domain = domain_of(form, filters, {"party_name": "华东", "sale_date_from": "2026-11-01", "party_id": "7"})
    assert ["type", "=", "out"] in domain  # customer invoices only, whatever the filters
    assert ["party.rec_name", "ilike", "%华东%"] in domain
    assert ["sale_date", ">=", {"__class__": "date", "year": 2026, "month": 11, "day": 1}] in domain
    assert ["party", "=", 7] in domain
    with pytest.raises(ValueError):
        domain_of(form, filters, {"sale_date_from": "last tuesday"})
    with pytest.raises(ValueError):
        domain_of(form, filters, {"party_id": "1 OR 1=1"})


def test_a_partys_city_is_searched_on_its_addresses() -> None:
    party = BY_MODEL["party.party"]
    city = [{"name": "city", "label": "城市", "type": "text", "column": "city", "op": "like"}]
    assert domain_of(party, city, {"city": "上海"}) == [["addresses.city", "ilike", "%上海%"]]


def test_rows_become_plain_columns() -> None:
    row = {
        "id": 3,
        "party": 7,
        "party.": {"id": 7, "rec_name": "华东机电"},
        "sale_date": {"__class__": "date", "year": 2026, "month": 8, "day": 4},
        "total_amount": {"__class__": "Decimal", "decimal": "1000.50"},
        "number": None,
    }
    assert flatten(row, SPECS) == {
        "id": 3,
        "party_id": 7,
        "party_name": "华东机电",
        "sale_date": "2026-08-04",
        "total_amount": 1000.5,
        "number": None,
    }
    assert read_fields(BY_MODEL["sale.sale"], SPECS) == ["number", "party", "party.rec_name", "sale_date", "state",
                                                         "total_amount"]  # fmt: skip


def test_the_same_fields_in_another_language_are_the_aliases_of_their_labels_and_options() -> None:
    from tether.packs.erp.tryton_forms import add_aliases

    english = {**SPECS, "state": {**SPECS["state"], "string": "State", "selection": [["draft", "Draft"]]}}
    english["party"] = {**SPECS["party"], "string": "Party"}
    master = [m for n, spec in SPECS.items() for m in field_meta(n, spec)]
    add_aliases(master, [m for n, spec in english.items() for m in field_meta(n, spec)], "column")
    by = {f["column"]: f for f in master}
    assert by["party_id"]["aliases"] == ["Party"] and by["party_name"]["aliases"] == ["Party"]
    assert by["state"]["aliases"] == ["State"] and by["state"]["optionAliases"] == [
        {"value": "draft", "label": "Draft"}
    ]
    assert "aliases" not in by["number"]  # the same label in both: nothing to add
