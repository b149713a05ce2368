"""The terminal view of a session's events (``tether ask``, the demo)."""

from __future__ import annotations

import io

from tether.progress import Progress


def _shown(*events: dict[str, object]) -> str:
    out = io.StringIO()
    progress = Progress(out)
    for i, event in enumerate(events, 1):
        progress.show({"id": i, **event})
    return out.getvalue()


def test_a_finished_call_shows_its_time_and_a_background_job_says_so() -> None:
    text = _shown(
        {"type": "TOOL_EXECUTION_FINISHED", "data": {"toolId": "query_sessions_handle", "durationMs": 16.98}},
        {"type": "TOOL_CALLBACK_RECEIVED", "data": {"toolId": "analyze_keywords_async", "status": "SUCCEEDED"}},
        {"type": "TOOL_EXECUTION_FINISHED", "data": {"toolId": "analyze_keywords_async", "kind": "value"}},
    )
    assert "✔ query_sessions_handle (16.98 ms)" in text
    assert "✔ analyze_keywords_async (in the background, result by callback)" in text
    assert "- ms" not in text
