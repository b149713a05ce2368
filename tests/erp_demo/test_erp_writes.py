"""Writes through addUpdateDelBusinessData / doExamine / doUnExamine: validation per field, version
conflicts, atomic detail lines, bill numbering, stock effects, tenant and scope."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from tests.erp_demo.conftest import Erp
from tether.erp_demo import facts, writes
from tether.erp_demo.forms import BY_ID

WRITE = "/addUpdateDelBusinessData"


def _customer_id(erp: Erp, code: str, user: str = "admin") -> str:
    rows = erp.all_rows(user if user != "b2admin" else "b2admin", "1001", code=code)
    return str(rows[0]["id"])


def _material_id(erp: Erp, code: str, user: str = "admin") -> str:
    return str(erp.all_rows(user, "1003", code=code)[0]["id"])


def _count(erp: Erp, table: str) -> int:
    with erp.demo.engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one())


def _quote(erp: Erp, user: str = "sales01", **extra: Any) -> Any:
    body = {
        "sFormId": "2001",
        "handleType": "add",
        "data": {"customer_id": facts.SALES01_CUSTOMER[0], "remark": "新报价", **extra.pop("data", {})},
        "details": extra.pop(
            "details", [{"material_id": "M0004", "qty": 2, "unit_price": 1300}, {"material_id": "M0013", "qty": 10}]
        ),
        **extra,
    }
    return erp.post(user, WRITE, body)


def test_add_numbers_and_computes(erp: Erp) -> None:
    r = _quote(erp)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["code"] == 1 and body["version"] == 1
    month = f"{date.today():%Y%m}"
    assert re.fullmatch(rf"QT{month}-\d{{4}}", body["sBillNo"])
    again = _quote(erp).json()
    assert int(again["sBillNo"][-4:]) == int(body["sBillNo"][-4:]) + 1
    record = erp.get("sales01", f"/getBusinessDataById/2001/{body['sId']}").json()
    master, lines = record["master"], record["details"]
    assert (
        master["status"] == "draft"
        and master["created_by"] == "sales01"
        and master["bill_date"] == date.today().isoformat()
    )
    assert master["customer_name"] == facts.SALES01_CUSTOMER[1] and master["tax_rate"] == 13  # the default
    assert [(ln["material_code"], ln["qty"], ln["line_no"]) for ln in lines] == [("M0004", 2, 1), ("M0013", 10, 2)]
    price = erp.all_rows("admin", "1003", code="M0013")[0]["price"]
    assert lines[1]["unit_price"] == price  # the material's price when none is given
    assert lines[0]["amount"] == 2600 and master["total_amount"] == round(2600 + 10 * price, 2)
    assert master["valid_until"] == (date.today() + timedelta(days=30)).isoformat()  # bill_date+30d
    assert master["delivery_days"] == 15
    # a bill dated in another month takes that month's numbers; valid 30 days from that date
    june = _quote(erp, data={"bill_date": "2026-06-15", "delivery_days": 7}).json()
    assert june["sBillNo"].startswith("QT202606-")
    june_master = erp.get("sales01", f"/getBusinessDataById/2001/{june['sId']}").json()["master"]
    assert (june_master["valid_until"], june_master["delivery_days"]) == ("2026-07-15", 7)


def test_validation_is_422_per_field(erp: Erp) -> None:
    b2_customer = _customer_id(erp, facts.BRAND_2_CUSTOMER[0], "b2admin")
    before = (_count(erp, "quotation"), _count(erp, "quotation_line"))
    r = erp.post(
        "sales01",
        WRITE,
        {
            "sFormId": "2001",
            "handleType": "add",
            "data": {
                "customer_id": b2_customer,
                "bill_no": "QT1",
                "no_such": 1,
                "delivery_days": "soon",
                "valid_until": "tomorrow",
            },
            "details": [
                {"material_id": "M0004", "qty": "abc"},
                {"qty": 1},
                {"material_id": "M5001", "qty": 1},
                {"material_id": "M0004", "qty": -1},
            ],
        },
    )
    assert r.status_code == 422
    errors = r.json()["errors"]
    assert set(errors) == {
        "customer_id", "bill_no", "no_such", "delivery_days", "valid_until",
        "details[0].qty", "details[1].material_id", "details[2].material_id", "details[3].qty",
    }  # fmt: skip
    assert r.json()["code"] == -1 and "customer_id" in r.json()["msg"]
    missing = erp.post("sales01", WRITE, {"sFormId": "2001", "handleType": "add", "data": {}, "details": []}).json()
    assert {"customer_id", "details"} <= set(missing["errors"])
    # another salesperson's customer is not one sales01 can use
    other = _quote(erp, data={"customer_id": facts.SALES02_CUSTOMER[0]})
    assert other.status_code == 422 and "customer_id" in other.json()["errors"]
    assert (_count(erp, "quotation"), _count(erp, "quotation_line")) == before
    bad = [
        ({"sFormId": "2001", "handleType": "upsert", "sId": "x", "data": {}}, 422, "handleType"),
        ({"sFormId": "2001", "handleType": "add", "data": []}, 422, "data"),
        ({"sFormId": "2001", "handleType": "update", "data": {}}, 422, "sId"),
        ({"sFormId": "5001", "handleType": "add", "data": {}}, 422, "sFormId"),
        (
            {
                "sFormId": "2001",
                "handleType": "add",
                "column": ["remark"],
                "data": {"remark": "x", "customer_id": "C0001"},
            },
            422,
            "customer_id",
        ),
        (
            {"sFormId": "1001", "handleType": "add", "data": {"name": "x", "payment_terms_days": "45"}},
            422,
            "payment_terms_days",
        ),
        ({"sFormId": "nope", "handleType": "add", "data": {}}, 404, "no such form"),
    ]
    for body, status, word in bad:
        r = erp.post("admin", WRITE, body)
        assert r.status_code == status and word in r.text, (body, r.text)


def test_a_bad_line_leaves_nothing(erp: Erp) -> None:
    before = {t: _count(erp, t) for t in ("quotation", "quotation_line", "bill_seq")}
    seq = _seq(erp)
    lines = [{"material_id": "M0004", "qty": 1}] * 5 + [{"material_id": "M0004", "qty": 1, "amount": 99}]
    r = _quote(erp, details=lines)
    assert r.status_code == 422 and set(r.json()["errors"]) == {"details[5].amount"}
    assert {t: _count(erp, t) for t in before} == before and _seq(erp) == seq
    r = _quote(erp, details=[{"material_id": "M0004", "qty": 1}, {"material_id": "M0004", "qty": 1e13}])
    assert r.status_code == 422 and set(r.json()["errors"]) == {"details[1].qty"}
    assert {t: _count(erp, t) for t in before} == before and _seq(erp) == seq


def test_a_database_failure_rolls_the_whole_bill_back(erp: Erp, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line the database refuses after the master row and its number were written: nothing stays."""
    before = {t: _count(erp, t) for t in ("quotation", "quotation_line")}
    seq = _seq(erp)
    real = writes._line_rows

    def broken(*args: Any) -> list[dict[str, Any]]:
        rows = real(*args)
        rows[-1]["material_id"] = None  # NOT NULL
        return rows

    monkeypatch.setattr(writes, "_line_rows", broken)
    user = erp.demo.user_of(erp.token("sales01"))
    with pytest.raises(IntegrityError), erp.demo.tx() as conn:
        data = {"customer_id": facts.SALES01_CUSTOMER[0]}
        writes.add(
            conn, user, BY_ID["2001"], data, [{"material_id": "M0004", "qty": 1}, {"material_id": "M0006", "qty": 1}]
        )
    assert {t: _count(erp, t) for t in before} == before and _seq(erp) == seq


def _seq(erp: Erp) -> list[Any]:
    with erp.demo.engine.connect() as conn:
        return [
            tuple(r) for r in conn.execute(sa.text("SELECT prefix, bill_period, last_no FROM bill_seq ORDER BY 1, 2"))
        ]


def test_update_versions_and_examine(erp: Erp) -> None:
    made = _quote(erp).json()
    qid = made["sId"]
    upd = {
        "sFormId": "2001",
        "handleType": "update",
        "sId": qid,
        "column": ["remark"],
        "data": {"remark": "改"},
        "version": 1,
    }
    r = erp.post("sales01", WRITE, upd)
    assert r.status_code == 200 and r.json()["version"] == 2
    stale = erp.post("sales01", WRITE, upd)
    assert stale.status_code == 409 and "version" in stale.json()["msg"]
    lines = erp.post(
        "sales01", WRITE, {**upd, "version": 2, "details": [{"material_id": "M0006", "qty": 3, "unit_price": 900}]}
    )
    assert lines.status_code == 200
    record = erp.get("sales01", f"/getBusinessDataById/2001/{qid}").json()
    assert (
        record["master"]["remark"] == "改"
        and record["master"]["total_amount"] == 2700
        and record["master"]["version"] == 3
    )
    assert [(d["material_code"], d["qty"]) for d in record["details"]] == [("M0006", 3)]
    empty = erp.post(
        "sales01", WRITE, {"sFormId": "2001", "handleType": "update", "sId": qid, "data": {"customer_id": ""}}
    )
    assert empty.status_code == 422 and "customer_id" in empty.json()["errors"]
    ex = erp.post("sales01", "/doExamine", {"sFormId": "2001", "sId": qid, "version": 2})
    assert ex.status_code == 409  # stale version
    ex = erp.post("sales01", "/doExamine", {"sFormId": "2001", "sId": qid})
    assert ex.status_code == 200 and ex.json()["status"] == "examined" and ex.json()["version"] == 4
    assert erp.post("sales01", "/doExamine", {"sFormId": "2001", "sId": qid}).status_code == 409
    locked = erp.post(
        "sales01", WRITE, {"sFormId": "2001", "handleType": "update", "sId": qid, "data": {"remark": "x"}}
    )
    assert locked.status_code == 409 and "doUnExamine" in locked.json()["msg"]
    assert erp.post("sales01", WRITE, {"sFormId": "2001", "handleType": "del", "sId": qid}).status_code == 409
    master = erp.get("admin", f"/getBusinessDataById/2001/{qid}").json()["master"]
    assert master["examined_by"] == "sales01" and master["status"] == "examined"
    un = erp.post("sales01", "/doUnExamine", {"sFormId": "2001", "sId": qid})
    assert un.status_code == 200 and un.json()["status"] == "draft"
    assert erp.post("sales01", "/doUnExamine", {"sFormId": "2001", "sId": qid}).status_code == 409
    assert (
        erp.post("sales01", "/doExamine", {"sFormId": "1001", "sId": qid}).status_code == 422
    )  # no examine on masters
    assert erp.post("sales01", "/doExamine", {"sFormId": "2001"}).status_code == 422
    gone = erp.post("sales01", WRITE, {"sFormId": "2001", "handleType": "del", "sId": qid, "version": 5})
    assert gone.status_code == 200
    assert erp.get("sales01", f"/getBusinessDataById/2001/{qid}").status_code == 404
    with erp.demo.engine.connect() as conn:
        left = conn.execute(
            sa.text("SELECT COUNT(*) FROM quotation_line WHERE quotation_id = :q"), {"q": qid}
        ).scalar_one()
    assert left == 0


def test_tenant_and_scope_on_writes(erp: Erp) -> None:
    qid = _quote(erp).json()["sId"]
    for user in ("b2admin", "sales02"):
        r = erp.post(user, WRITE, {"sFormId": "2001", "handleType": "update", "sId": qid, "data": {"remark": "x"}})
        assert r.status_code == 404, user
        assert erp.post(user, "/doExamine", {"sFormId": "2001", "sId": qid}).status_code == 404
        assert erp.post(user, WRITE, {"sFormId": "2001", "handleType": "del", "sId": qid}).status_code == 404
    assert (
        erp.post(
            "admin", WRITE, {"sFormId": "2001", "handleType": "update", "sId": qid, "data": {"remark": "x"}}
        ).status_code
        == 200
    )


def test_master_data(erp: Erp) -> None:
    r = erp.post(
        "sales01",
        WRITE,
        {
            "sFormId": "1001",
            "handleType": "add",
            "data": {"name": "杭州新客户机械有限公司", "payment_terms_days": "60"},
        },
    )
    assert r.status_code == 200, r.text
    row = erp.get("sales01", f"/getBusinessDataById/1001/{r.json()['sId']}").json()["master"]
    assert re.fullmatch(r"C\d{4}", row["code"]) and row["salesman_id"] == "sales01" and row["payment_terms_days"] == 60
    dup = erp.post(
        "admin", WRITE, {"sFormId": "1001", "handleType": "add", "data": {"name": "重复", "code": row["code"]}}
    )
    assert dup.status_code == 422 and "code" in dup.json()["errors"]
    used = _customer_id(erp, facts.SALES01_CUSTOMER[0])
    assert erp.post("admin", WRITE, {"sFormId": "1001", "handleType": "del", "sId": used}).status_code == 409
    assert erp.post("admin", WRITE, {"sFormId": "1001", "handleType": "del", "sId": row["id"]}).status_code == 200


def test_stock_effects_of_examine(erp: Erp) -> None:
    code = facts.LOW_STOCK_MATERIALS[0][0]

    def stock() -> float:
        return sum(r["qty"] for r in erp.all_rows("admin", "4001", material_code=code))

    start = stock()
    supplier = erp.all_rows("admin", "1002")[0]["id"]
    inbound = erp.post(
        "admin",
        WRITE,
        {
            "sFormId": "3002",
            "handleType": "add",
            "data": {"supplier_id": supplier, "warehouse_id": "wh-1-1"},
            "details": [{"material_id": code, "qty": 50}],
        },
    ).json()
    assert inbound["sBillNo"].startswith("IN")
    assert stock() == start  # a draft moves nothing
    assert erp.post("admin", "/doExamine", {"sFormId": "3002", "sId": inbound["sId"]}).status_code == 200
    assert stock() == start + 50
    customer = _customer_id(erp, facts.SALES01_CUSTOMER[0])
    too_much = erp.post(
        "admin",
        WRITE,
        {
            "sFormId": "2003",
            "handleType": "add",
            "data": {"customer_id": customer, "warehouse_id": "wh-1-2"},
            "details": [{"material_id": code, "qty": 1}],
        },
    ).json()
    r = erp.post("admin", "/doExamine", {"sFormId": "2003", "sId": too_much["sId"]})
    assert r.status_code == 409 and "not enough stock" in r.json()["msg"]  # nothing of it in the finished-goods store
    delivery = erp.post(
        "admin",
        WRITE,
        {
            "sFormId": "2003",
            "handleType": "add",
            "data": {"customer_id": customer, "warehouse_id": "wh-1-1"},
            "details": [{"material_id": code, "qty": 20}],
        },
    ).json()
    assert erp.post("admin", "/doExamine", {"sFormId": "2003", "sId": delivery["sId"]}).status_code == 200
    assert stock() == start + 30
    assert erp.post("admin", "/doUnExamine", {"sFormId": "2003", "sId": delivery["sId"]}).status_code == 200
    assert stock() == start + 50
