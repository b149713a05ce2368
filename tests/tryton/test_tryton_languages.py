"""Tryton's two loaded languages as the reader sees them, on a real ``trytond``: the administrator
(English) finds the forms, fields and options by their Chinese names too, a Chinese user by their
English ones — each shown in the user's own language — and the questions the Tryton suite once
left unanswered are read on it (a stock by name, what is unpaid, a city's customers)."""

from __future__ import annotations

import asyncio
from datetime import date

import pytest

from tether.packs.erp import reader
from tether.packs.erp.metadata import Catalog, FormMeta, Seen
from tether.packs.erp.readings import Reading
from tether.packs.erp.tryton_client import TrytonClient
from tether.tryton import demo_data
from tether.tryton.server import RunningTrytond

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
PASSWORDS = {u.login: u.password for u in demo_data.USERS} | {"admin": demo_data.ADMIN_PASSWORD}


async def _catalog(url: str, login: str) -> Catalog:
    client = TrytonClient(url, "tether_demo")
    try:
        token = str((await client.login(login, PASSWORDS[login]))["token"])
        grants = set((await client.me(token))["sAuthsId"])
        cards = [c for c in await client.forms(token) if c["formId"] in grants]
        forms, rows = [], []
        for card in cards:
            config = await client.config(token, card["formId"])
            form = FormMeta.from_erp(card, config, frozenset(str(f["column"]) for f in config["master"]))
            forms.append(form)
            for row in (await client.read(token, form.form_id, {}, 1, 100))["rows"]:
                values = {c: str(row[c]) for c in form.vocabulary_columns() if row.get(c) not in (None, "")}
                rows.append(Seen(form.form_id, values))
        return Catalog(forms, rows)
    finally:
        await client.aclose()


def test_each_form_field_and_option_is_found_in_either_language_and_shown_in_the_users(trytond: RunningTrytond) -> None:
    admin = asyncio.run(_catalog(trytond.url, "admin"))
    invoice = next(f for f in admin.forms if f.name == "Account Invoice")
    assert "发票" in invoice.aliases
    state = next(f for f in invoice.fields if f.column == "state")
    assert state.label == "State" and "状态" in state.aliases and ("posted", "已过账") in state.option_aliases
    r = reader.read("有多少张发票已经过账了", admin, date(2026, 11, 30))
    assert isinstance(r, Reading) and (r.form.form_id, r.shape, r.filters) == (
        invoice.form_id,
        "count",
        {"state": "posted"},
    )

    sales = asyncio.run(_catalog(trytond.url, "sales"))
    sale = next(f for f in sales.forms if f.name == "销售订单")
    assert "Sale" in sale.aliases
    r = reader.read("which sales are still quotations?", sales, date(2026, 11, 30))
    assert isinstance(r, Reading) and (r.form.form_id, r.filters) == (sale.form_id, {"state": "quotation"})
    r = reader.read("上海有哪些客户", sales, date(2026, 11, 30))
    assert isinstance(r, Reading) and r.form.name == "往来单位" and r.filters == {"city": "上海"}


def test_the_stock_keepers_product_form_answers_what_is_left(trytond: RunningTrytond) -> None:
    stock = asyncio.run(_catalog(trytond.url, "stock"))
    for question in ("联轴器还剩几个", "深沟球轴承 6204 还有多少库存"):
        r = reader.read(question, stock, date(2026, 11, 30))
        assert isinstance(r, Reading) and r.form.name == "产品", (question, r)
        assert r.measure is not None and r.measure.column == "quantity" and r.agg == "sum"
