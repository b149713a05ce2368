"""The turn loop: ask the model, act on its reply, decide, repeat until a step ends the turn.

Each round acts (``Turn.act``: tools run, events queue) and then decides (``decision.decide``);
the work lives in ``Turn`` (turn.py). Guardrails: max model rounds, max tool calls (in
``Turn.act``), a wall-clock limit per turn, a timeout per tool call (in the pipeline).

Every state change is committed before the next external call with side effects: before a tool
that writes or calls back (the pipeline's ``before_execute``, ``issue_job``) and at the end of
each round. A model call has none, so what a turn starts with (a new session, a user's message,
an answer) is stored with its first round, or while the model is still answering if that takes
longer than ``STORE_AFTER_S``: a quick round costs one durable commit, not two, and a slow one is
listed, stoppable and shown within that time. A crash in between loses only what no one has seen
(its caller's request fails, as with a crash later in a turn): events are published after their
commit, and a staged proposal and its audit row ride the same commit (``SqlStore.attach``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tether.core.closing import close_open_calls
from tether.core.decision import Fail, NextStep, RunAgain, decide
from tether.core.error_messages import MODEL_FAILED, TURN_ROUNDS, TURN_TIMEOUT
from tether.core.messages import ModelReply
from tether.errors import ModelError

if TYPE_CHECKING:
    from tether.core.turn import Turn


TIMED_OUT_IN_FLIGHT = "cut off by the turn's time limit while in flight; its effect is unknown"
TIMED_OUT_NOT_RUN = "not run: the turn reached its time limit"
STORE_AFTER_S = 0.05  # a model round that takes longer stores what the turn holds meanwhile


async def run_turn(turn: Turn) -> NextStep:
    turn.open()
    limits = turn.limits
    try:
        async with asyncio.timeout(limits.turn_timeout_s):
            for _ in range(limits.max_rounds):
                reply = await (_storing_round(turn) if turn.pending else turn.ask_model())
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


async def _storing_round(turn: Turn) -> ModelReply:
    """Ask the model; if it has not answered within ``STORE_AFTER_S``, commit what is queued."""
    loop = asyncio.get_running_loop()
    storing: list[asyncio.Task[None]] = []
    timer = loop.call_later(STORE_AFTER_S, lambda: storing.append(loop.create_task(turn.commit())))
    try:
        return await turn.ask_model()
    finally:
        timer.cancel()
        if storing:
            await storing[0]
