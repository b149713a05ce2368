"""Sessions belong to the stable ERP identity, never to the token: a revoked token pauses the
session with LOGIN_EXPIRED (nothing retried with another account), a new login sees the same
conversations and continues them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.packs.erp.conftest import ErpServer, answer_of, facts, runtime_events


@pytest.fixture
def cached_server(tmp_path: Path) -> Iterator[ErpServer]:
    # a long /me cache, so a token revoked at the ERP still passes tether's door and hits a tool
    server = ErpServer(tmp_path, TETHER_ERP_ME_CACHE_S="120").start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def test_revoked_token_pauses_with_login_expired_and_a_new_login_continues(cached_server: ErpServer) -> None:
    question = f"{facts.OVERDUE_CUSTOMER_2[1]}的应收账款有多少超期了？"
    token = cached_server.token("fin01")
    with cached_server.client(token) as c:
        s = cached_server.ask(c, question)
        assert s["status"] == "SUCCEEDED"
        with cached_server.erp_direct(token) as erp:
            assert erp.post("/logout").status_code == 200  # revoked at the ERP, behind tether's back
        r = c.post(f"/api/agent/sessions/{s['sessionId']}/messages", json={"message": "列出超期90天以上的应收"})
        assert r.status_code == 200, r.text
        paused = r.json()
        assert paused["status"] == "WAITING_USER_INPUT" and paused["pendingInteraction"]["kind"] == "login"
        types = [e["type"] for e in runtime_events(c, s["sessionId"])]
        assert "LOGIN_EXPIRED" in types
        assert "90天以上" not in answer_of(paused)  # no data came back with the dead token
    with cached_server.login("fin01") as fresh:
        listed = fresh.get("/api/agent/sessions").json()["items"]
        assert s["sessionId"] in [item["sessionId"] for item in listed]
        r = fresh.post(f"/api/agent/sessions/{s['sessionId']}/messages", json={"message": "列出超期90天以上的应收"})
        assert r.status_code == 200, r.text
        resumed = r.json()
        assert resumed["status"] == "SUCCEEDED" and "| 发票号 |" in answer_of(resumed)
    cached_server.assert_no_server_errors()


def test_wrong_password_and_unknown_tokens_are_401(cached_server: ErpServer) -> None:
    import httpx

    r = httpx.post(f"{cached_server.url}/api/auth/login", json={"username": "fin01", "password": "wrong"})
    assert r.status_code == 401 and "password" in r.json()["error"]
    r = httpx.post(f"{cached_server.url}/api/auth/login", json={"username": "", "password": "x"})
    assert r.status_code == 422
    with cached_server.client("not-a-token") as c:
        assert c.get("/api/agent/sessions").status_code == 401
    with cached_server.login("sales01") as c:
        me = c.get("/api/auth/me").json()
        assert me["provider"] == "erp" and set(me["grants"]) == set(facts.SALES_FORMS)
        assert "token" not in str(me).lower() or all(t not in str(me) for t in cached_server.tokens)
