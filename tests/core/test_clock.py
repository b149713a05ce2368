"""The core takes time from the runtime's ``Clock``: moving it moves every time a turn records —
the session's, each event's, each step's, an async job's deadline and a compiled DSL's."""

from __future__ import annotations

import asyncio

from tests.core.harness import ALICE, harness
from tests.store.builders import FakeClock
from tether.core.session import Status
from tether.core.turn import Limits
from tether.models.scripted import calls, text

T0 = 1_000_000.0  # far from now: a stray time.time() would stand out by decades


def test_a_moved_clock_is_the_time_of_everything_a_turn_records(db_url: str) -> None:
    clock = FakeClock(T0)
    replies = [
        calls(("add", {"a": 1, "b": 2}, "c1")),
        text("3"),
        calls(("slow_job", {"label": "x"}, "c2")),
    ]

    async def main() -> None:
        async with harness(db_url, replies, clock=clock, limits=Limits(job_timeout_s=50)) as h:
            s = await h.runtime.start_session(ALICE, "run the test", {})
            assert s.status is Status.SUCCEEDED
            assert s.created_at == T0 and s.updated_at == T0
            first = await h.events(s.session_id)
            assert {e.ts for e in first} == {T0}
            assert [(st.started_at, st.finished_at) for st in s.executed_steps] == [(T0, T0)]
            dsl = await h.store.get_dsl(str(s.last_dsl_id))
            assert dsl.created_at == T0

            clock.advance(3600)
            s = await h.runtime.post_message(s.session_id, ALICE, "run the test again")
            assert s.status is Status.WAITING_ASYNC_CALLBACK
            later = [e for e in await h.events(s.session_id) if e.seq > first[-1].seq]
            assert later and {e.ts for e in later} == {T0 + 3600}
            stored = await h.load(s.session_id)
            assert stored.created_at == T0 and stored.updated_at == T0 + 3600
            job = await h.store.get_job(h.counters.tickets[0].job_id)
            assert job is not None and job.deadline == T0 + 3600 + 50 and job.created_at == T0 + 3600

    asyncio.run(main())
