"""The demo company's data: two brands in one database (brand 1 a precision-machinery maker,
brand 2 an electronics trader), generated with ``random.Random(seed)`` so the same seed, scale and
day give the same rows. Dates are relative to ``today`` (the last ~12 months). The planted facts
of ``tether.erp_demo.facts`` are put in on top of the ordinary business.

``generate`` returns rows per table; ``insert`` writes them with executemany (seconds for the whole
company on SQLite)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa

from tether.erp_demo import bills, facts
from tether.erp_demo.auth import hash_password
from tether.erp_demo.schema import TABLES
from tether.erp_demo.vocabulary import (
    CARD_TERMS,
    CITIES,
    CUSTOMER_SUFFIXES,
    FAMILIES,
    GIVEN,
    MINIMUMS,
    NOTES,
    ROADS,
    SIZES,
    SUPPLIER_SUFFIXES,
    SURNAMES,
    WAREHOUSES,
    WORDS,
)

Row = dict[str, Any]


@dataclass
class Brand:
    """One brand's generation: its random stream, the rows made so far and the records later
    documents refer to."""

    brand: int
    rng: random.Random
    today: date
    rows: dict[str, list[Row]]
    customers: list[Row] = field(default_factory=list)
    suppliers: list[Row] = field(default_factory=list)
    materials: list[Row] = field(default_factory=list)
    warehouses: list[Row] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def new_id(self, kind: str) -> str:
        self.counters[kind] += 1
        return f"{kind}-{self.brand}-{self.counters[kind]:05d}"

    def tenant(self) -> Row:
        return {"brands_id": self.brand, "subsidiary_id": facts.SUBSIDIARY}

    def days_ago(self, low: int, high: int) -> date:
        return self.today - timedelta(days=self.rng.randint(low, high))

    def stamp(self, day: date) -> datetime:
        return datetime.combine(day, time(8, 30)) + timedelta(minutes=self.rng.randint(0, 540))

    def person(self) -> str:
        return self.rng.choice(SURNAMES) + "".join(self.rng.choice(GIVEN) for _ in range(self.rng.choice((1, 2))))

    def phone(self) -> str:
        return f"1{self.rng.choice('3578')}{self.rng.randint(0, 9)}{self.rng.randint(10_000_000, 99_999_999)}"


def _sized(brand: int, scale: float) -> tuple[int, ...]:
    return tuple(max(lo, round(n * scale)) for n, lo in zip(SIZES[brand], MINIMUMS[brand], strict=True))


def generate(seed: int = 3, scale: float = 1.0, today: date | None = None) -> dict[str, list[Row]]:
    """Rows per table for the whole demo company (both brands), deterministic in (seed, scale, today)."""
    today = today or date.today()
    rng = random.Random(seed)
    rows: dict[str, list[Row]] = defaultdict(list)
    _people(rows, today)
    for brand in (facts.BRAND_1, facts.BRAND_2):
        b = Brand(brand, random.Random(rng.randrange(2**32)), today, rows)
        n_customers, n_suppliers, n_materials, n_quotes, n_pos = _sized(brand, scale)
        _warehouses(b)
        _customers(b, n_customers)
        _suppliers(b, n_suppliers)
        _materials(b, n_materials)
        _inventory(b)
        bills.sales(b, n_quotes)
        bills.purchases(b, n_pos)
    _number_bills(rows)
    return dict(rows)


def _people(rows: dict[str, list[Row]], today: date) -> None:
    rows["company"] += [
        {"brands_id": facts.BRAND_1, "subsidiary_id": facts.SUBSIDIARY, "name": facts.BRAND_1_NAME,
         "short_name": facts.BRAND_1_SHORT, "business": "精密机械零部件制造与机电设备集成"},
        {"brands_id": facts.BRAND_2, "subsidiary_id": facts.SUBSIDIARY, "name": facts.BRAND_2_NAME,
         "short_name": facts.BRAND_2_SHORT, "business": "电子元器件分销与方案贸易"},
    ]  # fmt: skip
    created = datetime.combine(today - timedelta(days=900), time(9))
    with ThreadPoolExecutor(len(facts.USERS)) as pool:  # PBKDF2 releases the GIL: one salt each, in parallel
        hashes = list(pool.map(hash_password, [facts.PASSWORD] * len(facts.USERS)))
    for (user_id, (name, brand, auths, jurisdiction)), password_hash in zip(facts.USERS.items(), hashes, strict=True):
        rows["erp_user"].append(
            {"id": user_id, "password_hash": password_hash, "name": name, "brands_id": brand,
             "subsidiary_id": facts.SUBSIDIARY, "auths": ",".join(auths), "jurisdiction": jurisdiction,
             "active": True, "created_at": created}
        )  # fmt: skip
    staff = [
        *((uid, name, facts.BRAND_1, "销售部") for uid, name in facts.BRAND_1_SALESPEOPLE.items()),
        *((uid, name, facts.BRAND_2, "销售部") for uid, name in facts.BRAND_2_SALESPEOPLE.items()),
        ("wh01", facts.USERS["wh01"][0], facts.BRAND_1, "仓储部"),
        ("fin01", facts.USERS["fin01"][0], facts.BRAND_1, "财务部"),
        ("admin", facts.USERS["admin"][0], facts.BRAND_1, "信息部"),
        ("b2admin", facts.USERS["b2admin"][0], facts.BRAND_2, "总经办"),
    ]
    for i, (uid, name, brand, dept) in enumerate(staff):
        rows["employee"].append(
            {"id": uid, "brands_id": brand, "subsidiary_id": facts.SUBSIDIARY, "name": name, "dept": dept,
             "phone": f"0519-8{i:03d}{1000 + i * 37}"}
        )  # fmt: skip


def _warehouses(b: Brand) -> None:
    for i, (code, name, address) in enumerate(WAREHOUSES[b.brand], 1):
        row = {"id": f"wh-{b.brand}-{i}", **b.tenant(), "code": code, "name": name, "address": address}
        b.warehouses.append(row)
    b.rows["warehouse"] += b.warehouses


def _unique_name(b: Brand, suffixes: tuple[tuple[str, str], ...], taken: set[str]) -> tuple[str, str, str, str]:
    while True:
        city, word = b.rng.choice(CITIES), b.rng.choice(WORDS)
        suffix, kind = b.rng.choice(suffixes)
        name = f"{city}{word}{suffix}"
        if name not in taken:
            taken.add(name)
            return name, city, word, kind


def _salesman(b: Brand) -> str:
    if b.brand == facts.BRAND_2:
        return b.rng.choice(tuple(facts.BRAND_2_SALESPEOPLE))
    return b.rng.choices(tuple(facts.BRAND_1_SALESPEOPLE), weights=(25, 25, 17, 17, 16))[0]


def _customers(b: Brand, n: int) -> None:
    fixed = facts.BRAND_1_CUSTOMERS if b.brand == facts.BRAND_1 else facts.BRAND_2_CUSTOMERS
    start = 1 if b.brand == facts.BRAND_1 else 5001
    taken = {name for _, name, _ in fixed}
    for i in range(max(n, len(fixed))):
        code = f"C{start + i:04d}"
        if i < len(fixed):
            _, name, salesman = fixed[i]
            city = next((c for c in CITIES if name.startswith(c)), "苏州")
            word = next((w for w in WORDS if w in name), name[len(city) : len(city) + 2])
            kind = next((k for s, k in CUSTOMER_SUFFIXES[b.brand] if name.endswith(s)), "机械制造")
        else:
            name, city, word, kind = _unique_name(b, CUSTOMER_SUFFIXES[b.brand], taken)
            people = tuple(facts.BRAND_1_SALESPEOPLE if b.brand == facts.BRAND_1 else facts.BRAND_2_SALESPEOPLE)
            k = i - len(fixed)  # every salesperson has customers, at any scale
            salesman = people[k] if k < len(people) else _salesman(b)
        overdue = code in {c for c, _, _ in facts.OVERDUE_CUSTOMERS} and b.brand == facts.BRAND_1
        notes = facts.HOSTILE_CUSTOMER_NOTES.get(code) if b.brand == facts.BRAND_1 else None
        created = b.stamp(b.days_ago(380, 1500))
        b.customers.append(
            {"id": b.new_id("cus"), **b.tenant(), "code": code, "name": name, "short_name": f"{city}{word}",
             "contact": b.person(), "phone": b.phone(), "city": city,
             "address": f"{city}市{b.rng.choice(ROADS)}{b.rng.randint(1, 999)}号", "industry": kind,
             "credit_limit": float(b.rng.choice((100_000, 200_000, 500_000, 1_000_000, 2_000_000))),
             "payment_terms_days": 30 if overdue else b.rng.choice(CARD_TERMS), "salesman_id": salesman,
             "notes": notes if notes is not None else b.rng.choice(NOTES), "version": 1, "created_at": created,
             "updated_at": created}
        )  # fmt: skip
    b.rows["customer"] += b.customers


def _suppliers(b: Brand, n: int) -> None:
    taken: set[str] = set()
    start = 1 if b.brand == facts.BRAND_1 else 5001
    for i in range(n):
        name, city, _, kind = _unique_name(b, SUPPLIER_SUFFIXES[b.brand], taken)
        created = b.stamp(b.days_ago(380, 1500))
        b.suppliers.append(
            {"id": b.new_id("sup"), **b.tenant(), "code": f"S{start + i:04d}", "name": name, "contact": b.person(),
             "phone": b.phone(), "city": city, "address": f"{city}市{b.rng.choice(ROADS)}{b.rng.randint(1, 999)}号",
             "category": kind, "payment_terms_days": b.rng.choice(CARD_TERMS), "notes": b.rng.choice(NOTES),
             "version": 1, "created_at": created, "updated_at": created}
        )  # fmt: skip
    b.rows["supplier"] += b.suppliers


def _catalog(b: Brand) -> Iterable[tuple[str, str, str, str, float, float]]:
    """(name, spec, unit, category, price, safety stock): the fixed entries, then families round-robin."""
    fixed = facts.BRAND_1_MATERIALS if b.brand == facts.BRAND_1 else facts.BRAND_2_MATERIALS
    seen = set()
    for _, name, spec, unit, price, safety in fixed:
        seen.add((name, spec))
        yield name, spec, unit, "常用件", price, safety
    families = FAMILIES[b.brand]
    depth = max(len(f[4]) for f in families)
    for i in range(depth):
        for name, unit, category, (low, high), specs in families:
            if i < len(specs) and (name, specs[i]) not in seen:
                price = round(b.rng.uniform(low, high), 2 if high < 100 else 0)
                yield name, specs[i], unit, category, price, _safety_for(b, price)


def _safety_for(b: Brand, price: float) -> float:
    if price >= 3000:
        return float(b.rng.choice((2, 3, 5)))
    if price >= 500:
        return float(b.rng.choice((5, 8, 10)))
    if price >= 50:
        return float(b.rng.choice((20, 30, 50)))
    if price >= 5:
        return float(b.rng.choice((50, 100, 200)))
    return float(b.rng.choice((1000, 2000, 5000)))


def _materials(b: Brand, n: int) -> None:
    start = 1 if b.brand == facts.BRAND_1 else 5001
    for i, (name, spec, unit, category, price, safety) in enumerate(_catalog(b)):
        if i >= n:
            break
        created = b.stamp(b.days_ago(400, 1500))
        b.materials.append(
            {"id": b.new_id("mat"), **b.tenant(), "code": f"M{start + i:04d}", "name": name, "spec": spec,
             "unit": unit, "category": category, "price": float(price), "cost": round(price * b.rng.uniform(0.6, 0.8), 2),
             "safety_stock": float(safety), "remark": "", "version": 1, "created_at": created, "updated_at": created}
        )  # fmt: skip
    b.rows["material"] += b.materials


def _inventory(b: Brand) -> None:
    low = {code for code, _, _ in facts.LOW_STOCK_MATERIALS} if b.brand == facts.BRAND_1 else set()
    for m in b.materials:
        safety = m["safety_stock"]
        factor = b.rng.uniform(0.1, 0.6) if m["code"] in low else b.rng.uniform(1.3, 4.0)
        total = safety * factor
        places = [b.warehouses[0]]
        if m["code"] not in low and b.rng.random() < 0.4:
            places.append(b.warehouses[1])
        shares = [1.0] if len(places) == 1 else [0.7, 0.3]
        for wh, share in zip(places, shares, strict=True):
            qty = round(total * share, 2) if m["unit"] == "吨" else float(int(total * share))
            stamp = b.stamp(b.days_ago(1, 30))
            b.rows["inventory"].append(
                {"id": b.new_id("inv"), **b.tenant(), "material_id": m["id"], "warehouse_id": wh["id"], "qty": qty,
                 "last_in_date": b.days_ago(3, 60), "last_out_date": b.days_ago(1, 20), "version": 1,
                 "created_at": stamp, "updated_at": stamp}
            )  # fmt: skip


PREFIXES = {
    "quotation": "QT", "sales_order": "SO", "delivery": "DN", "sales_invoice": "IV", "receipt": "RC",
    "purchase_order": "PO", "inbound": "IN",
}  # fmt: skip


def _number_bills(rows: dict[str, list[Row]]) -> None:
    """Bill numbers per brand, prefix and month in date order; the bill_seq counters to go on from."""
    for table, prefix in PREFIXES.items():
        bills = rows.get(table, [])
        order = sorted(range(len(bills)), key=lambda i: (bills[i]["bill_date"], not bills[i].pop("_first", False), i))
        last: dict[tuple[int, str], int] = defaultdict(int)
        for i in order:
            bill = bills[i]
            period = f"{bill['bill_date']:%Y%m}"
            key = (bill["brands_id"], period)
            last[key] += 1
            bill["bill_no"] = f"{prefix}{period}-{last[key]:04d}"
        for (brand, period), n in sorted(last.items()):
            rows["bill_seq"].append(
                {
                    "brands_id": brand,
                    "subsidiary_id": facts.SUBSIDIARY,
                    "prefix": prefix,
                    "bill_period": period,
                    "last_no": n,
                }
            )
    for bills in rows.values():
        for bill in bills:
            bill.pop("_first", None)


INSERT_ORDER = (
    "company", "employee", "warehouse", "erp_user", "customer", "supplier", "material", "inventory",
    "quotation", "quotation_line", "sales_order", "sales_order_line", "delivery", "delivery_line",
    "sales_invoice", "receipt", "purchase_order", "purchase_order_line", "inbound", "inbound_line", "bill_seq",
)  # fmt: skip


def _default(column: sa.Column[Any]) -> Any:
    arg = getattr(column.default, "arg", None)
    return None if callable(arg) else arg


def insert(conn: sa.Connection, rows: dict[str, list[Row]], chunk: int = 1000) -> dict[str, int]:
    """Bulk-insert generated rows (executemany in chunks); rows per table."""
    counts: dict[str, int] = {}
    for name in INSERT_ORDER:
        table = TABLES[name]
        fill = {c.name: _default(c) for c in table.columns}
        data = [{**fill, **row} for row in rows.get(name, [])]
        for start in range(0, len(data), chunk):
            conn.execute(table.insert(), data[start : start + chunk])
        counts[name] = len(data)
    return counts
