"""A cluster on loopback for the scale-out tests: a private Redis, N ``tether serve`` replicas on one
PostgreSQL database, M ``tether worker`` processes, and SSE readers that follow a session on a
replica other than the one it was created on (reconnecting, with ``Last-Event-ID``, to another
when theirs dies). Every process is real and is stopped with a real signal."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import ServerProcess, free_port, wait_until

SLOWPACK = Path(__file__).resolve().parent.parent / "app" / "slowpack"
FINANCE = "tether.packs.finance_cs.pack"
FINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


class RedisServer:
    """A private ``redis-server`` (never the machine's shared one): no persistence, loopback only."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("!!! redis-server is not installed — the scale-out tests are SKIPPED")
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        with (self.workdir / "redis.log").open("ab") as log:
            self.proc = subprocess.Popen(args, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_until(up, timeout=15, what="redis-server to answer")
        client.close()
        return self

    def kill(self) -> None:
        assert self.proc is not None and self.proc.poll() is None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class WorkerProcess:
    """``tether worker``: the finance analysis worker in a process of its own."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
        self.env.update({"PYTHONUNBUFFERED": "1", **env})
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (self.workdir / "worker.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tether.cli", "worker"],
                cwd=self.workdir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_until(lambda: "worker running" in self.log_text(), timeout=60, what="the worker to start")
        return self

    def kill(self) -> None:
        assert self.proc is not None and self.proc.poll() is None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def log_text(self) -> str:
        path = self.workdir / "worker.log"
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Reading:
    """What one SSE reader saw of one session, across reconnects."""

    session_id: str
    seqs: list[int] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    final: str | None = None
    reconnects: int = 0
    error: str | None = None


class Cluster:
    """N replicas on one database and one Redis; callbacks go to replica 0 (a load balancer's role
    here: ``TETHER_PUBLIC_URL`` of every replica), which the tests never kill."""

    def __init__(
        self,
        root: Path,
        database_url: str,
        finance_url: str,
        redis_url: str,
        replicas: int = 3,
        workers: int = 2,
        **env: str,
    ) -> None:
        self.root = root
        self.replicas: list[ServerProcess] = []
        ports = [free_port() for _ in range(replicas)]
        self.base_env = {
            "TETHER_DATABASE_URL": database_url,
            "TETHER_REDIS_URL": redis_url,
            "TETHER_PACKS": f"{FINANCE},{SLOWPACK}",
            "TETHER_FINANCE_DATABASE_URL": finance_url,
            "TETHER_FINANCE_WORKER": "off",
            "TETHER_FINANCE_SEED": "no",
            "TETHER_LEASE_S": "3",
            "TETHER_SWEEP_S": "0.5",
            "TETHER_SSE_POLL_S": "1",
            "TETHER_SSE_HEARTBEAT_S": "1",
            "TETHER_SHUTDOWN_GRACE_S": "5",
            "TETHER_PUBLIC_URL": f"http://127.0.0.1:{ports[0]}",
            **env,
        }
        for i, port in enumerate(ports):
            workdir = root / f"replica-{i}"
            workdir.mkdir(parents=True, exist_ok=True)
            server = ServerProcess(workdir, {**self.base_env, "TETHER_REPLICA_ID": f"replica-{i}"}, stop_timeout=20)
            server.port, server.url = port, f"http://127.0.0.1:{port}"
            self.replicas.append(server)
        worker_env = {
            "TETHER_FINANCE_DATABASE_URL": finance_url,
            "TETHER_FINANCE_JOB_LEASE_S": "2",
            "TETHER_FINANCE_ANALYSIS_DELAY_S": "0.5",
        }
        self.workers = [WorkerProcess(root / f"worker-{i}", worker_env) for i in range(workers)]

    def start(self) -> Cluster:
        self.replicas[0].start()  # it migrates both databases; the others then find them at head
        with _threads(len(self.replicas) - 1 + len(self.workers)) as pool:
            list(pool.map(lambda p: p.start(), [*self.replicas[1:], *self.workers]))
        return self

    def stop(self) -> None:
        processes: list[WorkerProcess | ServerProcess] = [*self.workers, *self.replicas]
        for p in processes:
            p.stop()

    def alive(self) -> list[ServerProcess]:
        return [r for r in self.replicas if r.proc is not None and r.proc.poll() is None]

    def other(self, index: int) -> ServerProcess:
        """A live replica other than ``index`` (the next one round the ring)."""
        n = len(self.replicas)
        for step in range(1, n + 1):
            r = self.replicas[(index + step) % n]
            if r.proc is not None and r.proc.poll() is None:
                return r
        raise AssertionError("no replica is alive")

    def counter_starts(self, label: str) -> int:
        """How often the slow test tool started the call ``label``, over every replica."""
        total = 0
        for r in self.replicas:
            path = r.workdir / "var" / "test-counter" / f"{label}.log"
            if path.exists():
                total += path.read_text().split().count("start")
        return total


def _threads(n: int) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max(n, 1))


# ---- SSE readers --------------------------------------------------------------------------------


async def follow(reading: Reading, pick: Callable[[int], str], token: str, deadline: float, start: int = 0) -> Reading:
    """Read the session's events until its turn finishes for good; when the connection drops
    (its replica died), go on from the last id seen on another replica."""
    headers = {"Authorization": f"Bearer {token}"}
    attempt = start
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=15.0)) as client:
        while reading.final is None and time.monotonic() < deadline:
            base = pick(attempt)
            attempt += 1
            extra = {"Last-Event-ID": str(reading.seqs[-1])} if reading.seqs else {}
            try:
                async with client.stream(
                    "GET", f"{base}/api/agent/sessions/{reading.session_id}/events", headers={**headers, **extra}
                ) as r:
                    if r.status_code != 200:
                        reading.error = f"{r.status_code} from {base}"
                        await asyncio.sleep(0.2)
                        continue
                    await _frames(r, reading)
            except (httpx.TransportError, httpx.StreamError):
                pass
            if reading.final is None:
                reading.reconnects += 1
                await asyncio.sleep(0.2)
    return reading


async def _frames(r: httpx.Response, reading: Reading) -> None:
    fields: dict[str, str] = {}
    async for line in r.aiter_lines():
        if line.startswith(":"):
            continue
        if line:
            key, _, value = line.partition(":")
            fields[key] = value.removeprefix(" ")
            continue
        if "id" in fields:
            reading.seqs.append(int(fields["id"]))
            reading.types.append(fields.get("event", ""))
            if fields.get("event") == "TURN_FINISHED":
                status = json.loads(fields["data"])["data"].get("status")
                if status in FINAL:
                    reading.final = status
                    return
        fields = {}
