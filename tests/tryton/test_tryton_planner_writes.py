"""The offline planner writes on a real Tryton: a clerk's new quotation in their own words becomes a
proposal on Tryton's sales form (its party and products read from Tryton's metadata, not the demo
ERP's form ids), and once the person confirms it Tryton's own database holds the sale — the
party, the product, the quantity and the price said, created in the salesperson's session."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import ServerProcess
from tests.tryton.conftest import PreparedTryton
from tests.tryton.test_tryton_writes import PASSWORDS, confirm
from tether.tryton.server import RunningTrytond, copy_database, start_trytond

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def planner_on_tryton(
    tryton_prepared: PreparedTryton, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RunningTrytond, ServerProcess]]:
    where = tmp_path_factory.mktemp("tryton-planner")
    trytond = start_trytond(
        copy_database(tryton_prepared.data_dir, where / "tryton", settings=tryton_prepared.settings)
    )
    env = {"TETHER_PACKS": "tether.erp_demo.pack,tether.packs.erp.pack", "TETHER_ERP_KIND": "tryton",
           "TETHER_ERP_BASE_URL": trytond.url, "TETHER_MODEL": "planner", "TETHER_SKILL_ROUTING": "rules"}  # fmt: skip
    server = ServerProcess(where, env, stop_timeout=15.0)
    try:
        server.start(timeout=180)
        yield trytond, server
    finally:
        server.stop()
        trytond.stop()


def _one(trytond: RunningTrytond, sql: str, *args: Any) -> Any:
    assert trytond.settings.sqlite_file is not None
    path = Path(trytond.settings.sqlite_file)
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute(sql, args).fetchall()


def test_the_planners_new_quotation_once_confirmed_is_the_sale_in_trytons_database(
    planner_on_tryton: tuple[RunningTrytond, ServerProcess],
) -> None:
    trytond, server = planner_on_tryton
    before = _one(trytond, "select count(*) from sale_sale")[0][0]
    r = httpx.post(f"{server.url}/api/auth/login", json={"username": "sales", "password": PASSWORDS["sales"]})
    assert r.status_code == 200, r.text
    with server.client(str(r.json()["token"]), timeout=60.0) as c:
        session = c.post("/api/agent/sessions", json={"message": "给华东机电开张报价单，P003 5个，单价100"}).json()
        assert session["status"] == "WAITING_CONFIRMATION", session["transcript"][-3:]
        proposal = session["pendingInteraction"]["payload"]
        assert proposal["op"] == "create" and proposal["formName"] == "销售订单"
        assert _one(trytond, "select count(*) from sale_sale")[0][0] == before  # proposed: nothing in Tryton yet
        done = confirm(c, proposal["opId"])
        assert done["state"] == "done", done
    sale_id = int(done["billId"])
    [(party, login, state)] = _one(
        trytond,
        "select p.name, u.login, s.state from sale_sale s join party_party p on p.id = s.party "
        "join res_user u on u.id = s.create_uid where s.id = ?",
        sale_id,
    )
    assert (party, login, state) == ("华东机电设备有限公司", "sales", "draft")
    lines = _one(
        trytond,
        "select p.code, l.quantity, cast(l.unit_price as real) from sale_line l "
        "join product_product p on p.id = l.product where l.sale = ?",
        sale_id,
    )
    assert lines == [("P003", 5.0, 100.0)]
    assert _one(trytond, "select count(*) from sale_sale")[0][0] == before + 1
