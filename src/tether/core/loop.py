"""The turn loop: ask the model, act on its reply, repeat until a decision ends the turn.

Each round returns a ``Decision``; the work lives in ``Turn`` (turn.py). Guardrails: max model
rounds, max tool calls (in ``Turn.act``), a wall-clock limit per turn, a timeout per tool call (in
the pipeline). Every state change is committed before the next external call.
"""

from __future__ import annotations

import asyncio
import enum
from typing import TYPE_CHECKING

from tether.core.closing import close_open_calls
from tether.errors import ModelError

if TYPE_CHECKING:
    from tether.core.turn import Turn


TIMED_OUT_IN_FLIGHT = "cut off by the turn's time limit while in flight; its effect is unknown"
TIMED_OUT_NOT_RUN = "not run: the turn reached its time limit"


class Decision(enum.Enum):
    RUN_AGAIN = "run_again"
    FINAL = "final"
    WAIT_CALLBACK = "wait_callback"
    WAIT_USER = "wait_user"
    WAIT_CONFIRMATION = "wait_confirmation"
    FAIL = "fail"


async def run_turn(turn: Turn) -> Decision:
    await turn.begin()
    limits = turn.limits
    try:
        async with asyncio.timeout(limits.turn_timeout_s):
            for _ in range(limits.max_rounds):
                reply = await turn.ask_model()
                decision = await turn.act(reply)
                if decision is not Decision.RUN_AGAIN:
                    return await turn.finish(decision)
        return await turn.fail(
            f"stopped after {limits.max_rounds} model rounds without a final answer "
            "(raise TETHER_MAX_ROUNDS if the task needs more)"
        )
    except TimeoutError:
        close_open_calls(turn, TIMED_OUT_IN_FLIGHT, TIMED_OUT_NOT_RUN)  # the transcript stays valid
        return await turn.fail(
            f"the turn took longer than its {limits.turn_timeout_s:g}s limit (TETHER_TURN_TIMEOUT_S)"
        )
    except ModelError as exc:
        return await turn.fail(f"the model endpoint failed: {exc.message}")
