"""One retry policy for a model call, configured once (``TETHER_MODEL_RETRIES`` and
``TETHER_MODEL_BACKOFF_S``) and applied once, by the turn: the runtime the server builds tries a
failing model exactly retries + 1 times, waiting the configured doubling back-off between tries."""

from __future__ import annotations

import asyncio
import time

from tether.core.session import Owner, Status
from tether.models.scripted import ScriptedModel, text
from tether.settings import create_settings
from tether.wiring import build_services


def run(sqlite_url: str, fail_times: int, retries: int, backoff_s: float) -> tuple[Status, int, float]:
    model = ScriptedModel([text("fine")], fail_times=fail_times)
    settings = create_settings(database_url=sqlite_url, packs="", model_retries=retries, model_backoff_s=backoff_s)

    async def main() -> tuple[Status, int, float]:
        services = build_services(settings, model=model)
        limits = services.runtime.deps.limits
        assert (limits.model_retries, limits.model_backoff_s) == (retries, backoff_s)  # from the settings
        await services.start(sweep=False)
        try:
            started = time.monotonic()
            s = await services.runtime.start_session(Owner("alice", "t1"), "hello", {})
            return s.status, len(model.requests), time.monotonic() - started
        finally:
            await services.stop()

    return asyncio.run(main())


def test_a_failing_model_is_tried_retries_plus_one_times(sqlite_url: str) -> None:
    status, attempts, _ = run(sqlite_url, fail_times=5, retries=3, backoff_s=0.01)
    assert (status, attempts) == (Status.FAILED, 4)


def test_a_recovering_model_answers_after_the_configured_back_off(sqlite_url: str) -> None:
    status, attempts, took = run(sqlite_url, fail_times=2, retries=2, backoff_s=0.2)
    assert (status, attempts) == (Status.SUCCEEDED, 3)
    assert took >= 0.2 + 0.4  # 0.2 s, then doubled
