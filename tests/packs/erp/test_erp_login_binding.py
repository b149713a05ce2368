"""Attack 4 of issue 36: the mounted ERP's own logins (``POST /erp/login``, ``POST /erp/ui/login``)
on tether's public port go through the same login limits as ``/api/auth/login`` — per username
and per address, shared by the replicas — so a locked-out user is locked out everywhere, and
guesses at the ERP count there too."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import fresh_database
from tests.packs.erp.conftest import ErpServer
from tests.packs.erp.test_erp_login_limits import LIMITS, login, two_replicas
from tether.erp_demo import facts


def erp_login(server: ErpServer, user: str, password: str, address: str = "127.0.0.1") -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, timeout=30) as c:
        return c.post(f"{server.url}/erp/login", json={"username": user, "password": password})


def ui_login(server: ErpServer, user: str, password: str, address: str = "127.0.0.1") -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, timeout=30) as c:
        return c.post(f"{server.url}/erp/ui/login", data={"username": user, "password": password})


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    server = ErpServer(tmp_path_factory.mktemp("erp-login"), **{**LIMITS, "TETHER_LOGIN_LOCKOUT_S": "30"})
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def test_forty_guesses_at_the_erp_login_are_locked_out_and_so_is_every_other_login(guarded: ErpServer) -> None:
    codes = [erp_login(guarded, "sales05", f"guess-{i}", "127.0.0.21").status_code for i in range(40)]
    assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}, codes
    for address in ("127.0.0.21", "127.0.0.22"):  # the username is locked, from any address, on every login
        right = erp_login(guarded, "sales05", facts.PASSWORD, address)
        assert right.status_code == 429 and "token" not in right.json(), right.text
        assert 1 <= int(right.headers["Retry-After"]) <= 30
        assert login(guarded, "sales05", facts.PASSWORD, address).status_code == 429
        page = ui_login(guarded, "sales05", facts.PASSWORD, address)
        assert page.status_code == 429 and "erp_token" not in page.headers.get("set-cookie", ""), page.text
    assert erp_login(guarded, "fin01", facts.PASSWORD, "127.0.0.23").status_code == 200  # others get in
    guarded.assert_no_server_errors()


def test_a_user_locked_out_of_api_auth_login_gets_no_token_at_the_erp_login(guarded: ErpServer) -> None:
    for i in range(5):
        assert login(guarded, "sales06", f"wrong-{i}", "127.0.0.24").status_code == 401
    assert login(guarded, "sales06", facts.PASSWORD, "127.0.0.24").status_code == 429
    r = erp_login(guarded, "sales06", facts.PASSWORD, "127.0.0.25")
    assert r.status_code == 429 and "token" not in r.json(), r.text
    assert ui_login(guarded, "sales06", facts.PASSWORD, "127.0.0.25").status_code == 429
    # tether's own login of a user who is not locked out still reaches the ERP once, counted once
    assert login(guarded, "wh01", facts.PASSWORD, "127.0.0.26").status_code == 200


@pytest.mark.postgres
def test_the_erp_login_throttle_holds_across_two_replicas_on_postgresql(tmp_path: Path) -> None:
    for url in fresh_database("postgres", tmp_path):
        shared = {**LIMITS, "TETHER_LOGIN_LOCKOUT_S": "30", "TETHER_DATABASE_URL": url}
        shared["TETHER_LIMITS_NAMESPACE"] = f"test-{uuid.uuid4().hex}"
        with two_replicas(tmp_path, shared) as (a, b):
            for server in (a, b, a, b, a):  # five failures at the ERP logins, spread over both replicas
                assert erp_login(server, "sales03", "wrong", "127.0.0.27").status_code == 401
            for server in (a, b):
                assert erp_login(server, "sales03", facts.PASSWORD, "127.0.0.28").status_code == 429
                assert ui_login(server, "sales03", facts.PASSWORD, "127.0.0.28").status_code == 429
                assert login(server, "sales03", facts.PASSWORD, "127.0.0.28").status_code == 429
            assert erp_login(b, "fin01", facts.PASSWORD, "127.0.0.29").status_code == 200
            a.assert_no_server_errors()
            b.assert_no_server_errors()
