"""The ERP pack on the PostgreSQL and MariaDB servers: tether's store and the demo ERP on a fresh
server database, the ERP reached over HTTP, query_data through the read-only executor there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import fresh_database
from tests.packs.erp.conftest import ErpServer, answer_of, facts


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind", [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mariadb", marks=pytest.mark.mariadb)]
)
def test_erp_pack_on_a_server_database(kind: str, tmp_path: Path) -> None:
    for url in fresh_database(kind, tmp_path):
        server = ErpServer(tmp_path, TETHER_DATABASE_URL=url, TETHER_ERP_DATABASE_URL=url).start(timeout=180)
        try:
            with server.login("fin01") as c:
                s = server.ask(c, f"{facts.OVERDUE_CUSTOMER_1[1]}的应收账款有多少超期了？")
                assert s["status"] == "SUCCEEDED", s["lastError"]
                assert f"共 {facts.OVERDUE_INVOICES_EACH} 张发票" in answer_of(s)
            own_args = {"question": "z", "sql": "SELECT name FROM viw_customer"}
            with server.login("admin") as c:
                s = server.ask(c, "今年销售订单按客户汇总")
                assert s["status"] == "SUCCEEDED" and "| 客户名称 |" in answer_of(s), answer_of(s)
                union = server.tool(
                    c,
                    "query_data",
                    {"question": "x", "sql": "SELECT name FROM viw_customer UNION SELECT name FROM viw_material"},
                )
                assert union["kind"] == "value" and union["data"]["rowCount"] > 0
                assert facts.BRAND_2_CUSTOMER[1] not in json.dumps(union["data"], ensure_ascii=False)
                union_args = {
                    "question": "x",
                    "sql": "SELECT name FROM viw_customer UNION SELECT name FROM viw_material",
                }
                again = [server.tool(c, "query_data", union_args) for _ in range(2)]  # reused verdict, loop's path
                assert all(a["data"]["rows"] == union["data"]["rows"] for a in again), again
                # tether's own tables are not in the sandbox's list, though they share the database here
                sessions = server.tool(c, "query_data", {"question": "y", "sql": "SELECT * FROM agent_session"})
                assert sessions["kind"] == "error"
                everyone = [server.tool(c, "query_data", own_args)["data"]["rows"] for _ in range(2)]
                assert everyone[0] == everyone[1] and [facts.SALES02_CUSTOMER[1]] in everyone[0]
            with server.login("sales01") as c:  # the SQL admin ran, under an own-rows scope: never admin's rows
                answers = [server.tool(c, "query_data", own_args) for _ in range(2)]
                assert all(a["kind"] == "value" for a in answers), answers
                mine = [a["data"]["rows"] for a in answers]
                assert mine[0] == mine[1] and 0 < len(mine[0]) < len(everyone[0])
                assert [facts.SALES02_CUSTOMER[1]] not in mine[0]
            server.assert_no_server_errors()
        finally:
            server.stop()
