"""The pure parts of writes on Tryton: the approvers setting, the web client's link, the workflow's
order, and a confirmed value as Tryton's JSON wants it (the writes themselves: tests/tryton)."""

from __future__ import annotations

import pytest

from tether.errors import ConfigError
from tether.packs.erp.adapters import approvers_of
from tether.packs.erp.tryton_client import TrytonClient
from tether.packs.erp.tryton_forms import BY_MODEL
from tether.packs.erp.tryton_writes import _typed


def test_the_approvers_setting_maps_tryton_groups_to_grants_and_refuses_what_it_cannot_read() -> None:
    assert approvers_of("sale.group_sale_admin=approve.sales, account.group_account_admin=approve.finance") == {
        "sale.group_sale_admin": "approve.sales",
        "account.group_account_admin": "approve.finance",
    }
    assert approvers_of("") == {}
    for bad in ("group_sale_admin=approve.sales", "sale.group_sale_admin", "sale.group_sale_admin="):
        with pytest.raises(ConfigError, match=r"module\.group=grant"):
            approvers_of(bad)


def test_an_executed_sale_opens_in_trytons_web_client_only_where_one_is_served() -> None:
    served = TrytonClient("http://127.0.0.1:8720", "tether_demo", web_url="https://erp.example/sao/")
    assert served.link("sale.sale", 17) == "https://erp.example/sao/#tether_demo/model/sale.sale/17"
    assert TrytonClient("http://127.0.0.1:8720", "tether_demo").link("sale.sale", 17) is None


def test_a_confirmed_sale_that_tryton_already_processes_counts_as_confirmed_never_the_reverse() -> None:
    sale = BY_MODEL["sale.sale"]
    assert sale.reached("processing", "confirmed") and sale.reached("quotation", "quotation")
    assert not sale.reached("draft", "quotation") and not sale.reached("quotation", "confirmed")
    assert not sale.reached("cancelled", "confirmed")  # off the road: never reached


def test_confirmed_values_go_to_tryton_in_its_own_types() -> None:
    assert _typed("many2one", "12") == 12
    assert _typed("numeric", 1.15) == {"__class__": "Decimal", "decimal": "1.15"}
    assert _typed("float", "40") == 40.0
    assert _typed("date", "2026-12-07") == {"__class__": "date", "year": 2026, "month": 12, "day": 7}
    assert _typed("char", "") is None
