"""The generator: deterministic, realistic sizes, the planted facts present, fast."""

from __future__ import annotations

import time
from datetime import date, timedelta

from tether.erp_demo import facts
from tether.erp_demo.generator import generate

TODAY = date(2026, 7, 21)


def _strip(rows: dict[str, list[dict[str, object]]]) -> dict[str, list[dict[str, object]]]:
    return {t: [{k: v for k, v in r.items() if k != "password_hash"} for r in rs] for t, rs in rows.items()}


def test_deterministic() -> None:
    a = generate(seed=3, scale=0.2, today=TODAY)
    b = generate(seed=3, scale=0.2, today=TODAY)
    assert _strip(a) == _strip(b)
    c = generate(seed=4, scale=0.2, today=TODAY)
    assert _strip(a)["customer"] != _strip(c)["customer"]


def test_full_size_and_speed() -> None:
    started = time.monotonic()
    rows = generate(today=TODAY)
    assert time.monotonic() - started < 5
    for table in (
        "customer",
        "material",
        "quotation",
        "sales_order",
        "delivery",
        "sales_invoice",
        "receipt",
        "purchase_order",
        "inbound",
        "inventory",
    ):
        assert 100 <= len(rows[table]) <= 5000, (table, len(rows[table]))
    assert len(rows["quotation_line"]) > 1000
    brands = {r["brands_id"] for r in rows["quotation"]}
    assert brands == {1, 2}
    dates = [r["bill_date"] for t in ("quotation", "sales_order", "purchase_order") for r in rows[t]]
    assert min(dates) >= TODAY - timedelta(days=366) and max(dates) <= TODAY


def test_planted_facts() -> None:
    rows = generate(scale=0.1, today=TODAY)
    customers = {(r["brands_id"], r["code"]): r for r in rows["customer"]}
    for code, name, salesman in (*facts.BRAND_1_CUSTOMERS,):
        assert customers[(1, code)]["name"] == name and customers[(1, code)]["salesman_id"] == salesman
    assert customers[(2, facts.BRAND_2_CUSTOMER[0])]["name"] == facts.BRAND_2_CUSTOMER[1]
    assert (2, facts.BRAND_1_CUSTOMERS[0][0]) not in customers and (1, facts.BRAND_2_CUSTOMER[0]) not in customers
    materials = {(r["brands_id"], r["code"]): r for r in rows["material"]}
    assert materials[(1, facts.BRAND_1_MATERIAL[0])]["name"] == facts.BRAND_1_MATERIAL[1]
    assert materials[(2, facts.BRAND_2_MATERIAL[0])]["name"] == facts.BRAND_2_MATERIAL[1]
    assert (2, facts.BRAND_1_MATERIAL[0]) not in materials and (1, facts.BRAND_2_MATERIAL[0]) not in materials
    quotes = {r["id"]: r for r in rows["quotation"]}
    revision = quotes[facts.REVISION_QUOTATION_ID]
    assert revision["bill_no"] == facts.revision_quotation_bill_no(TODAY) == "QT202607-0001"
    assert revision["status"] == "draft" and revision["remark"] == facts.REVISION_REMARK
    for qid, remark in facts.HOSTILE_QUOTATIONS.items():
        assert quotes[qid]["remark"] == remark
    notes = {r["code"]: r["notes"] for r in rows["customer"] if r["brands_id"] == 1}
    for code, text in facts.HOSTILE_CUSTOMER_NOTES.items():
        assert notes[code] == text
    text = repr(rows)
    assert all(t in text for t in facts.HOSTILE_TEXTS)
    users = {r["id"]: r for r in rows["erp_user"]}
    assert set(users) == set(facts.USERS)
    bill_nos = [r["bill_no"] for r in rows["quotation"] if r["brands_id"] == 1]
    assert len(set(bill_nos)) == len(bill_nos) and all(n.startswith("QT") and len(n) == 13 for n in bill_nos)
