"""Shared helpers for the HTTP-level tests: a real ``tether serve`` process, clients, SSE parsing.

Every server here is a subprocess (``python -m tether.cli serve``) in its own working directory
with its own SQLite file, so the example pack's outbox (``var/example-outbox``) and the test
pack's call counters (``var/test-counter``) land in that directory, and a test can kill it with
SIGKILL and start it again on the same database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.servers import ServerProcess, wait_until
from tests.servers import get_session as get_session  # re-exported for the tests here
from tests.servers import runtime_events as runtime_events
from tests.servers import wait_status as wait_status

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SLOWPACK = Path(__file__).resolve().parent / "slowpack"
TOKENS = {
    "dev-alice": {"userId": "alice", "tenant": "finance-demo", "grants": []},
    "dev-bob": {"userId": "bob", "tenant": "finance-demo", "grants": []},
    "dev-carol": {"userId": "carol", "tenant": "finance-demo", "grants": []},
}
T = TypeVar("T")


class TetherServer(ServerProcess):
    """A server with the given packs and the test tokens (alice, bob, carol), 1 s SSE heartbeats."""

    def __init__(self, workdir: Path, packs: list[Path], **env: str) -> None:
        super().__init__(
            workdir,
            {
                "TETHER_DATABASE_URL": f"sqlite:///{workdir / 'tether.db'}",
                "TETHER_PACKS": ",".join(str(p) for p in packs),
                "TETHER_DEV_TOKENS": json.dumps(TOKENS),
                "TETHER_SSE_HEARTBEAT_S": "1",
                **env,
            },
        )

    # ---- what the example and test packs leave in the working directory -------------------------

    def outbox(self) -> dict[str, dict[str, Any]]:
        """The example pack's async job tickets by job id."""
        folder = self.workdir / "var" / "example-outbox"
        if not folder.exists():
            return {}
        return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}

    def ticket(self, job_id: str) -> dict[str, Any]:
        return wait_until(lambda: self.outbox().get(job_id), what=f"the outbox ticket of {job_id}")

    def counter(self, label: str) -> list[str]:
        """The test pack's marks for one call label: 'start' / 'end' per run."""
        path = self.workdir / "var" / "test-counter" / f"{label}.log"
        return path.read_text().split() if path.exists() else []


def make_server(workdir: Path, packs: list[Path] | None = None, **env: str) -> TetherServer:
    return TetherServer(workdir, packs if packs is not None else [EXAMPLES, SLOWPACK], **env)


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TetherServer]:
    """One server for the API and SSE tests (the example pack and the slow test pack, planner model)."""
    server = make_server(tmp_path_factory.mktemp("api")).start()
    try:
        yield server
    finally:
        server.stop()
    server.assert_no_server_errors()


@pytest.fixture
def alice(api_server: TetherServer) -> Iterator[httpx.Client]:
    with api_server.client("dev-alice") as c:
        yield c


@pytest.fixture
def bob(api_server: TetherServer) -> Iterator[httpx.Client]:
    with api_server.client("dev-bob") as c:
        yield c


# ---- session helpers ------------------------------------------------------------------------------


def assert_contiguous(events: list[dict[str, Any]]) -> None:
    ids = [e["id"] for e in events]
    assert ids == list(range(1, len(ids) + 1)), f"event ids not contiguous 1..N: {ids}"


def tool_messages(session: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in session["transcript"] if m["role"] == "tool"]


def post_callback(
    client: httpx.Client, job_id: str, token: str | None, status: str = "SUCCEEDED", **body: Any
) -> httpx.Response:
    headers = {"X-Tether-Callback-Token": token} if token is not None else {}
    return client.post(
        "/api/agent/tool-callback", json={"externalJobId": job_id, "status": status, **body}, headers=headers
    )


# ---- SSE ------------------------------------------------------------------------------------------


class SseFrame:
    """One event frame, or (``comment`` set) one comment line such as a heartbeat."""

    def __init__(self, fields: dict[str, str], raw: list[str], comment: str | None = None) -> None:
        self.comment = comment
        self.id = fields.get("id")
        self.event = fields.get("event")
        self.data = fields.get("data")
        self.raw = raw

    @property
    def seq(self) -> int:
        assert self.id is not None
        return int(self.id)

    def json(self) -> dict[str, Any]:
        assert self.data is not None
        body: dict[str, Any] = json.loads(self.data)
        return body


def sse_frames(response: httpx.Response, comments: bool = False) -> Iterator[SseFrame]:
    """Parse a text/event-stream body as it arrives; with ``comments`` comment lines (heartbeats)
    are yielded too, as frames with ``comment`` set."""
    fields: dict[str, str] = {}
    raw: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if fields:
                yield SseFrame(fields, raw)
            fields, raw = {}, []
            continue
        if line.startswith(":"):
            if comments:
                yield SseFrame({}, [line], comment=line)
            continue
        raw.append(line)
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        fields[name] = fields[name] + "\n" + value if name == "data" and name in fields else value
