"""An ERP that is down is an outage, not a login problem: with ``tether serve`` pointed at a
separate ``tether erp serve`` that is stopped (SIGTERM), hung (SIGSTOP) and restarted, login and
every request whose identity the ERP must confirm answer 503 with ``Retry-After`` — never 401 —
and fail fast once the breaker is open; the token, the conversations and the sessions are the
same when the ERP is back; a token revoked at the ERP is still refused within seconds."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.packs.erp.conftest import AGENT_KEY, ErpServer, answer_of, facts, runtime_events
from tests.servers import ErpProcess, wait_until

TIMEOUT_S = 2.0  # TETHER_ERP_HTTP_TIMEOUT_S: what a call to a hung ERP waits
RESET_S = 2.0  # TETHER_ERP_BREAKER_RESET_S
ME_CACHE_S = 4.0
FAST_S = 0.8  # a call the open breaker refuses answers well within this (busy machine)


@pytest.fixture(scope="module")
def erp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpProcess]:
    process = ErpProcess(tmp_path_factory.mktemp("erp-alone"), AGENT_KEY).start(timeout=120)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def tether(erp: ErpProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    server = ErpServer(
        tmp_path_factory.mktemp("tether-erp-apart"),
        **erp.tether_env(),
        TETHER_PACKS="tether.packs.erp.pack",
        TETHER_ERP_ME_CACHE_S=str(ME_CACHE_S),
        TETHER_ERP_HTTP_TIMEOUT_S=str(TIMEOUT_S),
        TETHER_ERP_BREAKER_FAILURES="2",
        TETHER_ERP_BREAKER_RESET_S=str(RESET_S),
    ).start(timeout=120)
    try:
        yield server
    finally:
        server.stop()
    server.assert_no_server_errors()


@pytest.fixture
def up(erp: ErpProcess, tether: ErpServer) -> Iterator[ErpServer]:
    """Each test starts and ends with the ERP running and tether's breaker closed again."""
    yield tether
    if erp.proc is not None and erp.proc.poll() is None:
        erp.resume()
    else:
        erp.start(timeout=120)
    wait_until(lambda: circuit(tether) == "closed" or _login_ok(tether), timeout=30, what="the breaker to close")


def circuit(server: ErpServer) -> str:
    """The breaker's state as /metrics shows it."""
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    found = re.findall(r'^tether_erp_circuit_state\{state="(\w+)"\} 1\.0$', text, re.M)
    assert len(found) == 1, text
    return found[0]


def _login_ok(server: ErpServer) -> bool:
    r = httpx.post(f"{server.url}/api/auth/login", json={"username": "fin01", "password": facts.PASSWORD}, timeout=30)
    return r.status_code == 200


def assert_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, (r.status_code, r.text)
    assert int(r.headers["retry-after"]) >= 1
    body = r.json()
    assert body["code"] == "UPSTREAM_UNAVAILABLE" and body["upstream"] == "erp"
    assert "ERP 暂时无法访问" in body["error"] and "cannot be reached" in body["error"]
    assert "www-authenticate" not in r.headers  # nothing tells the client to log in again


def timed(fn: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    r = fn()
    return r, time.monotonic() - started


def test_stopped_erp_is_503_not_401_and_everything_is_there_when_it_is_back(up: ErpServer, erp: ErpProcess) -> None:
    token = up.token("fin01")
    with up.client(token) as c:
        s = up.ask(c, f"{facts.OVERDUE_CUSTOMER_2[1]}的应收账款有多少超期了？")
        assert s["status"] == "SUCCEEDED"
        erp.terminate()
        time.sleep(ME_CACHE_S)  # the identity must be asked of the ERP again
        login = httpx.post(f"{up.url}/api/auth/login", json={"username": "fin01", "password": facts.PASSWORD})
        assert_unavailable(login)
        assert_unavailable(c.get("/api/agent/sessions"))
        assert circuit(up) == "open"
        r, took = timed(lambda: c.get(f"/api/agent/sessions/{s['sessionId']}"))
        assert_unavailable(r)
        assert took < FAST_S, f"the open breaker should answer at once, took {took:.2f}s"
        assert httpx.get(f"{up.url}/api/health").status_code == 200  # tether itself is up

        erp.start(timeout=120)
        back = wait_until(lambda: r if (r := c.get("/api/agent/sessions")).status_code == 200 else None, timeout=30)
        assert s["sessionId"] in [item["sessionId"] for item in back.json()["items"]]  # same token, same list
        again = c.get(f"/api/agent/sessions/{s['sessionId']}").json()
        assert again["status"] == "SUCCEEDED" and again["transcript"] == s["transcript"]
        assert circuit(up) == "closed"
        assert "LOGIN_EXPIRED" not in [e["type"] for e in runtime_events(c, s["sessionId"])]


def test_hung_erp_fails_fast_once_the_breaker_opens_and_recovers_on_sigcont(up: ErpServer, erp: ErpProcess) -> None:
    token = up.token("fin01")
    with up.client(token) as c:
        erp.hang()
        time.sleep(ME_CACHE_S)
        first, took = timed(lambda: c.get("/api/agent/sessions"))
        assert_unavailable(first)
        assert TIMEOUT_S * 0.8 < took < TIMEOUT_S + 3  # the breaker was closed: it waited the call's timeout
        assert_unavailable(c.get("/api/auth/me"))  # the second consecutive failure opens it
        for _ in range(3):
            r, took = timed(lambda: c.get("/api/agent/sessions"))
            assert_unavailable(r)
            assert took < FAST_S, f"a hung ERP must not hold each request for the timeout; took {took:.2f}s"
        assert circuit(up) == "open"
        assert "tether_erp_circuit_rejected_total" in httpx.get(f"{up.url}/metrics").text

        erp.resume()
        wait_until(lambda: c.get("/api/agent/sessions").status_code == 200, timeout=RESET_S + 20, what="recovery")
        assert circuit(up) == "closed"
        assert c.get("/api/auth/me").json()["provider"] == "erp"  # the same token still works


def test_a_tool_that_finds_the_erp_down_mid_turn_is_a_retryable_error_in_the_users_language(
    up: ErpServer, erp: ErpProcess
) -> None:
    with up.login("wh01") as c:
        assert c.get("/api/auth/me").status_code == 200  # the identity is now cached for ME_CACHE_S
        erp.terminate()
        s = up.ask(c, "查一下深沟球轴承的库存")
    answer = answer_of(s)
    assert s["status"] == "SUCCEEDED" and "ERP 暂时无法访问" in answer, answer
    failed = [step for step in s["executedSteps"] if step["status"] == "FAILED"]
    assert failed and failed[0]["result"]["retryable"] is True
    assert s.get("pendingInteraction") is None  # not a login prompt


def test_a_revoked_token_is_refused_within_seconds_and_no_outage_extends_it(up: ErpServer, erp: ErpProcess) -> None:
    token = up.token("fin01")
    with up.client(token) as c:
        assert c.get("/api/auth/me").status_code == 200
        with httpx.Client(base_url=f"{erp.url}/erp", headers={"Authorization": token}) as direct:
            assert direct.post("/logout").status_code == 200  # revoked at the ERP, behind tether's back
        revoked_at = time.monotonic()
        wait_until(lambda: c.get("/api/auth/me").status_code == 401, timeout=ME_CACHE_S + 5, what="the 401")
        assert time.monotonic() - revoked_at < ME_CACHE_S + 5

    other = up.token("fin01")
    with up.client(other) as c:
        assert c.get("/api/auth/me").status_code == 200
        with httpx.Client(base_url=f"{erp.url}/erp", headers={"Authorization": other}) as direct:
            assert direct.post("/logout").status_code == 200
        erp.terminate()
        time.sleep(ME_CACHE_S)
        assert_unavailable(c.get("/api/auth/me"))  # not served from the lapsed cache entry as if valid
        erp.start(timeout=120)
        wait_until(lambda: c.get("/api/auth/me").status_code == 401, timeout=30, what="the revoked token's 401")


def test_breaker_state_is_in_metrics_without_any_user_or_token(up: ErpServer) -> None:
    text = httpx.get(f"{up.url}/metrics").text
    assert circuit(up) == "closed"
    for name in ("tether_erp_circuit_failures", "tether_erp_circuit_opened_total"):
        assert name in text
    assert not any(t in text for t in up.tokens)
