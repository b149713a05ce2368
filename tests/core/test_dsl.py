"""DSL compile (parameters vs step references), replay through the pipeline, refusals."""

from __future__ import annotations

import asyncio

import pytest

from tests.core.harness import ALICE, BOB, harness
from tether.core.session import Status
from tether.errors import Conflict, InvalidInput, NotFound
from tether.models.scripted import calls, text


def test_compile_turns_request_values_into_params_and_outputs_into_references(db_url: str) -> None:
    async def main() -> None:
        replies = [
            calls(("echo", {"text": "alpha"})),
            calls(("echo", {"text": "h-alpha-0001"})),
            calls(("add", {"a": 4, "b": 5})),
            text("ok"),
        ]
        async with harness(db_url, replies) as h:
            s = await h.runtime.start_session(ALICE, "run the test on alpha with 4 and 5", {})
            assert s.status is Status.SUCCEEDED and s.last_dsl_id
            dsl = await h.store.get_dsl(s.last_dsl_id, ALICE)
            assert dsl.params == {"text": "alpha", "a": 4, "b": 5}
            assert [st.args for st in dsl.steps] == [
                {"text": "${params.text}"},
                {"text": "${steps.s1.handle_id}"},
                {"a": "${params.a}", "b": "${params.b}"},
            ]
            event = [e for e in await h.events(s.session_id) if e.type == "DSL_COMPILED"]
            assert event[0].data == {"dslId": s.last_dsl_id}

    asyncio.run(main())


def test_replay_uses_overrides_and_flows_new_outputs_without_the_model(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("echo", {"text": "alpha"})), calls(("echo", {"text": "h-alpha-0001"})), text("ok")]
        async with harness(db_url, replies) as h:
            s = await h.start("run the test on alpha")
            calls_before = len(h.model.requests)
            result = await h.replayer.execute(s.last_dsl_id or "", ALICE, {"text": "beta"})
            assert result["status"] == "SUCCEEDED"
            assert [st["output"]["text"] for st in result["steps"]] == ["beta", "h-beta-0001"]
            assert len(h.model.requests) == calls_before
            log = await h.store.executions(s.last_dsl_id or "")
            assert log[0]["status"] == "SUCCEEDED" and log[0]["params"] == {"text": "beta"}
            replay_session = await h.store.load(result["executionId"], ALICE)
            assert replay_session.status is Status.SUCCEEDED

    asyncio.run(main())


def test_replay_waits_for_async_steps(db_url: str) -> None:
    async def main() -> None:
        replies = [calls(("slow_job", {"label": "first"})), text("ok")]
        async with harness(db_url, replies) as h:
            s = await h.start()
            await h.callback(0, payload={"v": 1})
            s = await h.load(s.session_id)
            replay = asyncio.create_task(h.replayer.execute(s.last_dsl_id or "", ALICE, {"label": "second"}))
            while len(h.counters.tickets) < 2:
                await asyncio.sleep(0.02)
            assert not replay.done()
            await h.callback(1, payload={"v": 2})
            result = await replay
            assert result["status"] == "SUCCEEDED" and result["steps"][0]["output"] == {"v": 2}

    asyncio.run(main())


def test_replay_refuses_unknown_params_changed_schemas_and_other_owners(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [calls(("add", {"a": 1, "b": 2})), text("3")]) as h:
            s = await h.start()
            dsl_id = s.last_dsl_id or ""
            with pytest.raises(InvalidInput, match="unknown DSL parameter"):
                await h.replayer.execute(dsl_id, ALICE, {"c": 1})
            with pytest.raises(NotFound):
                await h.replayer.execute(dsl_id, BOB, {})
            add = h.deps.pipeline.registry.get("add")
            assert add is not None
            add.parameters = {**add.parameters, "required": ["a", "b", "c"]}
            with pytest.raises(Conflict, match="changed its argument schema"):
                await h.replayer.execute(dsl_id, ALICE, {})

    asyncio.run(main())


def test_failed_replay_step_stops_and_is_logged(db_url: str) -> None:
    async def main() -> None:
        async with harness(db_url, [calls(("echo", {"text": "alpha"})), text("ok")]) as h:
            s = await h.start()
            echo = h.deps.pipeline.registry.get("echo")
            assert echo is not None

            async def broken(args: dict[str, object], ctx: object) -> object:
                raise RuntimeError("the echo service is down")

            echo.run = broken
            result = await h.replayer.execute(s.last_dsl_id or "", ALICE, {"text": "beta"})
            assert result["status"] == "FAILED" and "the echo service is down" in result["error"]
            assert (await h.store.executions(s.last_dsl_id or ""))[0]["status"] == "FAILED"

    asyncio.run(main())
