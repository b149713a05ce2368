"""Password guessing against ``POST /api/auth/login``, from the attacker's side: after the limit
the answer is 429 with Retry-After and the ERP receives nothing more (its requests are counted in
the server's access log); the lock-out grows; a different user from another address is not
blocked; two replicas sharing Redis share the count, and so do two replicas on one PostgreSQL
database without Redis."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import fresh_database
from tests.packs.erp.conftest import ErpServer
from tests.servers import free_port
from tether.erp_demo import facts

LIMITS = {
    "TETHER_LOGIN_MAX_FAILURES": "5",
    "TETHER_LOGIN_MAX_ADDRESS_FAILURES": "12",
    "TETHER_LOGIN_LOCKOUT_S": "1",  # the first lock-out: 1 s, then 2 s, ...
}
REDIS_URL = "redis://127.0.0.1:6379/0"


def login(server: ErpServer, user: str, password: str, address: str = "127.0.0.1") -> httpx.Response:
    """A login from ``address`` (any 127.0.0.0/8 address reaches the server on Linux)."""
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, timeout=30) as c:
        return c.post(f"{server.url}/api/auth/login", json={"username": user, "password": password})


def erp_logins(server: ErpServer) -> int:
    """Login requests the mounted demo ERP received."""
    return server.log_text().count('"POST /erp/login HTTP/1.1"')


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    server = ErpServer(tmp_path_factory.mktemp("login-limits"), **LIMITS).start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def test_a_guessing_loop_is_locked_out_before_the_erp_and_the_lock_out_grows(guarded: ErpServer) -> None:
    before = erp_logins(guarded)
    for i in range(5):
        r = login(guarded, "sales02", f"guess-{i}")
        assert r.status_code == 401, r.text
    assert erp_logins(guarded) == before + 5
    for i in range(5):  # locked: refused here, nothing reaches the ERP, not even the right password
        r = login(guarded, "sales02", facts.PASSWORD if i == 4 else f"guess-more-{i}")
        assert r.status_code == 429, r.text
        assert r.headers["Retry-After"] == "1"
        error = r.json()["error"]
        assert "too many failed logins for this username" in error and "try again at" in error, error
        assert "lock-out 1 today" in error
        body = r.json()  # the same as a code and params, for the person's language
        assert body["code"] == "limit.login_user" and body["retryAfter"] == 1, body
        assert set(body["params"]) == {"resetAt", "seconds"} and body["params"]["seconds"] == 1, body
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body["params"]["resetAt"]), body
    assert erp_logins(guarded) == before + 5

    # another user from another address is not held up by the attacker's failures
    ok = login(guarded, "fin01", facts.PASSWORD, address="127.0.0.2")
    assert ok.status_code == 200, ok.text
    assert erp_logins(guarded) == before + 6  # that login went through

    time.sleep(1.2)  # the first lock-out is over; five more failures lock it out again, for twice as long
    for i in range(5):
        assert login(guarded, "sales02", f"again-{i}").status_code == 401
    r = login(guarded, "sales02", "again-5")
    assert r.status_code == 429 and r.headers["Retry-After"] == "2", r.text
    assert "lock-out 2 today" in r.json()["error"] and "locked out for 2 s" in r.json()["error"]
    assert erp_logins(guarded) == before + 11
    time.sleep(2.2)
    right = login(guarded, "sales02", facts.PASSWORD, address="127.0.0.5")
    assert right.status_code == 200, right.text  # the lock-out ended: the user gets in

    metrics = httpx.get(f"{guarded.url}/metrics").text
    assert 'tether_limit_refusals_total{kind="login_user"} 6.0' in metrics
    guarded.assert_no_server_errors()


def test_an_address_spraying_usernames_is_locked_out_and_others_are_not(guarded: ErpServer) -> None:
    spray = "127.0.0.3"
    for i in range(12):  # one failure each for twelve usernames: no username limit is reached
        r = login(guarded, f"nobody{i:02d}", "x", address=spray)
        assert r.status_code == 401, r.text
    before = erp_logins(guarded)
    r = login(guarded, "sales01", facts.PASSWORD, address=spray)
    assert r.status_code == 429, r.text
    assert "too many failed logins from this address" in r.json()["error"]
    assert r.json()["code"] == "limit.login_address", r.text
    assert erp_logins(guarded) == before
    ok = login(guarded, "sales01", facts.PASSWORD, address="127.0.0.4")
    assert ok.status_code == 200, ok.text


def test_fifty_guesses_at_once_get_no_more_than_the_limit_to_the_erp(guarded: ErpServer) -> None:
    """Attempts still being checked count: a burst cannot slip past the limit before the first
    failures are recorded."""
    before = erp_logins(guarded)
    with ThreadPoolExecutor(max_workers=25) as pool:
        answers = list(pool.map(lambda i: login(guarded, "sales04", f"burst-{i}", "127.0.0.6"), range(50)))
    codes = [r.status_code for r in answers]
    refused = {r.json()["code"] for r in answers if r.status_code == 429}  # locked, or too many checked at once
    assert refused and refused <= {"limit.login_user", "limit.login_busy_user"}, refused
    assert set(codes) <= {401, 429}, codes
    assert 1 <= codes.count(401) <= 5, codes
    assert erp_logins(guarded) - before == codes.count(401)
    r = login(guarded, "sales04", facts.PASSWORD, address="127.0.0.7")
    if codes.count(401) == 5:  # the burst used up the failures: locked out
        assert r.status_code == 429, r.text
    guarded.assert_no_server_errors()


@contextmanager
def two_replicas(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[ErpServer, ErpServer]]:
    """Two ``tether serve`` processes with one configuration (a shared Redis or database)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = ErpServer(tmp_path / "a", **env).start(timeout=120)
    try:
        b = ErpServer(tmp_path / "b", **env).start(timeout=120)
        try:
            yield a, b
        finally:
            b.stop()
    finally:
        a.stop()


def test_two_replicas_sharing_redis_share_the_count(tmp_path: Path) -> None:
    shared = {**LIMITS, "TETHER_LOGIN_LOCKOUT_S": "30", "TETHER_REDIS_URL": REDIS_URL}
    shared["TETHER_LIMITS_NAMESPACE"] = f"test-{uuid.uuid4().hex}"  # this test's own keys
    with two_replicas(tmp_path, shared) as (a, b):
        for server in (a, b, a, b, a):  # five failures, spread over both replicas
            assert login(server, "sales03", "wrong").status_code == 401
        for server in (a, b):
            r = login(server, "sales03", facts.PASSWORD)
            assert r.status_code == 429, r.text
            assert 1 <= int(r.headers["Retry-After"]) <= 30
        assert erp_logins(a) + erp_logins(b) == 5


def burst(servers: list[ErpServer], user: str, address: str) -> list[int]:
    """Fifty wrong guesses sent at once, spread over ``servers``: their status codes."""
    with ThreadPoolExecutor(max_workers=24) as pool:
        return list(
            pool.map(lambda i: login(servers[i % len(servers)], user, f"burst-{i}", address).status_code, range(50))
        )


@pytest.mark.postgres
def test_two_replicas_on_one_postgresql_database_without_redis_share_the_count(tmp_path: Path) -> None:
    """No Redis: the counters live in tether's database, so guesses spread over both replicas,
    one by one or fifty at once, reach the ERP no more often than the limit allows in total."""
    for url in fresh_database("postgres", tmp_path):
        shared = {**LIMITS, "TETHER_LOGIN_LOCKOUT_S": "30", "TETHER_DATABASE_URL": url}
        with two_replicas(tmp_path, shared) as (a, b):
            for server in (a, b, a, b, a):  # five failures, spread over both replicas
                assert login(server, "sales03", "wrong").status_code == 401
            for server in (a, b):  # locked out on both, even with the right password
                r = login(server, "sales03", facts.PASSWORD, address="127.0.0.8")
                assert r.status_code == 429, r.text
                assert 1 <= int(r.headers["Retry-After"]) <= 30
                assert "too many failed logins for this username" in r.json()["error"]
            assert erp_logins(a) + erp_logins(b) == 5

            codes = burst([a, b], "sales04", "127.0.0.9")  # fifty guesses at once, over both replicas
            assert set(codes) <= {401, 429}, codes
            assert 1 <= codes.count(401) <= 5, codes
            assert erp_logins(a) + erp_logins(b) == 5 + codes.count(401)
            ok = login(b, "fin01", facts.PASSWORD, address="127.0.0.10")  # another user gets in
            assert ok.status_code == 200, ok.text
            a.assert_no_server_errors()
            b.assert_no_server_errors()


def test_an_unreachable_erp_locks_no_one_out(tmp_path: Path) -> None:
    """Only wrong credentials count: logins that fail because the ERP does not answer are no
    guesses, and the user gets in once it is back."""
    down = f"http://127.0.0.1:{free_port()}/erp"  # nothing listens there
    server = ErpServer(
        tmp_path, TETHER_PACKS="tether.packs.erp.pack", TETHER_ERP_EMBEDDED="false", TETHER_ERP_BASE_URL=down, **LIMITS
    ).start(timeout=120)
    try:
        for _ in range(8):
            r = login(server, "sales01", facts.PASSWORD)
            assert r.status_code in (401, 503), r.text  # the ERP's failure, never a lock-out
            assert "too many failed logins" not in r.text
        assert "tether_limit_refusals_total{" not in httpx.get(f"{server.url}/metrics").text
        server.assert_no_server_errors()
    finally:
        server.stop()
