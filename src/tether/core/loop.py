"""The turn loop: ask the model, act on its reply, decide, repeat until a step ends the turn.

Each round acts (``Turn.act``: tools run, events queue) and then decides (``decision.decide``);
the work lives in ``Turn`` (turn.py). Guardrails: max model rounds, max tool calls (in
``Turn.act``), a wall-clock limit per turn, a timeout per tool call (in the pipeline). Every state
change is committed before the next external call.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tether.core.closing import close_open_calls
from tether.core.decision import Fail, NextStep, RunAgain, decide
from tether.core.error_messages import MODEL_FAILED, TURN_ROUNDS, TURN_TIMEOUT
from tether.errors import ModelError

if TYPE_CHECKING:
    from tether.core.turn import Turn


TIMED_OUT_IN_FLIGHT = "cut off by the turn's time limit while in flight; its effect is unknown"
TIMED_OUT_NOT_RUN = "not run: the turn reached its time limit"


async def run_turn(turn: Turn) -> NextStep:
    await turn.begin()
    limits = turn.limits
    try:
        async with asyncio.timeout(limits.turn_timeout_s):
            for _ in range(limits.max_rounds):
                reply = await turn.ask_model()
                step = decide(await turn.act(reply))
                if not isinstance(step, RunAgain):
                    return await turn.finish(step)
                await turn.commit()  # the tool results before the next model call
        return await turn.finish(
            Fail(
                f"stopped after {limits.max_rounds} model rounds without a final answer "
                "(raise TETHER_MAX_ROUNDS if the task needs more)",
                TURN_ROUNDS,
                {"rounds": limits.max_rounds},
            )
        )
    except TimeoutError:
        close_open_calls(turn, TIMED_OUT_IN_FLIGHT, TIMED_OUT_NOT_RUN)  # the transcript stays valid
        return await turn.finish(
            Fail(
                f"the turn took longer than its {limits.turn_timeout_s:g}s limit (TETHER_TURN_TIMEOUT_S)",
                TURN_TIMEOUT,
                {"seconds": f"{limits.turn_timeout_s:g}"},
            )
        )
    except ModelError as exc:
        return await turn.finish(Fail(f"the model endpoint failed: {exc.message}", MODEL_FAILED, {}))
