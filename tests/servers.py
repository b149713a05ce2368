"""A real ``tether serve`` process for tests: its own working directory (so ``./var`` lands there,
as for a user), a free port, SIGKILL and restart on the same databases, and a log to check for 500s."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Self, TypeVar

import httpx

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(fn: Callable[[], T | None], timeout: float = 20.0, interval: float = 0.05, what: str = "condition") -> T:
    """Poll ``fn`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


class ServerProcess:
    """``tether serve`` in a subprocess; ``kill()`` is a real SIGKILL, ``start()`` may follow.
    The environment starts from the caller's without any ``TETHER_*`` variable, plus ``env``.
    Another ``tether`` server command (``tether erp serve``) sets ``command`` and ``health_path``:
    it is up once that path answers at all."""

    launcher: tuple[str, ...] = ("-m", "tether.cli")  # what python runs: tether's CLI, or a test's wrapper of it
    command: tuple[str, ...] = ("serve",)
    health_path = "/api/health"

    def __init__(self, workdir: Path, env: dict[str, str], stop_timeout: float = 10.0) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "server.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
        self.env.update({"TETHER_PUBLIC_URL": self.url, "PYTHONUNBUFFERED": "1", **env})
        self.stop_timeout = stop_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> Self:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n===== start #{self.starts} =====\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, *self.launcher, *self.command, "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=self.workdir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"tether serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                status = httpx.get(self.url + self.health_path, timeout=1).status_code
                if status == 200 or (self.health_path != ServerProcess.health_path and status < 500):
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"tether serve did not come up in {timeout:g}s:\n{self.log_tail()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown handler, no final commit."""
        assert self.proc is not None and self.proc.poll() is None, "not running"
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def client(self, token: str | None = "dev-alice", timeout: float = 30.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, n: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def assert_no_server_errors(self) -> None:
        """Never a 500, never an unhandled traceback in the server log."""
        bad = [line for line in self.log_text().splitlines() if '" 500' in line or "Traceback" in line]
        assert not bad, "server log shows errors:\n" + "\n".join(bad) + "\n---\n" + self.log_tail()


# ---- a client's view of a session -------------------------------------------------------------

TERMINAL = frozenset({"SUCCEEDED", "FAILED"})


def get_session(client: httpx.Client, session_id: str) -> dict[str, Any]:
    r = client.get(f"/api/agent/sessions/{session_id}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def wait_status(
    client: httpx.Client, session_id: str, statuses: Iterable[str] | str = TERMINAL, timeout: float = 30.0
) -> dict[str, Any]:
    """Poll the session until its status is one of ``statuses``; fail saying where it is stuck."""
    wanted = {statuses} if isinstance(statuses, str) else set(statuses)
    last: dict[str, Any] = {}

    def check() -> dict[str, Any] | None:
        nonlocal last
        last = get_session(client, session_id)
        return last if last["status"] in wanted else None

    try:
        return wait_until(check, timeout=timeout, interval=0.1, what=f"session {session_id} to reach {wanted}")
    except AssertionError:
        stuck = f"session stuck in {last.get('status')} (wanted {wanted}): {last.get('lastError')}"
        raise AssertionError(stuck) from None


def runtime_events(client: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    r = client.get(f"/api/agent/sessions/{session_id}/runtime")
    assert r.status_code == 200, r.text
    events: list[dict[str, Any]] = r.json()["events"]
    return events


class ErpProcess(ServerProcess):
    """``tether erp serve``: the demo ERP in a process of its own, so a test can stop (SIGTERM),
    hang (SIGSTOP / SIGCONT) and restart it under a running ``tether serve``. Its database is a
    file in ``workdir``, kept across restarts (tokens stay valid)."""

    command = ("erp", "serve")
    health_path = "/erp/me"  # 401 without a token: up

    def __init__(self, workdir: Path, agent_key: str, seed_scale: str = "0.3") -> None:
        self.database_url = f"sqlite:///{workdir / 'erp.db'}"
        env = {
            "TETHER_ERP_DATABASE_URL": self.database_url,
            "TETHER_ERP_AGENT_KEY": agent_key,
            "TETHER_ERP_SEED_SCALE": seed_scale,
        }
        super().__init__(workdir, env, stop_timeout=15.0)

    def tether_env(self) -> dict[str, str]:
        """What a ``tether serve`` needs to use this ERP instead of mounting its own."""
        return {
            "TETHER_ERP_EMBEDDED": "false",
            "TETHER_ERP_BASE_URL": f"{self.url}/erp",
            "TETHER_ERP_DATABASE_URL": self.database_url,
            "TETHER_ERP_AGENT_KEY": self.env["TETHER_ERP_AGENT_KEY"],
        }

    def terminate(self) -> None:
        """SIGTERM, and wait until it is gone: the ERP is down, its port refuses connections."""
        assert self.proc is not None and self.proc.poll() is None, "not running"
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)

    def hang(self) -> None:
        """SIGSTOP: connections are accepted by the kernel, nothing ever answers."""
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.resume()  # a stopped process would not see SIGINT
        super().stop()
