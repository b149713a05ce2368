"""An uncontended write on SQLite runs on the caller's thread (no hand-off to the writer thread),
durable when it returns; contended writes still go to the thread and share commits; a write
never overtakes one queued before it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.errors import Conflict
from tether.store.database import normalize_url, writer_database
from tether.store.writer import GroupWriter, Write

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the inline path reads asyncio's ready queue


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tuple[GroupWriter, Path]]:
    path = tmp_path / "w.db"
    db, _, _ = writer_database(normalize_url(f"sqlite:///{path}"))
    w = GroupWriter(db)
    w.start()
    yield w, path
    w.close()


def _insert(name: str, seen: list[tuple[str, int]]) -> Write:
    def run(cur: Any) -> str:
        seen.append((name, threading.get_ident()))
        cur.execute("INSERT INTO t VALUES (?)", (name,))
        return name

    return Write(run)


async def _table(w: GroupWriter) -> None:
    await w.submit(Write(lambda cur: cur.execute("CREATE TABLE IF NOT EXISTS t (name TEXT PRIMARY KEY)")))


def _stored(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [name for (name,) in conn.execute("SELECT name FROM t ORDER BY rowid")]
    finally:
        conn.close()


async def test_an_uncontended_write_runs_here_and_is_durable_when_it_returns(writer: tuple[GroupWriter, Path]) -> None:
    w, path = writer
    await _table(w)
    seen: list[tuple[str, int]] = []
    committed: list[Any] = []
    write = _insert("a", seen)
    write.after_commit = committed.append
    assert await w.submit(write) == "a"
    assert seen == [("a", threading.get_ident())]  # the caller's thread, not the writer's
    assert committed == ["a"]
    assert _stored(path) == ["a"]  # another connection sees it: the commit is done


async def test_a_failing_inline_write_fails_alone(writer: tuple[GroupWriter, Path]) -> None:
    w, path = writer
    await _table(w)
    seen: list[tuple[str, int]] = []
    await w.submit(_insert("a", seen))
    with pytest.raises(Conflict):
        await w.submit(_insert("a", seen))  # the primary key: translated, this caller's only
    await w.submit(_insert("b", seen))
    assert _stored(path) == ["a", "b"]


async def test_concurrent_writes_go_to_the_thread_and_share_commits(writer: tuple[GroupWriter, Path]) -> None:
    w, path = writer
    await _table(w)
    seen: list[tuple[str, int]] = []
    before = w.stats.batches
    names = [f"n{i}" for i in range(50)]
    assert await asyncio.gather(*(w.submit(_insert(n, seen)) for n in names)) == names
    assert w.stats.batches - before < 25  # batched: tasks ready on the loop keep writes off it
    assert sum(1 for _, ident in seen if ident != threading.get_ident()) >= 40
    assert sorted(_stored(path)) == sorted(names)


async def test_a_write_never_overtakes_one_queued_before_it(writer: tuple[GroupWriter, Path]) -> None:
    w, path = writer
    await _table(w)
    release = threading.Event()
    seen: list[tuple[str, int]] = []

    def slow(cur: Any) -> None:
        release.wait(5)
        seen.append(("first", threading.get_ident()))
        cur.execute("INSERT INTO t VALUES ('first')")

    task = asyncio.ensure_future(asyncio.sleep(0))  # a task ready: the slow write goes to the thread
    (first,) = w.enqueue([Write(slow)])
    await task
    await asyncio.sleep(0.05)  # the thread took the slow write and holds the connection
    timer = threading.Timer(0.1, release.set)
    timer.start()
    try:
        assert await w.submit(_insert("second", seen)) == "second"  # nothing else ready: still not inline
    finally:
        timer.cancel()
    await first
    assert [name for name, _ in seen] == ["first", "second"]
    assert seen[1][1] != threading.get_ident()  # it waited in the queue, behind the first
    assert _stored(path) == ["first", "second"]


def test_only_a_local_sqlite_file_writes_inline() -> None:
    sqlite_db, _, _ = writer_database(normalize_url("sqlite:////tmp/tether-inline-check.db"))
    assert sqlite_db.inline
    for url in ("postgresql://u@127.0.0.1:1/x", "mysql://u@127.0.0.1:1/x"):
        db, _, engine = writer_database(normalize_url(url))
        assert not db.inline  # a server round trip must not hold the event loop
        assert engine is not None
        engine.dispose()
