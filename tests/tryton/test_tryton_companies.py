"""Another company's records, from the attacker's side. The demo database holds a second company
(``demo_data.OTHER_COMPANY``) with its own sale and posted invoice; Tryton's record rules keep
them to its own users. Our salesperson, through tether — the tools a model calls, and a model
that names the other company's sale in a proposal — never lists, counts, sums or looks them up,
by id or by number, and no proposal on them is made or executed; none of their numbers, amounts
or descriptions is in an answer or in the session's events. The other company's own user sees
them through the same tether, so it is Tryton's rules that hide them, not missing data."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.models.chat_server import ChatServer, completion
from tests.tryton.conftest import PreparedTryton
from tests.tryton.test_tryton_writes import PASSWORDS, Stack, serve
from tether.tryton import demo_data

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
PASSWORDS.update({u.login: u.password for u in demo_data.OTHER_USERS})
REFUSED = re.compile(r"erp\.(no_record|no_bill|bad_record_id)")
AMOUNT = sum(demo_data.OTHER_PRICES[code] * hours for code, hours in demo_data.OTHER_SALE[1])


@pytest.fixture(scope="module")
def stack(tryton_prepared: PreparedTryton, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with ChatServer([]) as chat:
        s = serve(tryton_prepared, tmp_path_factory.mktemp("tryton-companies"), chat)
        try:
            s.server.start(timeout=180)
            yield s
        finally:
            s.server.stop()
            s.trytond.stop()


def theirs(stack: Stack) -> dict[str, Any]:
    """The other company's sale and invoice, read in Tryton's database beside it."""
    company = stack.one(
        "select c.id from company_company c join party_party p on p.id = c.party where p.name = ?",
        demo_data.OTHER_COMPANY,
    )[0]
    sale, number, description = stack.one("select id, number, description from sale_sale where company = ?", company)
    invoice, invoice_number = stack.one(
        "select id, number from account_invoice where company = ? and type = 'out'", company
    )
    return {"sale": sale, "number": number, "description": description, "invoice": invoice,
            "invoice_number": invoice_number, "company": company}  # fmt: skip


def values(data: dict[str, Any], column: str) -> list[Any]:
    """A read's ``column`` in each row (its rows are lists, in the order of its ``columns``)."""
    at = data["columns"].index(column)
    return [row[at] for row in data["rows"]]


def form_of(stack: Stack, model: str) -> str:
    return str(stack.one("select id from ir_model where name = ?", model)[0])


def secrets(found: dict[str, Any]) -> list[str]:
    """What of theirs must never reach our salesperson (its party, like every party, may)."""
    return [found["number"], found["description"], found["invoice_number"], f"{AMOUNT:,.2f}", f"{AMOUNT}"]


def test_the_other_company_exists_and_its_own_user_reads_it_through_tether(stack: Stack) -> None:
    found = theirs(stack)
    assert found["number"].startswith(demo_data.OTHER_PREFIX) and found["invoice_number"]
    ours = stack.one("select company from sale_sale where id = 1")[0]
    assert ours != found["company"]
    with stack.client("rival") as c:
        read = c.post("/tools/read-form-data", json={"form_id": form_of(stack, "sale.sale"), "filters": {}})
        assert read.status_code == 200, read.text
        assert values(read.json()["data"], "number") == [found["number"]]
        looked = c.post("/tools/lookup-record", json={"form_id": form_of(stack, "sale.sale"),
                                                      "record_id": str(found["sale"])})  # fmt: skip
        assert looked.status_code == 200 and found["description"] in looked.text, looked.text


def test_our_salesperson_never_lists_counts_sums_or_looks_up_the_other_companys_sale_or_invoice(
    stack: Stack,
) -> None:
    found = theirs(stack)
    sales_form, invoices_form = form_of(stack, "sale.sale"), form_of(stack, "account.invoice")
    ours = stack.one("select count(*) from sale_sale where company <> ?", found["company"])[0]
    said: list[str] = []
    with stack.client("sales") as c:
        for form, column in ((sales_form, "number"), (invoices_form, "number")):
            listed = c.post("/tools/read-form-data", json={"form_id": form, "filters": {}, "page_size": 100})
            assert listed.status_code == 200, listed.text
            said.append(listed.text)
            assert found["number"] not in values(listed.json()["data"], column)
            by_number = c.post("/tools/read-form-data", json={"form_id": form, "filters": {"number": found["number"]}})
            assert by_number.status_code == 200 and by_number.json()["data"]["total"] == 0, by_number.text
            said.append(by_number.text.replace(found["number"], "<asked>"))  # its filter, echoed
        assert c.post("/tools/read-form-data", json={"form_id": sales_form, "filters": {}}).json()["data"][
            "total"] == ours  # fmt: skip
        for select in ({"kind": "count"}, {"kind": "aggregate", "agg": "sum", "measure": "total_amount"},
                       {"kind": "group", "group": "party_name", "measure": "total_amount"}):  # fmt: skip
            summed = c.post("/tools/summarize-form-data", json={"form_id": sales_form, "select": select})
            assert summed.status_code == 200, summed.text
            said.append(summed.text)
        for form, ident, number in ((sales_form, found["sale"], found["number"]),
                                    (invoices_form, found["invoice"], found["invoice_number"])):  # fmt: skip
            for wanted in (str(ident), number):
                looked = c.post("/tools/lookup-record", json={"form_id": form, "record_id": wanted})
                assert looked.status_code != 200 or REFUSED.search(looked.text), looked.text
                said.append(looked.text.replace(wanted, "<asked>"))  # the id or number asked for, echoed
    text = "\n".join(said)
    assert not [s for s in secrets(found) if s in text], text[:2000]
    count = json.loads(said[4])["data"]
    assert ours in (count["rows"][0] if isinstance(count["rows"][0], list) else list(count["rows"][0].values()))


def test_a_proposal_on_the_other_companys_sale_is_refused_and_nothing_of_it_leaks_or_executes(
    stack: Stack,
) -> None:
    found = theirs(stack)
    before = stack.one("select state, description, write_date from sale_sale where id = ?", found["sale"])
    form = form_of(stack, "sale.sale")
    with stack.client("sales") as c:
        for op, record, payload in (
            ("update", str(found["sale"]), {"description": "改掉它"}),
            ("examine", str(found["sale"]), None),
            ("delete", str(found["sale"]), None),
            ("update", found["number"], {"description": "改掉它"}),
        ):
            args = {"form_id": form, "op": op, "record_id": record, **({"payload": payload} if payload else {})}
            session = stack.turn(c, args)
            assert session["status"] != "WAITING_CONFIRMATION" and session.get("pendingInteraction") is None, session
            events = c.get(f"/api/agent/sessions/{session['sessionId']}/runtime").json()["events"]
            said = json.dumps([session, events], ensure_ascii=False).replace(found["number"], "")  # its own words
            assert REFUSED.search(said), said[-1500:]
            assert not [s for s in secrets(found) if s in said], said[-2000:]
        assert c.get("/api/ops").json().get("items") == []  # nothing proposed, so nothing to confirm
    assert stack.one("select state, description, write_date from sale_sale where id = ?", found["sale"]) == before


def test_a_model_that_asks_for_the_other_companys_sale_gets_nothing_of_it(stack: Stack) -> None:
    """The model itself is the attacker: it calls the read tools on the other company's sale."""
    found = theirs(stack)
    form = form_of(stack, "sale.sale")
    calls = [
        ("call_l", "lookup_record", json.dumps({"form_id": form, "record_id": str(found["sale"])})),
        ("call_r", "read_form_data", json.dumps({"form_id": form, "filters": {"number": found["number"]}})),
    ]
    stack.chat.push(completion(tool_calls=calls), completion("查不到。"))
    with stack.client("sales") as c:
        r = c.post("/api/agent/sessions", json={"message": f"销售订单{found['number']}的详情"})
        assert r.status_code == 200, r.text
        session = r.json()
        events = c.get(f"/api/agent/sessions/{session['sessionId']}/runtime").json()["events"]
    said = json.dumps([session, events], ensure_ascii=False).replace(found["number"], "")  # the question's own words
    assert "erp.no_record" in said and re.search(r"total\W{1,4}0\b", said), said[-2000:]  # both ran: nothing found
    assert not [s for s in secrets(found) if s and s in said], said[-2000:]


def test_the_other_companys_users_are_not_ours(stack: Stack) -> None:
    found = theirs(stack)
    rows = stack.one(
        'select count(*) from "res_user-company_company" uc join res_user u on u.id = uc."user" '
        "where uc.company = ? and u.login in ('sales', 'stock', 'accountant', 'manager')",
        found["company"],
    )
    assert rows[0] == 0
