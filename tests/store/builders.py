"""Builders for store tests: sessions, rounds of a turn, events, jobs, and a clock to move."""

from __future__ import annotations

import json
from typing import Any

from tether.core.events import RuntimeEvent
from tether.core.pipeline import frame
from tether.core.ports import AsyncJob, Commit
from tether.core.session import AgentSession, Owner, Step

OWNER = Owner("u-alice", "brand-1/sub-1")
OTHER = Owner("u-bob", "brand-1/sub-1")


class FakeClock:
    def __init__(self, t: float = 1_700_000_000.25) -> None:
        self.t = t

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def new_session(owner: Owner = OWNER, query: str = "请分析最近30天贵金属规则调整相关的客服问题") -> AgentSession:
    s = AgentSession.new(owner, query, {"tenant": owner.tenant, "lang": "zh"})
    s.append({"role": "system", "content": "你是客服分析助手。"})
    s.append({"role": "user", "content": query})
    return s


def events(s: AgentSession, first_seq: int, *types: str, turn: str = "turn-1") -> list[RuntimeEvent]:
    """Events numbered from ``first_seq``; the session's counter follows, as the runtime's does."""
    s.last_seq = max(s.last_seq, first_seq + len(types) - 1)
    return [
        RuntimeEvent(first_seq + i, s.session_id, turn, t, 1_700_000_000.5 + i, {"n": first_seq + i})
        for i, t in enumerate(types)
    ]


def tool_round(s: AgentSession, n: int, seq: int) -> Commit:
    """One model round: an assistant tool call, its tool message, a step and three events."""
    call = f"call-{n}"
    s.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "query_customer_sessions", "arguments": json.dumps({"days": 30, "n": n})},
                }
            ],
        }
    )
    result = {"columns": ["id", "问题"], "rows": [[n, "贵金属交易规则调整后保证金如何计算"]], "total": 1}
    s.append(
        {
            "role": "tool",
            "tool_call_id": call,
            "content": frame("query_customer_sessions", "table", result),
        }
    )
    # a step's result is stored once: as its tool message's data
    s.executed_steps.append(Step("turn-1", call, "query_customer_sessions", {"days": 30}, "SUCCEEDED", result))
    evs = events(s, seq, "TOOL_CALL_REQUESTED", "TOOL_EXECUTION_STARTED", "TOOL_EXECUTION_FINISHED")
    return Commit(s, evs)


def job(s: AgentSession, job_id: str, deadline: float = 0.0, call: str = "call-async") -> AsyncJob:
    return AsyncJob(job_id, s.session_id, call, "analyze_keywords_async", "sha256:abc", deadline=deadline)


def comparable(s: AgentSession) -> dict[str, Any]:
    """The persisted fields of a session (bookkeeping included)."""
    return {
        "id": s.session_id,
        "owner": (s.owner.user_id, s.owner.tenant),
        "title": s.title,
        "query": s.query,
        "global_context": s.global_context,
        "status": s.status,
        "transcript": s.transcript,
        "steps": [st.to_json() for st in s.executed_steps],
        "skills": s.selected_skill_ids,
        "pending": s.pending_interaction,
        "waiting": s.waiting_job_ids,
        "turn": s.current_turn_id,
        "error": s.last_error,
        "dsl": s.last_dsl_id,
        "summary": s.summary,
        "summary_upto": s.summary_upto,
        "version": s.version,
        "last_seq": s.last_seq,
        "persisted_count": s.persisted_count,
        "replaced": s.replaced,
    }
