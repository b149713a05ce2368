"""Where a trial runs: the seeded data prepared once (a template of the three SQLite files — the
runtime, the demo ERP, the finance sessions — seeded by a real server start, then copied out with
SQLite's backup API), a fresh copy of it per trial, and a real server process on a free port with
its working directory there (``./var`` is the copy, as for a user). Never a re-seed per task.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import httpx

from tether.store.sqlite_copy import backup_sqlite

PACKS = "tether.packs.finance_cs.pack,tether.erp_demo.pack,tether.packs.erp.pack"
DATABASES = ("tether.db", "erp.db", "finance.db")
# settings a trial's server takes from the caller's environment: the model's, nothing else of tether's
PASSED_PREFIXES = ("TETHER_MODEL", "TETHER_SKILL_ROUTING", "TETHER_MAX_", "TETHER_TURN_TIMEOUT_S", "TETHER_CONTEXT")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_") or k.startswith(PASSED_PREFIXES)}
    env.update({"TETHER_PACKS": PACKS, "TETHER_PUBLIC_URL": url, "TETHER_LOG_LEVEL": "INFO", "PYTHONUNBUFFERED": "1"})
    # a model given as module:factory may live in the caller's tree (the tests' scripted models)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


class Zygote:
    """``python -m tether.evals.zygote``: forks servers that need not import anything again."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tether.evals.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=server_env(""),
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        if not ready.strip():
            raise RuntimeError("the eval zygote did not start")

    def spawn(self, workdir: Path, args: list[str], env: dict[str, str], log: Path) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {"workdir": str(workdir), "args": args, "env": env, "log": str(log)}
        with self.lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            return int(json.loads(self.proc.stdout.readline())["pid"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class ServerProcess:
    """``python -m tether.evals.serve`` (``tether serve`` with the eval's model choice) in
    ``workdir``: a subprocess of its own, or forked by a ``Zygote``."""

    def __init__(
        self, workdir: Path, model: str, env: dict[str, str] | None = None, zygote: Zygote | None = None
    ) -> None:
        self.workdir = workdir
        self.model = model
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "server.log"
        self.env = server_env(self.url, env)
        self.zygote = zygote
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0

    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return bool(self.pid) and _alive(self.pid)

    def start(self, timeout: float = 300.0) -> ServerProcess:
        serve = ["--model", self.model, "--port", str(self.port)]
        if self.zygote is not None:
            self.pid = self.zygote.spawn(self.workdir, serve, self.env, self.log_path)
        else:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "tether.evals.serve", *serve],
                    cwd=self.workdir,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
                self.pid = self.proc.pid
        deadline = time.monotonic() + timeout
        while True:
            if not self.running():
                raise RuntimeError(f"the eval server exited:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/api/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the eval server did not come up in {timeout:g}s:\n{self.log_tail()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if not self.running():
            return
        os.kill(self.pid, signal.SIGINT)
        deadline = time.monotonic() + 20
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.running():
            os.kill(self.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=10)

    def log_tail(self, n: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-n:])


@dataclass(slots=True)
class Workspace:
    """``root``/template-<day>/ holds the seeded files; ``root``/trials/<name>/var/ each trial's copy."""

    root: Path
    run_id: str = ""

    def __post_init__(self) -> None:
        self.root = self.root.resolve()  # servers run in the trial's folder: every path absolute
        self.run_id = self.run_id or f"{time.strftime('%H%M%S')}-{os.getpid()}"  # runs side by side

    @property
    def template(self) -> Path:
        return self.root / f"template-{date.today():%Y%m%d}"  # the ERP's data is dated: one per day

    def prepare(self, log: object = None) -> Path:
        """The template, seeded by a real server start the first time today (minutes), reused after."""
        done = self.template / "var" / ".ready"
        if done.exists():
            return self.template
        seeding = self.root / f"seeding-{os.getpid()}"
        shutil.rmtree(seeding, ignore_errors=True)
        (seeding / "var").mkdir(parents=True)
        server = ServerProcess(seeding, "planner")
        try:
            server.start(timeout=900)
        finally:
            server.stop()
        staged = self.root / f"template-staged-{os.getpid()}"
        shutil.rmtree(staged, ignore_errors=True)
        (staged / "var").mkdir(parents=True)
        for name in DATABASES:
            backup_sqlite(seeding / "var" / name, staged / "var" / name)
        (staged / "var" / ".ready").write_text(f"{date.today()}\n")
        shutil.rmtree(seeding, ignore_errors=True)
        if done.exists():  # another run seeded it meanwhile: theirs is as good
            shutil.rmtree(staged, ignore_errors=True)
            return self.template
        shutil.rmtree(self.template, ignore_errors=True)
        staged.rename(self.template)
        for old in self.root.glob("template-*"):
            if old != self.template and not old.name.startswith("template-staged"):
                shutil.rmtree(old, ignore_errors=True)
        return self.template

    def copy(self, name: str) -> Path:
        """A fresh copy of the template for one trial (or a reference run)."""
        workdir = self.root / "trials" / self.run_id / name
        shutil.rmtree(workdir, ignore_errors=True)
        (workdir / "var").mkdir(parents=True)
        for db in DATABASES:
            shutil.copyfile(self.template / "var" / db, workdir / "var" / db)
        return workdir

    def db(self, workdir: Path, name: str) -> Path:
        return workdir / "var" / f"{name}.db"
