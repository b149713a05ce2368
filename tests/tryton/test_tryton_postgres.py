"""Tryton on PostgreSQL (``TETHER_TRYTON_DATABASE_URL``): the demo prepared once per run in a
database of the run's own (``tryton_postgres``), a real ``trytond`` on it and ``tether serve``
against that. The properties the SQLite suites prove, once more on PostgreSQL: a role reads what
Tryton's rights give it, in its own session (the numbers are the ones Tryton hands that user),
and a governed write executes once — nothing before the confirm, the approved values after it,
and a second confirm writes nothing again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.models.chat_server import ChatServer
from tests.servers import ServerProcess
from tests.tryton.conftest import PG_SERVER
from tests.tryton.test_tryton_writes import QUOTE, Stack, confirm, direct
from tether.tryton.server import RunningTrytond

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(1800)]  # its first test prepares


class PgStack(Stack):
    def one(self, sql: str, *args: Any) -> Any:
        """Tryton's own database on PostgreSQL, read beside it (never written)."""
        with contextlib.closing(psycopg.connect(PG_SERVER, dbname=self.trytond.database)) as db:
            return db.execute(sql.replace("?", "%s"), args).fetchone()


@pytest.fixture(scope="module")
def stack(tryton_postgres: RunningTrytond, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgStack]:
    where: Path = tmp_path_factory.mktemp("tryton-postgres-tether")
    with ChatServer([]) as chat:
        server = ServerProcess(
            where,
            {
                "TETHER_PACKS": "tether.erp_demo.pack,tether.packs.erp.pack",
                "TETHER_ERP_KIND": "tryton",
                "TETHER_ERP_BASE_URL": tryton_postgres.url,
                "TETHER_ERP_TRYTON_DATABASE": tryton_postgres.database,
                "TETHER_ERP_ME_CACHE_S": "0",
                "TETHER_MODEL": "openai",
                "TETHER_MODEL_PROVIDER": "custom",
                "TETHER_MODEL_BASE_URL": chat.base_url,
                "TETHER_MODEL_NAME": "test-model",
                "TETHER_MODEL_API_KEY": "sk-test",
                "TETHER_MODEL_STREAM": "false",
                "TETHER_SKILL_ROUTING": "rules",
            },
            stop_timeout=15.0,
        )
        try:
            server.start(timeout=180)
            yield PgStack(tryton_postgres, server, chat)
        finally:
            server.stop()


def test_the_database_is_on_postgresql_and_holds_the_demo_company(stack: PgStack) -> None:
    assert stack.trytond.settings.database_url and stack.trytond.settings.sqlite_file is None
    assert stack.one("select current_database()")[0] == stack.trytond.database
    assert stack.one("select count(*) from sale_sale where company = 1")[0] >= 12  # and the other company's


def test_a_role_reads_what_tryton_gives_it_in_its_own_session(stack: PgStack) -> None:
    form = stack.sale_form()
    token = stack.token("sales")
    drafts = direct(stack, token, "model.sale.sale.search_count", [["state", "=", "draft"]])
    rows = direct(stack, token, "model.sale.sale.search_read", [], 0, None, None, ["total_amount"])
    total = sum(Decimal(r["total_amount"]["decimal"]) for r in rows)
    with stack.server.client(token) as c:
        assert form in c.get("/api/auth/me").json()["grants"]
        read = c.post("/tools/read-form-data", json={"form_id": form, "filters": {"state": "draft"}})
        assert read.status_code == 200, read.text
        assert read.json()["data"]["total"] == drafts >= 2
        select = {"kind": "aggregate", "agg": "sum", "measure": "total_amount"}
        summed = c.post("/tools/summarize-form-data", json={"form_id": form, "select": select})
        assert summed.status_code == 200, summed.text
        assert measure(summed.json()["data"], "total_amount") == pytest.approx(float(total)), summed.text[:600]
    with stack.client("stock") as c:  # the stock keeper's groups read no sales: not a form of theirs
        assert form not in c.get("/api/auth/me").json()["grants"]
        refused = c.post("/tools/read-form-data", json={"form_id": form, "filters": {}})
        assert refused.status_code != 200 or "no such form or no access" in refused.text, refused.text


def measure(result: dict[str, Any], column: str) -> float:
    """The one row's ``column`` of a summary (``columns`` + ``rows``, as query_data's)."""
    row = result["rows"][0]
    return float(row[column] if isinstance(row, dict) else row[result["columns"].index(column)])


def test_a_governed_write_executes_once_in_the_users_session(stack: PgStack) -> None:
    before = stack.one("select count(*) from sale_sale")[0]
    with stack.client("sales") as c:
        _session, proposal = stack.propose(c, {"form_id": stack.sale_form(), "op": "create", "payload": QUOTE})
        assert stack.one("select count(*) from sale_sale")[0] == before  # proposed: nothing in Tryton
        done = confirm(c, proposal["opId"])
        assert done["state"] == "done", done
        sale = int(done["billId"])
        again = c.post(f"/api/ops/{proposal['opId']}/confirm")
        assert again.status_code == 200 and str(again.json().get("billId")) == str(sale), again.text
    creator, comment = stack.one("select u.login, s.comment from sale_sale s join res_user u on u.id = s.create_uid "
                                 "where s.id = ?", sale)  # fmt: skip
    assert creator == "sales" and f"[tether-op:{proposal['opId']}]" in comment
    lines = stack.one("select count(*), sum(l.quantity), min(p.code) from sale_line l "
                      "join product_product p on p.id = l.product where l.sale = ?", sale)  # fmt: skip
    assert (lines[0], float(lines[1]), lines[2]) == (1, 40.0, "P001")
    assert stack.one("select count(*) from sale_sale")[0] == before + 1  # once, not twice
