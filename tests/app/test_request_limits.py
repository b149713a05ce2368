"""Request size limits, tested from the attacker's side against a real server process, with the
server's memory measured: an oversized body is refused (413) before it is buffered, with or
without a Content-Length, with or without a token; an oversized globalContext is 422; and what
the system prompt takes from the context is bounded."""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.app.conftest import EXAMPLES, TetherServer, make_server

pytestmark = pytest.mark.slow

MB = 1024 * 1024
ATTACK = 20 * MB
LIMIT = 1_048_576  # TETHER_MAX_BODY_BYTES' default
PATHS = ("/api/agent/tool-callback", "/api/agent/sessions", "/api/no-such-route")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TetherServer]:
    s = make_server(tmp_path_factory.mktemp("limits"), [EXAMPLES]).start()
    try:
        yield s
    finally:
        s.stop()
    s.assert_no_server_errors()


# ---- the attacker's tools: raw sockets, so nothing on our side buffers or gives up early --------


def _connect(server: TetherServer) -> socket.socket:
    parts = urlsplit(server.url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
    return sock


def _head(path: str, extra: str, token: bool) -> bytes:
    auth = "Authorization: Bearer dev-alice\r\n" if token else ""
    return f"POST {path} HTTP/1.1\r\nHost: tether\r\nContent-Type: application/json\r\n{auth}{extra}\r\n".encode()


def _status(raw: bytes) -> int | None:
    line = raw.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 and line[1].isdigit() else None


def send_body(
    server: TetherServer, path: str, total: int, *, chunked: bool, token: bool = False, wait_first: float = 0.0
) -> tuple[int | None, int, bytes]:
    """Send a ``total``-byte JSON body in 64 KiB pieces — announced with a Content-Length, or
    chunked without one — and stop as soon as the server answers. ``wait_first``: seconds to wait
    for an answer before sending any of the body. -> (status, or None where the server cut the
    connection; body bytes sent; the response)."""
    prefix = b'{"externalJobId": "job-x", "status": "SUCCEEDED", "payload": "'
    sent, raw = 0, b""
    framing = "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {total}\r\n"
    with _connect(server) as sock:
        try:
            sock.sendall(_head(path, framing, token))
            answered = bool(select.select([sock], [], [], wait_first)[0]) if wait_first else False
            while sent < total and not answered:
                piece = prefix if sent == 0 else b"x" * min(65536, total - sent - 2)
                if sent + len(piece) + 2 >= total:
                    piece += b'"}'
                sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
                sent += len(piece)
                answered = bool(select.select([sock], [], [], 0)[0])
            if chunked and not answered:
                sock.sendall(b"0\r\n\r\n")
            sock.settimeout(30)
            while b"\r\n\r\n" not in raw:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                raw += chunk
            head_end = raw.find(b"\r\n\r\n")
            while head_end >= 0 and b"content-length" in raw[:head_end].lower():
                length = int(raw[:head_end].lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(raw) >= head_end + 4 + length:
                    break
                chunk = sock.recv(65536)
                if not chunk:
                    break
                raw += chunk
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed on us: refused, and it did not take the rest
    return _status(raw), sent, raw


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def reset_peak(pid: int) -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS; False where not possible."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return rss_kb(pid, "VmHWM") <= rss_kb(pid) + 1024


class PeakSampler:
    """Samples VmRSS every few ms (a fallback where VmHWM cannot be reset)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, rss_kb(pid), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, rss_kb(self.pid))

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


# ---- the body limit ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_declared_oversized_body_is_refused_before_it_is_sent(server: TetherServer, path: str) -> None:
    status, sent, raw = send_body(server, path, ATTACK, chunked=False, token=path == PATHS[1], wait_first=5)
    assert (status, sent) == (413, 0), raw[:300]  # answered from the headers alone
    body = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    assert "too large" in body["error"] and str(LIMIT) in body["error"]
    assert b"connection: close" in raw.lower()


@pytest.mark.parametrize("path", PATHS)
def test_a_chunked_oversized_body_is_cut_off_as_it_arrives(server: TetherServer, path: str) -> None:
    status, sent, raw = send_body(server, path, ATTACK, chunked=True, token=path == PATHS[1])
    # None: the server closed while we were still sending; an unknown route is a 404, unread
    assert status in ((413, None, 404) if path == PATHS[2] else (413, None)), raw[:300]
    assert sent < ATTACK, "the server read the whole 20 MB body"


def test_a_body_under_the_limit_is_read_and_answered(server: TetherServer) -> None:
    with server.client(None) as anon:
        body = {"externalJobId": "job-nope", "status": "SUCCEEDED", "payload": {"blob": "x" * (LIMIT - 4096)}}
        r = anon.post("/api/agent/tool-callback", json=body)
        assert r.status_code == 404 and r.json()["error"] == "async job not found"
        r = anon.post(
            "/api/agent/tool-callback", content=b"x" * (LIMIT + 1), headers={"content-type": "application/json"}
        )
        assert r.status_code == 413 and "too large" in r.json()["error"]


def test_the_servers_memory_does_not_grow_with_the_attack(server: TetherServer) -> None:
    """20 MB bodies, declared and chunked, with and without a token, two at a time: the server's
    peak resident memory grows by far less than one body (it would hold it twice to parse it)."""
    with server.client() as c:  # warm every route up first: imports and caches are not the attack
        c.post("/api/agent/sessions", json={"message": "What does order A-1001 cost in USD?"})
        c.post("/api/agent/tool-callback", json={"externalJobId": "job-warm", "status": "SUCCEEDED"})
    pid = server.pid
    before = rss_kb(pid)
    exact = reset_peak(pid)

    def attack() -> None:
        for path in PATHS:
            for chunked in (False, True):
                send_body(server, path, ATTACK, chunked=chunked, token=path == PATHS[1])

    with PeakSampler(pid) as sampler:
        threads = [threading.Thread(target=attack) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    peak = rss_kb(pid, "VmHWM") if exact else sampler.peak
    grown_mb = (peak - before) / 1024
    assert grown_mb < 12, f"peak RSS grew by {grown_mb:.1f} MB under 20 MB bodies (before {before} kB)"
    with server.client() as c:
        assert c.get("/api/health").status_code == 200, "the server still answers"


# ---- globalContext -------------------------------------------------------------------------------


def _nested(depth: int) -> dict[str, object]:
    value: object = 1
    for _ in range(depth - 1):
        value = {"x": value}
    return {"deep": value}


@pytest.mark.parametrize(
    ("context", "words"),
    [
        ({"notes": "x" * 40_000}, "bytes as JSON"),
        (_nested(7), "levels deep"),
        ({"list": [[[[[[[1]]]]]]]}, "levels deep"),
        ({f"k{i}": i for i in range(201)}, "201 keys"),
        ({"a": [{f"k{i}": i} for i in range(250)]}, "keys"),
        (_nested(900), "levels deep"),
    ],
    ids=["size", "depth", "list-depth", "keys", "nested-keys", "very-deep"],
)
def test_an_oversized_global_context_is_422_naming_the_field(
    server: TetherServer, context: dict[str, object], words: str
) -> None:
    with server.client() as c:
        before = c.get("/api/agent/sessions", params={"limit": 200}).json()["items"]
        r = c.post("/api/agent/sessions", json={"message": "What does order A-1001 cost?", "globalContext": context})
        assert r.status_code == 422, r.text[:300]
        assert r.json()["field"] == "globalContext" and words in r.json()["error"], r.json()
        assert c.get("/api/agent/sessions", params={"limit": 200}).json()["items"] == before, "nothing was stored"


def test_the_prompt_takes_a_bounded_excerpt_of_an_accepted_context(server: TetherServer) -> None:
    context = {"currency": "EUR", **{f"note{i}": "说明" * 400 for i in range(12)}}  # ~20 KB, within the limits
    with server.client() as c:
        r = c.post("/api/agent/sessions", json={"message": "What does order A-1001 cost?", "globalContext": context})
        assert r.status_code == 200, r.text[:300]
        session = r.json()
        assert session["globalContext"] == context, "the session keeps the whole context"
        system = session["transcript"][0]
        assert system["role"] == "system"
        assert len(system["content"]) < 8_000, len(system["content"])
        runtime = system["content"].split("## Runtime\n", 1)[1].split("\n\n", 1)[0]
        shown = json.loads(runtime)["context"]
        assert shown["currency"] == "EUR" and "_omitted" in shown
        assert len(json.dumps(shown, ensure_ascii=False)) < 4_500


def test_the_limit_is_a_setting(tmp_path: Path) -> None:
    small = make_server(tmp_path, [EXAMPLES], TETHER_MAX_BODY_BYTES="4096").start()
    try:
        with small.client(None) as anon:
            ok = anon.post(
                "/api/agent/tool-callback", json={"externalJobId": "j", "status": "SUCCEEDED", "payload": "x" * 3000}
            )
            assert ok.status_code == 404
            big = anon.post(
                "/api/agent/tool-callback", json={"externalJobId": "j", "status": "SUCCEEDED", "payload": "x" * 5000}
            )
            assert big.status_code == 413 and "4096" in big.json()["error"]
        with httpx.Client(base_url=small.url) as raw:
            assert raw.get("/api/health").status_code == 200
    finally:
        small.stop()
    small.assert_no_server_errors()
