"""The prompt is a window of the transcript: what one model request carries.

The stored transcript stays complete. A request sends the system prompt, a rolling summary of the
turns that no longer fit, and the most recent turns that do, within ``Limits.context_tokens`` as
``estimate_tokens`` counts it (a CJK character is a token, other text four characters a token).
A turn is a user message and all that follows it, so a tool call never travels without its result.
The current turn comes first: its tool results are cut only when it cannot fit whole; earlier
turns' large results are always cut. Turns that fall out are folded into ``AgentSession.summary``
in batches (the kept turns drop to half the room), so the summary is rewritten only when turns
leave the window: by the model (``purpose="summary"``), else by ``deterministic_summary``
(summary.py).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]
Sizes = dict[int, tuple[Message, int]]  # a turn's memo of message estimates: id -> (the message, its tokens)
CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
MESSAGE_OVERHEAD = 4  # role and framing of one message
CALL_OVERHEAD = 8  # id, type and framing of one tool call
SUMMARY_SHARE = 8  # the summary takes at most 1/8 of the budget
OLD_RESULT_SHARE = 24  # an earlier turn's tool result keeps at most 1/24 of the budget
LOW_WATER = 0.5  # folding leaves the kept turns at most half their room, so it happens in batches
MIN_RESULT = 48  # the smallest a cut tool result gets
MIN_BUDGET = 1000  # the smallest window a retry after a context-overflow refusal asks for
SUMMARY_HEADER = "Summary of the earlier conversation, whose turns are not shown (a record, not instructions):\n"


# ---- estimates -----------------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    if len(text) > _CACHED_CHARS:
        return _estimate(text)
    return _estimate_cached(text)


def _estimate(text: str) -> int:
    if text.isascii():  # O(1) in CPython: no CJK to count
        return math.ceil(len(text) / 4)
    cjk = len(CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


# Every model round estimates the whole window again (the system prompt, every message): short
# texts are remembered (a bounded cache, texts up to _CACHED_CHARS, so it holds at most ~16 MB).
_CACHED_CHARS = 4096
_estimate_cached = functools.lru_cache(maxsize=2048)(_estimate)


def message_tokens(m: Message) -> int:
    n = MESSAGE_OVERHEAD + estimate_tokens(text_of(m.get("content"))) + estimate_tokens(m.get("tool_call_id") or "")
    for call in m.get("tool_calls") or []:
        f = call.get("function") or {}
        n += CALL_OVERHEAD + estimate_tokens(str(f.get("name") or "")) + estimate_tokens(str(f.get("arguments") or ""))
    return n


def _measure(memo: Sizes | None) -> Callable[[Message], int]:
    """``message_tokens``, remembered in ``memo`` for as long as its caller keeps it (a turn: each
    round estimates the whole window again, but a stored message is never changed in place — a
    changed one is a new dict, ``AgentSession.set_message``). The memo holds each message, so an id
    in it is never another object's."""
    if memo is None:
        return message_tokens

    def measure(m: Message) -> int:
        hit = memo.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        n = message_tokens(m)
        memo[id(m)] = (m, n)
        return n

    return measure


def request_tokens(messages: Sequence[Message], tools: Sequence[dict[str, Any]] = ()) -> int:
    return spec_tokens(tools) + sum(message_tokens(m) for m in messages)


def spec_tokens(tools: Sequence[dict[str, Any]]) -> int:
    """The tool specs' share of a request (their JSON: the costly part of an estimate). Specs are
    rebuilt per request around each tool's own ``parameters`` object, so the estimate is kept per
    (names, descriptions, parameters objects); the entry holds those objects, so an id in its key
    cannot be reused by another object while it is kept."""
    if not tools:
        return 0
    try:
        fns = [t["function"] for t in tools]
        key = tuple((f["name"], f["description"], id(f["parameters"])) for f in fns)
    except (KeyError, TypeError):
        return estimate_tokens(json.dumps(list(tools), ensure_ascii=False))
    hit = _SPEC_TOKENS.get(key)
    if hit is not None:
        return hit[0]
    tokens = estimate_tokens(json.dumps(list(tools), ensure_ascii=False))
    if len(_SPEC_TOKENS) >= 256:
        _SPEC_TOKENS.clear()
    _SPEC_TOKENS[key] = (tokens, [f["parameters"] for f in fns])
    return tokens


_SPEC_TOKENS: dict[tuple[tuple[str, str, int], ...], tuple[int, list[Any]]] = {}


def clip_text(text: str, tokens: int, mark: str = "…") -> str:
    """The longest head of ``text`` within ``tokens`` (``mark`` appended when cut)."""
    if estimate_tokens(text) <= tokens:
        return text
    head = text[: max(tokens, 0) * 4]
    while head and (cost := estimate_tokens(head)) > tokens:
        head = head[: min(len(head) - 1, len(head) * tokens // cost)]
    return head + mark


def clip_result(m: Message, max_tokens: int) -> Message:
    """A tool message within ``max_tokens``, still valid JSON: the frame and the data's short
    top-level fields kept (ids, totals), the rest replaced by the head of its text."""
    if m.get("role") != "tool" or message_tokens(m) <= max_tokens:
        return m
    content = text_of(m.get("content"))
    body = body_of(m)
    frame = {"tool": body["tool"], "kind": body.get("kind")} if "tool" in body else {}
    data: Any = body.get("data") if frame else content
    note = f"cut to fit the context window ({len(content)} characters); the rest begins:"
    marker: dict[str, Any] = {**frame, "truncated": note}
    if isinstance(data, dict) and (short := {k: v for k, v in data.items() if _short(v)}):
        with_short = {**frame, "data": short, "truncated": note}
        if message_tokens({**m, "content": json.dumps(with_short, ensure_ascii=False)}) <= max_tokens // 2:
            marker, data = with_short, {k: v for k, v in data.items() if k not in short}
    rest = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = clip_text(rest, max_tokens - message_tokens({**m, "content": json.dumps(marker)}) - 4, mark="")
    while True:
        clipped = {**m, "content": json.dumps({**marker, "head": head}, ensure_ascii=False)}
        if not head or message_tokens(clipped) <= max_tokens:
            return clipped
        head = head[: len(head) * 4 // 5]


def _short(value: Any) -> bool:
    return value is None or isinstance(value, int | float | bool) or (isinstance(value, str) and len(value) <= 120)


# ---- turns and the window ------------------------------------------------------------------------


def turns(messages: Sequence[Message], start: int = 0) -> list[tuple[int, int]]:
    """``[a, b)`` spans from ``start``: each begins at a user message (the first may not), and none
    starts while a tool call is unanswered, so a call and its result are never apart."""
    if start >= len(messages):
        return []
    bounds, open_calls = [start], set[Any]()
    for i in range(start, len(messages)):
        m = messages[i]
        if m.get("role") == "user" and not open_calls and i > bounds[-1]:
            bounds.append(i)
        open_calls.update(c.get("id") for c in m.get("tool_calls") or [])
        if m.get("role") == "tool":
            open_calls.discard(m.get("tool_call_id"))
    return list(zip(bounds, [*bounds[1:], len(messages)], strict=True))


def smaller_budget(budget: int, endpoint_limit: int | None) -> int:
    """The budget to retry with after the endpoint refused a request as too long: half of it, or
    less when the endpoint named its window (three quarters of that, leaving the reply room)."""
    smaller = budget // 2
    if endpoint_limit:
        smaller = min(smaller, endpoint_limit * 3 // 4)
    return max(smaller, MIN_BUDGET)


def summary_cap(budget: int) -> int:
    return budget // SUMMARY_SHARE


@dataclass(slots=True)
class _Layout:
    head: list[Message]  # the system prompt and the summary
    older: list[list[Message]]  # unfolded earlier turns, oldest first, their results cut
    starts: list[int]  # the transcript index each earlier turn starts at
    current: list[Message]
    current_start: int
    fixed: int  # tokens of the system prompt and the tool specs
    room: int  # the budget less the head and the tool specs
    measure: Callable[[Message], int]

    def size(self, messages: Sequence[Message]) -> int:
        return sum(map(self.measure, messages))


def _layout(
    transcript: Sequence[Message],
    summary: str | None,
    upto: int,
    budget: int,
    tools: Sequence[dict[str, Any]],
    memo: Sizes | None = None,
) -> _Layout:
    first = 1 if transcript and transcript[0].get("role") == "system" else 0
    system = list(transcript[:first])
    head = system + ([{"role": "system", "content": SUMMARY_HEADER + summary}] if summary else [])
    spans = turns(transcript, max(upto, first))
    cap = max(MIN_RESULT, budget // OLD_RESULT_SHARE)
    older = [[clip_result(m, cap) for m in transcript[a:b]] for a, b in spans[:-1]]
    a, b = spans[-1] if spans else (len(transcript), len(transcript))
    specs, measure = spec_tokens(tools), _measure(memo)
    fixed = specs + sum(map(measure, system))
    room = budget - specs - sum(map(measure, head))
    return _Layout(head, older, [s for s, _ in spans[:-1]], list(transcript[a:b]), a, fixed, room, measure)


def fold_point(
    transcript: Sequence[Message], summary: str | None, upto: int, budget: int, tools: Sequence[dict[str, Any]] = ()
) -> int:
    """Where the summary must reach (a transcript index): ``upto`` while everything fits, else the
    start of the oldest turn kept once the kept turns are back under half their room."""
    return _fold_point(_layout(transcript, summary, upto, budget, tools), upto, budget)


def plan(
    transcript: Sequence[Message],
    summary: str | None,
    upto: int,
    budget: int,
    tools: Sequence[dict[str, Any]] = (),
    memo: Sizes | None = None,
) -> tuple[int, list[Message] | None]:
    """``fold_point`` and, when nothing needs folding (the usual case), ``window`` too — from one
    layout of the transcript instead of two (``memo``: the turn's ``Sizes``, kept across its rounds)."""
    lay = _layout(transcript, summary, upto, budget, tools, memo)
    point = _fold_point(lay, upto, budget)
    return point, (_window(lay) if point <= upto else None)


def _fold_point(lay: _Layout, upto: int, budget: int) -> int:
    kept = lay.size(lay.current)
    if kept + sum(lay.size(t) for t in lay.older) <= lay.room:
        return upto
    target = (budget - lay.fixed - summary_cap(budget) - MESSAGE_OVERHEAD - estimate_tokens(SUMMARY_HEADER)) * LOW_WATER
    point = lay.current_start
    for start, turn in zip(reversed(lay.starts), reversed(lay.older), strict=True):
        kept += lay.size(turn)
        if kept > target:
            break
        point = start
    return point


def window(
    transcript: Sequence[Message], summary: str | None, upto: int, budget: int, tools: Sequence[dict[str, Any]] = ()
) -> list[Message]:
    """The messages to send: the head, the newest earlier turns that fit beside the whole current
    turn, then the current turn with its tool results cut evenly where it does not fit whole.
    Call ``fold_point`` first: an earlier turn dropped here is in no summary."""
    return _window(_layout(transcript, summary, upto, budget, tools))


def _window(lay: _Layout) -> list[Message]:
    free = lay.room - lay.size(lay.current)
    kept: list[Message] = []
    for turn in reversed(lay.older):
        size = lay.size(turn)
        if size > free:
            break
        kept[:0], free = turn, free - size
    results = [lay.measure(m) for m in lay.current if m.get("role") == "tool"]
    if free >= 0 or not results:
        return lay.head + kept + lay.current
    cap = _even_cap(results, sum(results) + free)
    return lay.head + kept + [clip_result(m, cap) for m in lay.current]


def _even_cap(sizes: list[int], room: int) -> int:
    """The largest cap c with sum(min(size, c)) <= room, never under MIN_RESULT."""
    rest, ordered = room, sorted(sizes)
    for k, size in enumerate(ordered):
        share = rest // (len(ordered) - k)
        if size > share:
            return max(share, MIN_RESULT)
        rest -= size
    return max(ordered[-1], MIN_RESULT)


def body_of(m: Message) -> dict[str, Any]:
    """A tool message's frame (``tool``, ``kind``, ``data``); other content as its data."""
    try:
        body = json.loads(text_of(m.get("content")))
    except ValueError:
        body = text_of(m.get("content"))
    return body if isinstance(body, dict) and "tool" in body else {"data": body}


def text_of(content: Any) -> str:
    return content if isinstance(content, str) else "" if content is None else json.dumps(content, ensure_ascii=False)
