"""DSL replay: run a compiled workflow's steps through the same pipeline and authorisation as a
live turn, without the model, waiting for async steps, and log the execution.

A replay runs in a replay session of its own (owned by the caller), so its tool calls, events
and async jobs are recorded and observable like any session's. A step that proposes a write
stages a new draft and ends the replay (status PROPOSED): it never writes; the person confirms
the new op through /api/ops like any other.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tether.core.dsl import bind_params, check_schemas, render_args
from tether.core.events import EventType
from tether.core.messages import ToolCall, tool_message
from tether.core.ports import DslStore
from tether.core.resumption import failed_job
from tether.core.running import TurnRunner
from tether.core.session import AgentSession, Identity, Owner, Status, new_id, split_caller
from tether.errors import TetherError

POLL_S = 0.1


class Replayer:
    def __init__(self, turns: TurnRunner, dsl_store: DslStore) -> None:
        self.turns = turns
        self.deps = turns.deps
        self.dsl_store = dsl_store

    async def execute(self, dsl_id: str, who: Owner | Identity, overrides: dict[str, Any]) -> dict[str, Any]:
        """Replay as ``who``: grants are checked again, as the replaying caller, at every step."""
        owner, identity = split_caller(who)
        dsl = await self.dsl_store.get_dsl(dsl_id, owner)
        registry = self.deps.pipeline.registry
        check_schemas(dsl, registry)
        params = bind_params(dsl, overrides, registry)  # checked before anything runs
        s = AgentSession.new(owner, f"Replay of {dsl.title}", {"_replayOf": dsl_id}, self.deps.clock.now())
        s.transcript.append(
            {"role": "user", "content": f"replay {dsl_id} with {json.dumps(params, ensure_ascii=False)}"}
        )
        turn = self.turns.turn(s, resumed=False, identity=identity)
        turn.emit(EventType.SESSION_STARTED, {"replayOf": dsl_id, "params": params})
        await turn.commit()
        allowed = frozenset(step.tool_id for step in dsl.steps)
        outputs: dict[str, Any] = {}
        results: list[dict[str, Any]] = []
        error: str | None = None
        for step in dsl.steps:
            try:
                args = render_args(step.args, params, outputs)
            except TetherError as exc:
                error = exc.message
                break
            call = ToolCall(new_id("call"), step.tool_id, json.dumps(args, ensure_ascii=False))
            s.append({"role": "assistant", "content": None, "tool_calls": [call.to_message()]})
            turn.emit(
                EventType.TOOL_CALL_REQUESTED,
                {"toolCallId": call.id, "toolId": call.name, "stepId": step.step_id},
            )
            outcome = await self.deps.pipeline.run(call, allowed, turn._context(call), turn.emit, turn.commit)
            s.append(tool_message(call.id, outcome.content))
            s.executed_steps.append(outcome.step)
            kind, data = outcome.kind, outcome.data
            if kind == "async_job":
                kind, data = await self._wait(data["externalJobId"])
            proposed = outcome.interaction is not None and outcome.interaction.kind == "proposal"
            results.append(
                {
                    "stepId": step.step_id,
                    "toolId": step.tool_id,
                    "args": args,
                    "kind": kind,
                    "status": "PROPOSED" if proposed else "FAILED" if kind in ("error", "interaction") else "SUCCEEDED",
                    "output": data,
                }
            )
            await turn.commit()
            if proposed:  # a new draft: only a person's confirm executes it, never the replay
                break
            if kind == "error":
                error = f"step {step.step_id} ({step.tool_id}) failed: {data.get('error')}"
                break
            if kind == "interaction":
                error = f"step {step.step_id} ({step.tool_id}) needs a person; replays cannot answer for them"
                break
            outputs[step.step_id] = data
        status = "FAILED" if error else "PROPOSED" if results and results[-1]["status"] == "PROPOSED" else "SUCCEEDED"
        s.transition(Status.FAILED if error else Status.SUCCEEDED)
        s.last_error, s.last_error_code = error, None
        turn.emit(EventType.TURN_FINISHED, {"status": status, "reason": error})
        await turn.commit()
        await self.dsl_store.log_execution(dsl_id, s.session_id, params, status, results, error)
        return {
            "dslId": dsl_id,
            "executionId": s.session_id,
            "status": status,
            "params": params,
            "steps": results,
            "error": error,
        }

    async def _wait(self, job_id: str) -> tuple[str, Any]:
        clock = self.deps.clock
        deadline = clock.now() + self.deps.limits.job_timeout_s
        while clock.now() < deadline:
            job = await self.deps.store.get_job(job_id)
            if job is not None and job.status != "PENDING":
                if job.status == "SUCCEEDED":
                    return "value", job.result
                return "error", failed_job(job)
            await asyncio.sleep(POLL_S)
        return "error", {"error": f"async job {job_id} did not finish within {self.deps.limits.job_timeout_s:g}s"}
