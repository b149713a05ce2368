"""The ERP client's classification over real HTTP, against a small local server whose answers the
test switches: a gateway's 502/503/504 or no answer in time is an outage (counted by the breaker,
503 at the door), a 500 is not the caller's login either (503 at the door, not counted), a 401 is
a refused token and, like any answer, closes the breaker."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tether.errors import Unavailable
from tether.packs.erp.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker
from tether.packs.erp.client import ErpClient, ErpUnreachable
from tether.packs.erp.identity import ErpIdentityProvider

ME = {"userId": "u1", "brandsId": 1, "subsidiaryId": 1, "sAuthsId": ["1001"], "username": "u1"}


class Erp:
    """What /erp/me answers next: "ok", "401", "500", "502", or "hang" (later than the timeout)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls = 0


@pytest.fixture
def erp() -> Iterator[tuple[Erp, str]]:
    state = Erp()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.calls += 1
            mode = state.mode
            if mode == "hang":
                time.sleep(1.0)
                mode = "ok"
            status = {"ok": 200, "401": 401, "500": 500, "502": 502}[mode]
            body = json.dumps(ME if status == 200 else {"msg": "no"}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/erp"
    finally:
        server.shutdown()
        server.server_close()


def test_outages_open_the_breaker_answers_close_it_and_a_500_is_not_a_login_problem(erp: tuple[Erp, str]) -> None:
    state, url = erp

    async def scenario() -> None:
        client = ErpClient(url, timeout_s=0.3, breaker=CircuitBreaker(failures=2, reset_s=0.5))
        provider = ErpIdentityProvider(client, cache_s=0)
        try:
            assert (await provider.identify("t")) is not None
            state.mode = "500"
            with pytest.raises(Unavailable):  # up but failing: 503 at the door, never 401
                await provider.identify("t")
            assert client.breaker.state == CLOSED and client.breaker.consecutive == 0  # an answer, not counted
            state.mode = "502"
            with pytest.raises(Unavailable):
                await provider.identify("t")
            state.mode = "hang"
            started = time.monotonic()
            with pytest.raises(Unavailable):
                await provider.identify("t")
            assert time.monotonic() - started < 0.9  # the call's timeout, not the server's delay
            assert client.breaker.state == OPEN
            calls = state.calls
            with pytest.raises(ErpUnreachable) as fast:
                await client.me("t")
            assert state.calls == calls and fast.value.reason == "circuit open"  # not even tried
            await asyncio.sleep(0.55)
            assert client.breaker.state == HALF_OPEN
            state.mode = "401"
            assert (await provider.identify("t")) is None  # the probe: a refused token, 401 at the door
            assert client.breaker.state == CLOSED  # the ERP answered
        finally:
            await client.aclose()

    asyncio.run(scenario())
