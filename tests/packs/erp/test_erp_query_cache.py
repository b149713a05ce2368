"""``query_data``'s reused verdicts and its event-loop path from the attacker's side, on a live
server: users of one brand with different row scopes, an admin of the brand, another brand's admin
and a user without the form send the very same question and SQL, interleaved and repeated (so the
second and later calls of each take the cached verdict and the loop's path): each always gets
their own rows, never a neighbour's."""

from __future__ import annotations

from typing import Any

from tests.packs.erp.conftest import ErpServer

QUESTION = "各业务员的客户数"
SQL = "SELECT salesman_id, COUNT(*) AS n FROM viw_customer GROUP BY salesman_id ORDER BY salesman_id"


def ask(server: ErpServer, client: Any) -> dict[str, Any]:
    answer = server.tool(client, "query_data", {"question": QUESTION, "sql": SQL})
    return answer


def test_the_same_sql_from_every_kind_of_caller_answers_each_with_their_own_rows(erp_server: ErpServer) -> None:
    users = ("sales01", "sales02", "admin", "b2admin", "wh01")
    clients = {u: erp_server.login(u) for u in users}
    try:
        own_totals = {
            u: erp_server.tool(clients[u], "read_form_data", {"form_id": "1001", "page_size": 1})["data"]["total"]
            for u in ("sales01", "sales02")
        }
        answers: dict[str, list[dict[str, Any]]] = {u: [] for u in users}
        for round_ in range(3):  # interleaved, in a different order each round
            order = users[round_:] + users[:round_]
            for user in order:
                answers[user].append(ask(erp_server, clients[user]))
    finally:
        for c in clients.values():
            c.close()

    for user in ("sales01", "sales02", "admin", "b2admin"):
        first = answers[user][0]
        assert first["kind"] == "value", (user, first)
        assert all(a["data"]["rows"] == first["data"]["rows"] for a in answers[user]), user
        assert all(a["data"]["sql"] == first["data"]["sql"] for a in answers[user]), user
    rows = {u: [tuple(r) for r in answers[u][0]["data"]["rows"]] for u in ("sales01", "sales02", "admin", "b2admin")}
    assert rows["sales01"] == [("sales01", own_totals["sales01"])]
    assert rows["sales02"] == [("sales02", own_totals["sales02"])]
    assert {"sales01", "sales02"} <= {r[0] for r in rows["admin"]} and len(rows["admin"]) > 2
    assert not {"sales01", "sales02"} & {r[0] for r in rows["b2admin"]}  # brand 2's own salespeople
    sql_of = {u: answers[u][0]["data"]["sql"] for u in ("sales01", "sales02", "admin", "b2admin")}
    assert "'sales01'" in sql_of["sales01"] and "'sales02'" not in sql_of["sales01"]
    assert "'sales02'" in sql_of["sales02"] and "salesman_id =" not in sql_of["admin"]
    assert "brands_id = 2" in sql_of["b2admin"] and "brands_id = 1" in sql_of["admin"]
    for refused in answers["wh01"]:  # no customer form: refused every time, whoever ran it before
        assert refused["kind"] == "error" and "viw_customer" in refused["data"]["error"], refused
    erp_server.assert_no_server_errors()
