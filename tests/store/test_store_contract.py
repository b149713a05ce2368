"""The SessionStore / DslStore contract, run on SQLite, PostgreSQL, MariaDB and MemoryStore alike."""

from __future__ import annotations

import asyncio
from typing import TypeAlias

import pytest

from tether.core.ports import Commit, DslSnapshot, DslStep
from tether.core.session import Status, Step
from tether.errors import Conflict, NotFound
from tether.store import MemoryStore, SqlStore

from .builders import OTHER, OWNER, FakeClock, comparable, events, job, new_session, tool_round
from .conftest import LEASE

pytestmark = pytest.mark.anyio

Store: TypeAlias = SqlStore | MemoryStore


async def test_round_trip_keeps_every_field(store: Store) -> None:
    s = new_session()
    s.selected_skill_ids = ["finance-semantic-analysis"]
    s.current_turn_id = "turn-1"
    s.summary = "摘要"
    s.summary_upto = 1
    s.last_dsl_id = "dsl-1"
    pending = job(s, "job-1", deadline=1_700_000_100.5)
    await store.create(Commit(s, events(s, 1, "SESSION_STARTED", "TURN_STARTED"), [pending]))
    assert (s.version, s.persisted_count) == (1, 2)

    await store.commit(tool_round(s, 1, 3))
    s.executed_steps.append(Step("turn-1", "call-async", "analyze_keywords_async", {"k": ["金"]}, "PENDING"))
    s.pending_interaction = {"kind": "question", "question": "哪个渠道?", "options": ["app", "web"]}
    s.waiting_job_ids = ["job-1"]
    s.transition(Status.WAITING_ASYNC_CALLBACK)
    await store.commit(Commit(s, events(s, 6, "WAITING_ASYNC_CALLBACK")))

    loaded = await store.load(s.session_id, OWNER)
    assert comparable(loaded) == comparable(s)
    assert loaded.version == 3 and loaded.persisted_count == len(loaded.transcript) == 4
    assert loaded.created_at == pytest.approx(s.created_at)
    assert await store.last_seq(s.session_id) == 6
    evs = await store.events_after(s.session_id, 0)
    assert [e.seq for e in evs] == [1, 2, 3, 4, 5, 6]
    assert evs[0].to_json() == events(s, 1, "SESSION_STARTED")[0].to_json()
    assert [e.seq for e in await store.events_after(s.session_id, 2, limit=2)] == [3, 4]
    stored_job = await store.get_job("job-1")
    assert stored_job == pending
    assert await store.get_job("job-unknown") is None


async def test_last_seq_lets_a_fresh_load_continue_numbering(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s, events(s, 1, "SESSION_STARTED")))
    assert await store.last_seq(s.session_id) == 1
    await store.commit(Commit(s))  # no events: the stored seq stays
    assert await store.last_seq(s.session_id) == 1
    fresh = await store.load(s.session_id)
    assert fresh.last_seq == 1
    fresh.last_seq += 1  # what the runtime does per event
    await store.commit(Commit(fresh, events(fresh, fresh.last_seq, "TURN_STARTED")))
    assert [e.seq for e in await store.events_after(s.session_id, 0)] == [1, 2]
    assert (await store.load(s.session_id)).last_seq == 2
    with pytest.raises(NotFound):
        await store.last_seq("ses-unknown")


async def test_replaced_message_is_rewritten_in_place(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s))
    await store.commit(tool_round(s, 1, 1))
    s.set_message(0, {"role": "system", "content": "刷新后的系统提示"})
    s.set_message(3, {"role": "tool", "tool_call_id": "call-1", "content": "异步结果"})
    s.append({"role": "assistant", "content": "完成"})
    assert s.replaced == {0, 3}
    await store.commit(Commit(s))
    assert s.replaced == set() and s.persisted_count == 5

    loaded = await store.load(s.session_id)
    assert loaded.transcript == s.transcript
    assert loaded.transcript[0]["content"] == "刷新后的系统提示"


async def test_stale_version_is_a_conflict_and_writes_nothing(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s))
    stale = await store.load(s.session_id)
    await store.commit(tool_round(s, 1, 1))

    stale.append({"role": "user", "content": "不该写入"})
    stale.set_message(0, {"role": "system", "content": "不该写入"})
    with pytest.raises(Conflict):
        await store.commit(Commit(stale, events(stale, 1, "TURN_STARTED"), [job(stale, "job-x")], []))
    assert stale.version == 1 and stale.persisted_count == 2 and stale.replaced == {0}

    loaded = await store.load(s.session_id)
    assert loaded.transcript == s.transcript and loaded.version == 2
    assert [e.type for e in await store.events_after(s.session_id, 0)] == [
        "TOOL_CALL_REQUESTED",
        "TOOL_EXECUTION_STARTED",
        "TOOL_EXECUTION_FINISHED",
    ]
    assert await store.get_job("job-x") is None


async def test_two_concurrent_commits_at_one_version_exactly_one_wins(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s))
    a, b = await store.load(s.session_id), await store.load(s.session_id)
    a.append({"role": "user", "content": "A"})
    b.append({"role": "user", "content": "B"})
    results = await asyncio.gather(
        store.commit(Commit(a, events(a, 1, "TURN_STARTED"))),
        store.commit(Commit(b, events(b, 1, "TURN_STARTED"))),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "NoneType"]
    winner = a if results[0] is None else b
    loaded = await store.load(s.session_id)
    assert loaded.transcript == winner.transcript and loaded.version == 2
    assert len(await store.events_after(s.session_id, 0)) == 1


async def test_many_concurrent_commits_all_land(store: Store) -> None:
    sessions = [new_session(query=f"问题 {i}") for i in range(30)]
    await asyncio.gather(*(store.create(Commit(s)) for s in sessions))

    async def run(s: Store, session_index: int) -> None:
        sess = sessions[session_index]
        for n in range(4):
            await s.commit(tool_round(sess, n, 1 + 3 * n))

    # one stale commit in the crowd must fail alone
    stale = await store.load(sessions[0].session_id)
    stale.append({"role": "user", "content": "stale"})
    results = await asyncio.gather(
        *(run(store, i) for i in range(len(sessions))),
        store.commit(Commit(stale)),
        return_exceptions=True,
    )
    assert results[:-1] == [None] * len(sessions)
    assert isinstance(results[-1], Conflict)
    for s in sessions:
        loaded = await store.load(s.session_id)
        assert loaded.transcript == s.transcript and loaded.version == 5 == s.version
        assert [e.seq for e in await store.events_after(s.session_id, 0)] == list(range(1, 13))
    if isinstance(store, SqlStore):
        stats = store.writer_stats
        assert stats.batches < stats.writes, "concurrent commits should share transactions"


async def test_create_twice_is_a_conflict(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s))
    again = new_session()
    again.session_id = s.session_id
    with pytest.raises(Conflict):
        await store.create(Commit(again))


async def test_commit_of_an_unknown_session_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.commit(Commit(new_session()))


async def test_finish_job_is_a_compare_and_set(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s, new_jobs=[job(s, "job-1"), job(s, "job-2")]))
    moved = await asyncio.gather(
        store.finish_job("job-1", "SUCCEEDED", {"keywords": ["保证金"]}, None),
        store.finish_job("job-1", "FAILED", None, "late duplicate"),
    )
    assert sorted(moved) == [False, True]
    assert await store.finish_job("job-1", "SUCCEEDED", {"again": 1}, None) is False
    assert await store.finish_job("job-unknown", "SUCCEEDED", None, None) is False
    done = await store.get_job("job-1")
    assert done is not None and done.status in ("SUCCEEDED", "FAILED") and not done.applied
    if done.status == "SUCCEEDED":
        assert done.result == {"keywords": ["保证金"]} and done.error is None

    assert [j.job_id for j in await store.unapplied_jobs(s.session_id)] == ["job-1"]
    await store.commit(Commit(s, applied_job_ids=["job-1"]))
    assert await store.unapplied_jobs(s.session_id) == []
    applied = await store.get_job("job-1")
    assert applied is not None and applied.applied


async def test_overdue_jobs_are_claimed_once(store: Store, clock: FakeClock) -> None:
    s = new_session()
    await store.create(
        Commit(s, new_jobs=[job(s, "j-late", deadline=clock.now() + 10), job(s, "j-none", deadline=0.0)])
    )
    assert await store.claim_overdue_jobs("too late") == []
    clock.advance(11)
    overdue = await store.claim_overdue_jobs("too late")
    assert [(j.job_id, j.status, j.error) for j in overdue] == [("j-late", "FAILED", "too late")]
    assert await store.claim_overdue_jobs("too late") == [], "a job is claimed once"
    never = await store.get_job("j-none")
    assert never is not None and never.status == "PENDING", "a job without a deadline never expires"


async def test_expired_lease_is_detected_and_renewal_is_version_checked(store: Store, clock: FakeClock) -> None:
    s = new_session()
    await store.create(Commit(s))
    assert await store.expired_running() == []
    clock.advance(LEASE + 1)
    assert await store.expired_running() == [s.session_id]

    assert await store.renew_lease(s.session_id, s.version - 1) is False
    assert await store.renew_lease(s.session_id, s.version) is True
    assert await store.expired_running() == []

    clock.advance(LEASE - 1)
    await store.commit(Commit(s))  # every commit of a RUNNING session renews the lease
    clock.advance(2)
    assert await store.expired_running() == []

    s.transition(Status.WAITING_USER_INPUT)
    await store.commit(Commit(s))
    clock.advance(LEASE * 10)
    assert await store.expired_running() == []  # a waiting session holds no lease
    assert await store.renew_lease(s.session_id, s.version) is False


async def test_dsl_save_get_and_execution_log(store: Store) -> None:
    dsl = DslSnapshot(
        "dsl-1",
        OWNER,
        "ses-1",
        "贵金属客服问题分析",
        {"days": 30, "keyword": "贵金属"},
        [
            DslStep("s1", "sample_sessions_by_keywords", {"days": "${params.days}"}, "h1"),
            DslStep("s2", "build_keyword_report", {"handle": "${steps.s1.handle_id}"}, "h2"),
        ],
        created_at=1_700_000_000.5,
    )
    await store.save_dsl(dsl)
    assert await store.get_dsl("dsl-1", OWNER) == dsl
    assert await store.get_dsl("dsl-1") == dsl
    with pytest.raises(NotFound):
        await store.get_dsl("dsl-1", OTHER)
    with pytest.raises(NotFound):
        await store.get_dsl("dsl-unknown")
    with pytest.raises(Conflict):
        await store.save_dsl(dsl)

    await store.log_execution("dsl-1", "ex-1", {"days": 7}, "RUNNING", [], None)
    await store.log_execution("dsl-1", "ex-1", {"days": 7}, "SUCCEEDED", [{"stepId": "s1", "ok": True}], None)
    # the same outcome logged again (same clock) updates a matched, unchanged row: no duplicate
    await store.log_execution("dsl-1", "ex-1", {"days": 7}, "SUCCEEDED", [{"stepId": "s1", "ok": True}], None)
    await store.log_execution("dsl-1", "ex-2", {}, "FAILED", [], "tool schema changed")
    runs = await store.executions("dsl-1")
    assert [(r["executionId"], r["status"], r["error"]) for r in runs] == [
        ("ex-1", "SUCCEEDED", None),
        ("ex-2", "FAILED", "tool schema changed"),
    ]
    assert runs[0]["steps"] == [{"stepId": "s1", "ok": True}] and runs[0]["params"] == {"days": 7}
    assert await store.executions("dsl-unknown") == []


async def test_owner_isolation(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s))
    with pytest.raises(NotFound):
        await store.load(s.session_id, OTHER)
    with pytest.raises(NotFound):
        await store.load("ses-unknown", OWNER)
    assert (await store.load(s.session_id, OWNER)).session_id == s.session_id
    assert await store.list_sessions(OTHER, 10, 0) == []


async def test_list_sessions_newest_first_and_paged(store: Store, clock: FakeClock) -> None:
    made = []
    for i in range(5):
        s = new_session(query=f"问题 {i}")
        await store.create(Commit(s))
        made.append(s)
        clock.advance(1)
    await store.create(Commit(new_session(OTHER)))
    await store.commit(tool_round(made[1], 1, 1))  # now the most recently updated

    first = await store.list_sessions(OWNER, 2, 0)
    rest = await store.list_sessions(OWNER, 10, 2)
    order = [s.session_id for s in first + rest]
    expected = [made[i].session_id for i in (1, 4, 3, 2, 0)]
    assert order == expected
    assert first[0].title == made[1].title and first[0].status is Status.RUNNING and not first[0].archived


async def test_steps_are_appended_and_a_pending_step_is_updated_in_place(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s))
    await store.commit(tool_round(s, 1, 1))
    s.executed_steps.append(Step("turn-1", "call-async", "analyze_keywords_async", {"k": ["金"]}, "PENDING", None, 2.0))
    s.waiting_job_ids = ["job-1"]
    s.transition(Status.WAITING_ASYNC_CALLBACK)
    await store.commit(Commit(s, [], [job(s, "job-1")]))

    # another copy (the callback's process) applies the job: the PENDING step changes in place
    resumed = await store.load(s.session_id)
    step = resumed.executed_steps[1]
    step.status, step.finished_at = "SUCCEEDED", 3.5
    resumed.waiting_job_ids = []
    resumed.transition(Status.RUNNING)
    await store.commit(Commit(resumed, applied_job_ids=["job-1"]))
    await store.commit(tool_round(resumed, 2, 4))

    loaded = await store.load(s.session_id)
    assert [st.to_json() for st in loaded.executed_steps] == [st.to_json() for st in resumed.executed_steps]
    assert [st.status for st in loaded.executed_steps] == ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]
    assert loaded.executed_steps[1].finished_at == 3.5 and loaded.executed_steps[1].started_at == 2.0


async def test_events_are_read_back_exactly_across_commits_and_pages(store: Store) -> None:
    s = new_session()
    first = events(s, 1, "SESSION_STARTED", "SKILLS_SELECTED", "TURN_STARTED", "A_PACK_EVENT", "TOKEN")
    first[3].turn_id = None
    first[4].ts = 1_700_000_000.123456789  # timestamps come back bit for bit
    await store.create(Commit(s, first))
    second = events(s, 6, "MODEL_DECISION", "TOOL_CALL_REQUESTED", turn="turn-2")
    second[1].data = {"arguments": '{"q": "金价 \\"涨\\""}', "nested": {"list": [1, 2.5, None, True]}}
    await store.commit(Commit(s, second))
    gap = events(s, 10, "TURN_FINISHED")  # a gap in the numbering is kept
    await store.commit(Commit(s, gap))

    everything = [e.to_json() for e in first + second + gap]
    assert [e.to_json() for e in await store.events_after(s.session_id, 0)] == everything
    assert [e.seq for e in await store.events_after(s.session_id, 2, limit=2)] == [3, 4]
    assert [e.seq for e in await store.events_after(s.session_id, 4, limit=2)] == [5, 6]
    assert [e.seq for e in await store.events_after(s.session_id, 7)] == [10]
    assert await store.events_after(s.session_id, 10) == []
    assert await store.events_after("ses-unknown", 0) == []


async def test_an_event_not_above_the_stored_ones_is_a_conflict_and_writes_nothing(store: Store) -> None:
    s = new_session()
    await store.create(Commit(s, events(s, 1, "SESSION_STARTED", "TURN_STARTED")))
    s.append({"role": "user", "content": "不该写入"})
    with pytest.raises(Conflict):
        await store.commit(Commit(s, events(s, 2, "MODEL_DECISION")))
    assert s.version == 1 and s.persisted_count == 2
    loaded = await store.load(s.session_id)
    assert loaded.version == 1 and len(loaded.transcript) == 2
    assert [e.type for e in await store.events_after(s.session_id, 0)] == ["SESSION_STARTED", "TURN_STARTED"]
    with pytest.raises(Conflict):  # the same seq twice in one commit
        await store.commit(Commit(s, [*events(s, 3, "TOKEN"), *events(s, 3, "TOKEN")]))
    await store.commit(Commit(s, events(s, 3, "MODEL_DECISION")))
    assert (await store.load(s.session_id)).last_seq == 3


async def _conversations(store: Store, clock: FakeClock, *titles: str) -> list[str]:
    ids = []
    for title in titles:
        s = new_session(query=title)
        await store.create(Commit(s))
        ids.append(s.session_id)
        clock.advance(1)
    return ids


async def test_rename_and_archive_keep_the_version_and_the_place_in_the_list(store: Store, clock: FakeClock) -> None:
    old, new = await _conversations(store, clock, "旧的对话", "newer")
    s = await store.load(old, OWNER)
    renamed = await store.rename(old, OWNER, "Q3 贵金属 review")
    assert (renamed.session_id, renamed.title, renamed.archived) == (old, "Q3 贵金属 review", False)
    assert renamed.updated_at == s.updated_at and renamed.status is Status.RUNNING
    archived = await store.set_archived(old, OWNER, True)
    assert archived.archived and archived.title == "Q3 贵金属 review"
    assert await store.get_summary(old, OWNER) == archived

    # a commit of a copy loaded before the rename keeps the new title and the archived flag
    s.append({"role": "user", "content": "接着说"})
    await store.commit(Commit(s))
    loaded = await store.load(old, OWNER)
    assert loaded.title == "Q3 贵金属 review" and loaded.version == 2
    assert (await store.get_summary(old, OWNER)).archived
    assert [x.session_id for x in await store.list_sessions(OWNER, 10, 0, archived=None)] == [old, new]

    back = await store.set_archived(old, OWNER, False)
    assert not back.archived
    assert [x.session_id for x in await store.list_sessions(OWNER, 10, 0)] == [old, new]


async def test_another_owner_cannot_see_rename_or_archive_a_session(store: Store, clock: FakeClock) -> None:
    (mine,) = await _conversations(store, clock, "alice's plan")
    for attempt in (
        store.rename(mine, OTHER, "taken over"),
        store.set_archived(mine, OTHER, True),
        store.get_summary(mine, OTHER),
        store.rename("ses-unknown", OWNER, "x"),
        store.set_archived("ses-unknown", OWNER, True),
    ):
        with pytest.raises(NotFound):
            await attempt
    assert await store.list_sessions(OTHER, 10, 0, archived=None) == []
    assert await store.list_sessions(OTHER, 10, 0, query="alice") == []
    summary = await store.get_summary(mine, OWNER)
    assert (summary.title, summary.archived) == ("alice's plan", False)


async def test_list_filters_by_archived_and_searches_titles_literally(store: Store, clock: FakeClock) -> None:
    ids = await _conversations(
        store, clock, "100% done", "100 percent", "a_b", "axb", "Report ÄBC", "report äbc 2", "back\\slash", "其他 对话"
    )
    pct, percent, under, axb, upper, lower, slash, other = ids
    await store.set_archived(other, OWNER, True)
    await store.create(Commit(new_session(OTHER, query="Report of someone else")))

    async def found(query: str | None = None, archived: bool | None = False) -> list[str]:
        return [x.session_id for x in await store.list_sessions(OWNER, 50, 0, query=query, archived=archived)]

    assert await found() == ids[:-1][::-1]
    assert await found(archived=True) == [other]
    assert await found(archived=None) == ids[::-1]
    assert await found("%") == [pct]  # no wildcards: % and _ are themselves
    assert await found("_") == [under]
    assert await found("100%") == [pct]
    assert await found("a_b") == [under]
    assert await found("x") == [axb]
    assert await found("\\") == [slash]
    assert await found("REPORT") == [lower, upper]
    assert await found("äbc") == [lower, upper]  # case-insensitive beyond ASCII
    assert await found("ÄBC 2") == [lower]
    assert await found("对话") == []  # archived
    assert await found("对话", archived=None) == [other]
    assert await found("no such title") == []
    assert await found("") == ids[:-1][::-1]
    page = [x.session_id for x in await store.list_sessions(OWNER, 2, 1, query="r")]
    assert page == [upper, percent]  # newest first among "report äbc 2", "Report ÄBC", "100 percent"
