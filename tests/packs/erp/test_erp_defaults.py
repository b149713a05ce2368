"""A create's defaults read from any ERP's form config (``packs/erp/defaults.py``): not the demo
ERP's columns, its grammar — ``today``, ``<column>+<n>d``, ``today+<n>d``, a value in the field's type."""

from __future__ import annotations

from datetime import date
from typing import Any

from tether.packs.erp.defaults import with_defaults

TODAY = date(2026, 12, 7)
CONFIG: dict[str, Any] = {
    "master": [
        {"column": "offer_expires", "label": "报价截止", "type": "date", "default": "doc_day+14d"},
        {"column": "doc_day", "label": "日期", "type": "date", "default": "today"},
        {"column": "ship_by", "label": "发货", "type": "date", "default": "today+3d"},
        {"column": "lead_weeks", "label": "周", "type": "integer", "default": "2"},
        {"column": "vat", "label": "税率", "type": "number", "default": "6.5"},
        {
            "column": "terms",
            "label": "账期",
            "type": "select",
            "default": "60",
            "options": [{"value": "60", "label": "60天"}],
        },
        {"column": "bad", "label": "坏", "type": "integer", "default": "soon"},
        {"column": "code", "label": "单号", "type": "text", "default": "X", "readOnly": True},
        {"column": "note", "label": "备注", "type": "text"},
    ]
}


def test_every_writable_default_is_filled_in_its_type_and_a_relative_date_counts_from_its_base() -> None:
    assert with_defaults(CONFIG, {"note": "n"}, TODAY) == {
        "note": "n",
        "doc_day": "2026-12-07",
        "ship_by": "2026-12-10",
        "lead_weeks": 2,
        "vat": 6.5,
        "terms": "60",
        "offer_expires": "2026-12-21",  # declared before its base: counted from the base's default
    }


def test_a_value_given_wins_an_empty_one_too_and_a_relative_date_counts_from_the_given_base() -> None:
    given = {"doc_day": "2026-01-30", "lead_weeks": 5, "ship_by": None}
    out = with_defaults(CONFIG, given, TODAY)
    assert (out["doc_day"], out["offer_expires"], out["lead_weeks"], out["ship_by"]) == (
        "2026-01-30",
        "2026-02-13",
        5,
        None,
    )
    assert with_defaults(CONFIG, {"offer_expires": "2027-01-01"}, TODAY)["offer_expires"] == "2027-01-01"


def test_a_relative_date_whose_base_has_no_date_is_left_to_the_erp() -> None:
    config = {"master": [{"column": "until", "type": "date", "default": "nothing+30d"}]}
    assert with_defaults(config, {}, TODAY) == {}
