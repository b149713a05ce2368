"""Seed the local Tryton's demo company (``demo_data``) through Tryton's own API, ``proteus`` on
the ``trytond`` backend: the records pass through Tryton's models, workflows and wizards exactly
as a person's would (quote, confirm, ship, post, pay). Run by ``prepare`` in its own process, once,
on a database whose modules are active; it must never write SQL of its own."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

from tether.tryton import demo_data as data


def seed(database: str, config_file: Path) -> dict[str, int]:
    """Create the demo company in ``database``. -> the records created, by kind."""
    from proteus import config as proteus_config

    proteus_config.set_trytond(database, config_file=str(config_file))
    company = _company()
    accounts = _accounting(company)
    parties = _parties()
    products = _products(accounts)
    warehouses = _warehouses(products)
    _users(company)
    _translations()
    term = _payment_term()
    method = _payment_method(accounts)
    places = list(warehouses.values())
    sales = [
        _sale(parties["customers"][c], state, lines, products, places[n % 2], term, method, n)
        for n, (c, state, lines) in enumerate(data.SALES)
    ]
    purchases = [
        _purchase(parties["suppliers"][s], state, lines, products, places[n % 2], term, n)
        for n, (s, state, lines) in enumerate(data.PURCHASES)
    ]
    _other_company(company, products, places[0], term, method)
    return {
        "parties": len(parties["customers"]) + len(parties["suppliers"]),
        "products": len(products),
        "warehouses": len(warehouses),
        "users": len(data.USERS),
        "sales": len(sales),
        "purchases": len(purchases),
        "companies": 2,  # and the other company's (demo_data.OTHER_COMPANY)
    }


def _model(name: str) -> Any:
    from proteus import Model

    return Model.get(name)


def _xml_id(xml_id: str) -> int:
    from proteus.config import get_config

    module, fs_id = xml_id.split(".")
    return int(_model("ir.model.data").get_id(module, fs_id, get_config().context))


def _company() -> Any:
    from trytond.modules.company.tests.tools import create_company, get_company

    currency = _model("currency.currency")(name="人民币", code=data.CURRENCY, symbol="¥", rounding=Decimal("0.01"))
    currency.save()
    _model("currency.currency.rate")(date=datetime.date.min, rate=Decimal(1), currency=currency).save()
    party = _model("party.party")(name=data.COMPANY)
    party.addresses[0].city = "上海"
    party.save()
    create_company(party, currency)
    return get_company()


def _accounting(company: Any) -> dict[str, Any]:
    from trytond.modules.account.tests.tools import create_chart, get_accounts

    create_chart(company)
    _fiscal_year(company)
    accounts: dict[str, Any] = get_accounts(company)
    category = _model("product.category")(name="商品", accounting=True)
    category.account_expense = accounts["expense"]
    category.account_revenue = accounts["revenue"]
    category.save()
    accounts["category"] = category
    return accounts


def _fiscal_year(company: Any, invoice_prefix: str | None = None) -> None:
    from trytond.modules.account_invoice.tests.tools import set_fiscalyear_invoice_sequences

    year = data.DEMO_DAY.year
    fiscalyear = _model("account.fiscalyear")(
        name=str(year),
        start_date=datetime.date(year, 1, 1),
        end_date=datetime.date(year, 12, 31),
        company=company,
    )
    sequence_type = _model("ir.sequence.type")(_xml_id("account.sequence_type_account_move"))
    move_sequence = _model("ir.sequence.strict")(name=str(year), sequence_type=sequence_type, company=company)
    move_sequence.save()
    fiscalyear.move_sequence = move_sequence
    set_fiscalyear_invoice_sequences(fiscalyear)
    if invoice_prefix:
        invoices = fiscalyear.invoice_sequences[0].out_invoice_sequence
        invoices.prefix = invoice_prefix
        invoices.save()
    fiscalyear.click("create_period")


def _parties() -> dict[str, list[Any]]:
    party = _model("party.party")
    out: dict[str, list[Any]] = {"customers": [], "suppliers": []}
    for kind, names, prefix in (("customers", data.CUSTOMERS, "C"), ("suppliers", data.SUPPLIERS, "V")):
        for n, name in enumerate(names):
            city = data.CITIES[n % len(data.CITIES)]
            record = party(name=name, code=f"{prefix}{n + 1:03d}")
            record.addresses[0].city = city
            record.addresses[0].street = f"{city}市工业路 {n + 1} 号"
            out[kind].append(record)
    party.save(out["customers"] + out["suppliers"])  # one call: saving one by one is most of the seed's time
    return out


def _products(accounts: dict[str, Any]) -> list[Any]:
    template = _model("product.template")
    units = {uom: _model("product.uom")(_xml_id(f"product.{uom}")) for uom in {p[2] for p in data.PRODUCTS}}
    templates = []
    for code, name, uom, price, _cost, kind in data.PRODUCTS:
        record = template(name=name, code=code, type=kind, salable=True, purchasable=True, list_price=price)
        record.default_uom = units[uom]
        record.purchase_uom = units[uom]
        record.account_category = accounts["category"]
        templates.append(record)
    template.save(templates)
    products = [record.products[0] for record in templates]
    for product, (*_, cost, _kind) in zip(products, data.PRODUCTS, strict=True):
        product.cost_price = cost
    _model("product.product").save(products)
    return products


def _warehouses(products: list[Any]) -> dict[str, Any]:
    location = _model("stock.location")
    main = location.find([("code", "=", "WH")])[0]
    main.name = data.WAREHOUSES[0][1]
    main.save()
    code, name = data.WAREHOUSES[1]
    parts = {
        kind: location(name=f"{name}{label}", code=f"{code}-{kind[:3].upper()}", type="storage")
        for kind, label in (("input", "收货区"), ("output", "发货区"), ("storage", "存储区"))
    }
    for part in parts.values():
        part.save()
    second = location(
        name=name,
        code=code,
        type="warehouse",
        input_location=parts["input"],
        output_location=parts["output"],
        storage_location=parts["storage"],
        lost_found_location=main.lost_found_location,
    )
    second.save()
    for part in parts.values():
        part.parent = second
        part.save()
    found = {"WH": main, code: second}
    for wh_code, warehouse in found.items():
        inventory = _model("stock.inventory")(
            location=warehouse.storage_location, date=datetime.date(data.DEMO_DAY.year, 1, 2)
        )
        for product in products:
            if product.type == "goods":
                inventory.lines.new(product=product, quantity=float(data.STOCK[wh_code]))
        inventory.click("confirm")
    return found


def _users(company: Any, users: tuple[data.DemoUser, ...] = data.USERS) -> None:
    user = _model("res.user")
    group = _model("res.group")
    for demo in users:
        record = user(name=demo.name, login=demo.login, password=demo.password)
        record.language = _model("ir.lang").find([("code", "=", "zh_CN")])[0]
        record.companies.append(_model("company.company")(company.id))
        record.company = _model("company.company")(company.id)
        for xml_id in demo.groups:
            record.groups.append(group(_xml_id(xml_id)))
        record.save()


def _translations() -> None:
    """Complete Tryton's zh_CN words for what the assistant reads (``demo_data.ZH_CN``), as an
    administrator does in Tryton: the entry Tryton already has is given its value (and is no
    longer fuzzy, so Tryton uses it); a missing one is added."""
    translation = _model("ir.translation")
    changed = []
    for (name, kind, source), value in data.ZH_CN.items():
        found = translation.find(
            [("lang", "=", "zh_CN"), ("name", "=", name), ("type", "=", kind), ("src", "=", source)]
        )
        for record in found or [translation(lang="zh_CN", name=name, type=kind, src=source, res_id=-1)]:
            record.value = value
            record.fuzzy = False
            changed.append(record)
    translation.save(changed)


def _payment_term() -> Any:
    term = _model("account.invoice.payment_term")(name="30 天")
    line = term.lines.new(type="remainder")
    line.relativedeltas.new(days=30)
    term.save()
    return term


def _payment_method(accounts: dict[str, Any]) -> Any:
    journal = _model("account.journal").find([("type", "=", "cash")])[0]
    method = _model("account.invoice.payment.method")(name="银行转账", journal=journal)
    method.credit_account = accounts["cash"]
    method.debit_account = accounts["cash"]
    method.save()
    return method


def _day(n: int) -> datetime.date:
    """The n-th document's date: one every nine days back from DEMO_DAY, oldest first."""
    return data.DEMO_DAY - datetime.timedelta(days=9 * (len(data.SALES) - n) + 10)


def _sale(
    customer: Any, state: str, lines: Any, products: list[Any], warehouse: Any, term: Any, method: Any, n: int
) -> Any:
    sale = _model("sale.sale")(party=customer, payment_term=term, sale_date=_day(n), invoice_method="order")
    sale.warehouse = warehouse
    sale.description = f"{customer.name} 订单"
    for index, quantity in lines:
        line = sale.lines.new()
        line.product = products[index]
        line.quantity = float(quantity)
    sale.save()
    if state == "draft":
        return sale
    sale.click("quote")
    if state == "quotation":
        return sale
    if state == "confirmed":
        with _left_queued():
            sale.click("confirm")
        return sale
    sale.click("confirm")
    for shipment in sale.shipments:
        _ship(shipment, _day(n) + datetime.timedelta(days=2))
    for invoice in sale.invoices:
        invoice.invoice_date = _day(n) + datetime.timedelta(days=3)
        _past_warnings(partial(invoice.click, "post"))
        if state == "done":
            pay = invoice.click("pay")
            pay.form.payment_method = method
            pay.form.date = invoice.invoice_date + datetime.timedelta(days=20)
            pay.execute("choice")
    sale.reload()
    return sale


@contextmanager
def _left_queued() -> Iterator[None]:
    """While open, what Tryton queues stays in its queue (``ir.queue``) for a worker instead of
    running at once: a confirmed sale stays ``confirmed`` (no worker runs in the demo)."""
    from trytond.config import config

    before = config.get("queue", "worker", default="False")
    config.set("queue", "worker", "True")
    try:
        yield
    finally:
        config.set("queue", "worker", before)


def _past_warnings(action: Callable[[], object]) -> None:
    """Run ``action``, accepting the warnings Tryton raises on the way as a person would click
    through them: the seed dates its documents in the past on purpose (overdue receivables), and
    a payment date in the past is what Tryton warns about."""
    from proteus.config import get_config
    from trytond.exceptions import UserWarning as TrytonWarning

    for _ in range(5):
        try:
            action()
            return
        except TrytonWarning as warning:
            _model("res.user.warning")(user=get_config().user, name=warning.name, always=False).save()
    action()


def _ship(shipment: Any, day: datetime.date) -> None:
    shipment.effective_date = day
    shipment.save()
    shipment.click("assign_force")
    shipment.click("pick")
    shipment.click("pack")
    shipment.click("do")


def _purchase(supplier: Any, state: str, lines: Any, products: list[Any], warehouse: Any, term: Any, n: int) -> Any:
    purchase = _model("purchase.purchase")(party=supplier, payment_term=term, purchase_date=_day(n))
    purchase.warehouse = warehouse
    for index, quantity in lines:
        line = purchase.lines.new()
        line.product = products[index]
        line.quantity = float(quantity)
        line.unit_price = products[index].cost_price
    purchase.save()
    if state == "draft":
        return purchase
    purchase.click("quote")
    if state == "quotation":
        return purchase
    purchase.click("confirm")
    return purchase


def _other_company(ours: Any, products: list[Any], warehouse: Any, term: Any, method: Any) -> None:
    """The other company (``demo_data.OTHER_COMPANY``): its chart, year and sale sequence, its
    customers and user, one sale of services invoiced and posted — made as the administrator
    working in it, who then works in ours alone again (as before: the seed's counts stay ours)."""
    from trytond.modules.account.tests.tools import create_chart, get_accounts

    party = _model("party.party")(name=data.OTHER_COMPANY)
    party.addresses[0].city = "昆明"
    party.save()
    company = _model("company.company")(party=party, currency=ours.currency)
    company.save()
    _work_in(company, add=company)
    create_chart(company)
    _fiscal_year(company, data.OTHER_INVOICE_PREFIX)
    accounts = get_accounts(company)
    category = _model("product.category").find([("name", "=", "商品")])[0]
    category.account_expense, category.account_revenue = accounts["expense"], accounts["revenue"]
    category.save()
    sequence = _model("ir.sequence")(
        name=data.OTHER_COMPANY, prefix=data.OTHER_PREFIX, company=company,
        sequence_type=_model("ir.sequence.type")(_xml_id("sale.sequence_type_sale")),
    )  # fmt: skip
    sequence.save()
    configuration = _model("sale.configuration")(1)
    configuration.sale_sequence = sequence
    configuration.save()
    by_code = {p.code: n for n, p in enumerate(products)}
    for code, price in data.OTHER_PRICES.items():
        template = _model("product.template")(products[by_code[code]].template.id)
        template.list_price = price
        template.save()
    customers = [_model("party.party")(name=name, code=f"X{n + 1:03d}") for n, name in enumerate(data.OTHER_CUSTOMERS)]
    _model("party.party").save(customers)
    _users(company, data.OTHER_USERS)
    customer, lines = data.OTHER_SALE
    indexed = tuple((by_code[code], hours) for code, hours in lines)
    _sale(customers[customer], "processing", indexed, products, warehouse, term, method, len(data.SALES) - 1)
    _work_in(ours, remove=company)


def _work_in(company: Any, *, add: Any = None, remove: Any = None) -> None:
    """The administrator's company, ``add``ing or ``remove``ing one they may work in, then their
    context anew. One write each, in this order: the company must always be one of theirs (in one
    write, Tryton checks the removal against the company being left)."""
    from proteus.config import get_config

    config = get_config()
    user = _model("res.user")
    for values in (
        {"companies": [("add", [add.id])]} if add is not None else None,
        {"company": company.id},
        {"companies": [("remove", [remove.id])]} if remove is not None else None,
    ):
        if values is not None:
            user._proxy.write([config.user], values, config.context)
            config._context = user.get_preferences(True, {})
