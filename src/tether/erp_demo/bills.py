"""The demo company's business documents, generated per brand: quotations, and for some of them
the chain that follows (sales order, delivery, invoice, receipts), purchase orders and their
inbound receipts, with the planted facts of ``tether.erp_demo.facts`` among them (the revision
quotation, the overdue invoices). Part of ``generator.generate``."""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from tether.erp_demo import facts
from tether.erp_demo.vocabulary import REMARKS

if TYPE_CHECKING:
    from tether.erp_demo.generator import Brand, Row


def _qty(b: Brand, unit: str, price: float) -> float:
    if unit == "吨":
        return round(b.rng.uniform(0.5, 6), 2)
    if price >= 1000:
        return float(b.rng.randint(1, 10))
    if price >= 100:
        return float(b.rng.randint(2, 40))
    if price >= 5:
        return float(b.rng.randint(10, 300))
    return float(b.rng.choice((500, 1000, 2000, 3000, 5000, 10000)))


def _bill(b: Brand, kind: str, day: date, status: str, remark: str, created_by: str, **extra: Any) -> Row:
    stamp = b.stamp(day)
    examined = status == "examined"
    return {
        "id": extra.pop("id", None) or b.new_id(kind), **b.tenant(), "bill_no": "", "bill_date": day, "status": status,
        "remark": remark, "created_by": created_by, "examined_by": created_by if examined else None,
        "examined_at": stamp + timedelta(hours=2) if examined else None, **extra, "version": 1, "created_at": stamp,
        "updated_at": stamp,
    }  # fmt: skip


def _line(
    b: Brand, kind: str, parent: str, parent_id: str, n: int, m: Row, qty: float, price: float, **extra: Any
) -> Row:
    return {
        "id": b.new_id(kind), **b.tenant(), parent: parent_id, "line_no": n, "material_id": m["id"], "qty": qty,
        "unit_price": price, "amount": round(qty * price, 2), **extra, "remark": "",
    }  # fmt: skip


def _copied(b: Brand, kind: str, parent: str, parent_id: str, source: list[Row]) -> list[Row]:
    """A downstream bill's lines: each upstream line's material, quantity and price, linked to it."""
    mats = {m["id"]: m for m in b.materials}
    return [
        _line(
            b,
            kind,
            parent,
            parent_id,
            x["line_no"],
            mats[x["material_id"]],
            x["qty"],
            x["unit_price"],
            source_line_id=x["id"],
        )
        for x in source
    ]


def _quote(
    b: Brand, customer: Row, day: date, status: str, remark: str, picks: list[tuple[Row, float]], **extra: Any
) -> tuple[Row, list[Row]]:
    q = _bill(b, "qt", day, status, remark, customer["salesman_id"], customer_id=customer["id"],
              valid_until=day + timedelta(days=30), delivery_days=b.rng.choice((7, 15, 20, 30, 45)), tax_rate=13.0,
              total_amount=0.0, **extra)  # fmt: skip
    lines = []
    for n, (m, qty) in enumerate(picks, 1):
        price = round(m["price"] * b.rng.uniform(0.92, 1.08), 2)
        lines.append(_line(b, "qtl", "quotation_id", q["id"], n, m, qty, price))
    q["total_amount"] = round(sum(x["amount"] for x in lines), 2)
    b.rows["quotation"].append(q)
    b.rows["quotation_line"] += lines
    return q, lines


def _picks(b: Brand, k: int) -> list[tuple[Row, float]]:
    return [(m, _qty(b, m["unit"], m["price"])) for m in b.rng.sample(b.materials, k)]


def sales(b: Brand, n_quotes: int) -> None:
    by_code = {c["code"]: c for c in b.customers}
    mats = {m["code"]: m for m in b.materials}
    overdue = {c for c, _, _ in facts.OVERDUE_CUSTOMERS} if b.brand == facts.BRAND_1 else set()
    for _ in range(n_quotes):
        day = b.days_ago(3, 365)
        fresh = (b.today - day).days < 20
        status = (
            ("draft" if b.rng.random() < 0.4 else "examined")
            if fresh
            else ("examined" if b.rng.random() < 0.92 else "draft")
        )
        customer = b.rng.choice(b.customers)
        q, lines = _quote(b, customer, day, status, b.rng.choice(REMARKS), _picks(b, b.rng.randint(1, 5)))
        if status == "examined" and b.rng.random() < 0.6:
            _order_chain(b, customer, q, lines)
    if b.brand == facts.BRAND_1:
        target = by_code[facts.REVISION_QUOTATION_CUSTOMER[0]]
        picks = [(mats[code], float(qty)) for code, qty in facts.REVISION_QUOTATION_LINES]
        day = facts.revision_quotation_date(b.today)
        _quote(b, target, day, "draft", facts.REVISION_REMARK, picks, id=facts.REVISION_QUOTATION_ID, _first=True)
        for i, (qid, remark) in enumerate(facts.HOSTILE_QUOTATIONS.items()):
            _quote(
                b,
                target,
                b.today - timedelta(days=40 - 9 * i),
                "draft" if i % 2 else "examined",
                remark,
                _picks(b, 2),
                id=qid,
            )
        for code in sorted(overdue):
            _plant_overdue(b, by_code[code])


def _order_chain(b: Brand, customer: Row, q: Row, q_lines: list[Row]) -> None:
    day = q["bill_date"] + timedelta(days=b.rng.randint(1, 10))
    if day >= b.today:
        return
    status = "examined" if (b.today - day).days > 5 and b.rng.random() < 0.95 else "draft"
    so = _bill(b, "so", day, status, "", q["created_by"], customer_id=customer["id"], quotation_id=q["id"],
               delivery_date=day + timedelta(days=q["delivery_days"] or 15), total_amount=q["total_amount"])  # fmt: skip
    so_lines = _copied(b, "sol", "sales_order_id", so["id"], q_lines)
    b.rows["sales_order"].append(so)
    b.rows["sales_order_line"] += so_lines
    if status != "examined":
        return
    d_day = day + timedelta(days=b.rng.randint(3, 20))
    if d_day >= b.today or b.rng.random() > 0.9:
        return
    wh = b.warehouses[1] if b.brand == facts.BRAND_1 else b.warehouses[0]
    dn = _bill(b, "dn", d_day, "examined", "", "wh01" if b.brand == facts.BRAND_1 else "b2admin",
               customer_id=customer["id"], sales_order_id=so["id"], warehouse_id=wh["id"],
               ship_address=customer["address"], total_amount=so["total_amount"])  # fmt: skip
    b.rows["delivery"].append(dn)
    b.rows["delivery_line"] += _copied(b, "dnl", "delivery_id", dn["id"], so_lines)
    i_day = d_day + timedelta(days=b.rng.randint(0, 5))
    if i_day >= b.today or b.rng.random() > 0.92:
        return
    invoice = _invoice(b, customer, i_day, dn["total_amount"], delivery_id=dn["id"], sales_order_id=so["id"])
    _receipts(b, customer, invoice)


def _invoice(b: Brand, customer: Row, day: date, total: float, **links: Any) -> Row:
    amount = round(total / 1.13, 2)
    invoice = _bill(b, "iv", day, "examined", "", "fin01" if b.brand == facts.BRAND_1 else "b2admin",
                    customer_id=customer["id"], invoice_type="special" if b.rng.random() < 0.8 else "ordinary",
                    amount=amount, tax_amount=round(total - amount, 2), total_amount=round(total, 2),
                    due_date=day + timedelta(days=customer["payment_terms_days"]), **links)  # fmt: skip
    b.rows["sales_invoice"].append(invoice)
    return invoice


def _receipt(b: Brand, customer: Row, invoice: Row, day: date, amount: float) -> None:
    day = min(max(day, invoice["bill_date"]), b.today - timedelta(days=1))
    b.rows["receipt"].append(
        _bill(b, "rc", day, "examined", "", invoice["created_by"], customer_id=customer["id"], invoice_id=invoice["id"],
              amount=round(amount, 2), method=b.rng.choice(("transfer", "transfer", "transfer", "acceptance", "online")))
    )  # fmt: skip


def _receipts(b: Brand, customer: Row, invoice: Row) -> None:
    """Ordinary customers pay: anything due more than 30 days ago is paid in full."""
    due: date = invoice["due_date"]
    total = invoice["total_amount"]
    if due + timedelta(days=30) <= b.today:
        pay = True
    elif due < b.today:
        pay = b.rng.random() < 0.5
    else:
        pay = b.rng.random() < 0.3
    if not pay:
        return
    day = due + timedelta(days=b.rng.randint(-20, 25))
    if b.rng.random() < 0.15:
        first = round(total * 0.5, 2)
        _receipt(b, customer, invoice, day - timedelta(days=10), first)
        _receipt(b, customer, invoice, day, total - first)
    else:
        _receipt(b, customer, invoice, day, total)


def _plant_overdue(b: Brand, customer: Row) -> None:
    """Several examined invoices more than 90 days overdue, barely paid."""
    for i in range(facts.OVERDUE_INVOICES_EACH):
        day = b.today - timedelta(days=230 - 28 * i)
        total = round(b.rng.uniform(30_000, 160_000), 2)
        invoice = _invoice(b, customer, day, total)
        invoice["remark"] = "货款逾期，已多次催收"
        if i == 0:
            _receipt(b, customer, invoice, day + timedelta(days=45), total * 0.2)


def purchases(b: Brand, n_pos: int) -> None:
    buyer = "admin" if b.brand == facts.BRAND_1 else "b2admin"
    for _ in range(n_pos):
        supplier = b.rng.choice(b.suppliers)
        day = b.days_ago(2, 365)
        status = "examined" if (b.today - day).days > 7 and b.rng.random() < 0.92 else "draft"
        due = day + timedelta(days=supplier["payment_terms_days"])
        po = _bill(b, "po", day, status, b.rng.choice(REMARKS), buyer, supplier_id=supplier["id"],
                   expected_date=day + timedelta(days=b.rng.randint(5, 25)), due_date=due, total_amount=0.0, paid_amount=0.0)  # fmt: skip
        lines = []
        for n, m in enumerate(b.rng.sample(b.materials, b.rng.randint(1, 4)), 1):
            price = round(m["cost"] * b.rng.uniform(0.95, 1.05), 2)
            lines.append(_line(b, "pol", "purchase_order_id", po["id"], n, m, _qty(b, m["unit"], m["price"]), price))
        po["total_amount"] = total = round(sum(x["amount"] for x in lines), 2)
        if status == "examined":
            if due < b.today - timedelta(days=10):
                po["paid_amount"] = total if b.rng.random() < 0.9 else round(total * 0.5, 2)
            elif b.rng.random() < 0.2:
                po["paid_amount"] = round(total * 0.3, 2)
        b.rows["purchase_order"].append(po)
        b.rows["purchase_order_line"] += lines
        arrive: date = po["expected_date"] + timedelta(days=b.rng.randint(-3, 5))
        if status != "examined" or arrive >= b.today or b.rng.random() > 0.9:
            continue
        inbound = _bill(b, "in", max(arrive, day), "examined", "", "wh01" if b.brand == facts.BRAND_1 else buyer,
                        supplier_id=supplier["id"], purchase_order_id=po["id"], warehouse_id=b.warehouses[0]["id"],
                        total_amount=total)  # fmt: skip
        b.rows["inbound"].append(inbound)
        b.rows["inbound_line"] += _copied(b, "inl", "inbound_id", inbound["id"], lines)
