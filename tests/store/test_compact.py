"""The stored encodings decode to exactly what was encoded, and the format's constants never change."""

from __future__ import annotations

import hashlib
import json
import math

from hypothesis import given
from hypothesis import strategies as st

from tether.core.events import EventType, RuntimeEvent
from tether.core.session import Step
from tether.store import compact

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
timestamps = st.floats(allow_nan=False, allow_infinity=False) | st.floats(1.6e9, 2.2e9)
type_names = st.sampled_from([t.value for t in EventType]) | st.text(min_size=1, max_size=20)
turns = st.none() | st.sampled_from(["turn-1", "turn-2"]) | st.text(max_size=30)


def test_the_format_constants_are_frozen() -> None:
    """Stored bodies depend on them: the dictionary never changes, event codes are only appended."""
    assert hashlib.sha256(compact.DICT_V1).hexdigest()[:16] == "d6970f0066087dbc"
    assert hashlib.sha256(",".join(compact.EVENT_TYPES[:21]).encode()).hexdigest()[:16] == "7df3ec66eadb51b8"
    assert len(set(compact.EVENT_TYPES)) == len(compact.EVENT_TYPES)


@given(json_values)
def test_dumps_writes_what_the_standard_library_writes(value: object) -> None:
    """Audit hashes of rows written with json.dumps must verify with compact.dumps."""
    assert compact.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@given(st.text())
def test_a_packed_body_unpacks_to_the_same_text(text: str) -> None:
    packed = compact.pack(text)
    assert compact.unpack(packed) == text and compact.unpack(text) == text
    if not text.startswith("\x01"):  # the marker: such a text (never JSON) is always compressed
        assert len(packed) <= len(text.encode())
        assert compact.unpack(text.encode()) == text  # plain bytes, as migration 0003 writes them


def test_packing_compresses_what_tether_writes() -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "query_sessions", "arguments": json.dumps({"days": 30})}}]}  # fmt: skip
    text = compact.dumps(call)
    assert len(compact.pack(text)) < len(text) / 3
    large = compact.dumps({"rows": [[i, f"贵金属 {i}"] for i in range(2000)]})  # past the small window
    assert len(compact.pack(large)) < len(large.encode()) / 4
    assert compact.unpack(compact.pack(large)) == large


@given(
    st.integers(1, 2**40),
    st.lists(
        st.tuples(st.integers(1, 3), turns, type_names, timestamps, st.dictionaries(st.text(), json_values)),
        min_size=1,
        max_size=12,
    ),
)
def test_an_event_batch_reads_back_bit_for_bit(
    first: int, spec: list[tuple[int, str | None, str, float, dict[str, object]]]
) -> None:
    seq = first
    evs = []
    for gap, turn, kind, ts, data in spec:
        evs.append(RuntimeEvent(seq, "ses-1", turn, kind, ts, data))
        seq += gap
    last, text = compact.event_batch(evs)
    assert last == evs[-1].seq
    back = list(compact.batch_events("ses-1", text))
    assert [e.to_json() for e in back] == [e.to_json() for e in evs]
    assert all(math.copysign(1, a.ts) == math.copysign(1, b.ts) for a, b in zip(back, evs, strict=True))


@given(st.text(), st.text(), st.dictionaries(st.text(), json_values), timestamps, timestamps)
def test_a_step_record_reads_back_bit_for_bit(
    call: str, tool: str, args: dict[str, object], start: float, end: float
) -> None:
    step = Step("turn-1", call, tool, args, "PENDING", {"ignored": True}, start, end)
    back = compact.record_step(compact.step_record(step))
    assert back.to_json() == {**step.to_json(), "result": None}
