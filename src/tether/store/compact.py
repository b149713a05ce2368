"""Compact stored bodies: what the store writes in place of plain JSON, and how it reads it back.

Three encodings, each decoding to exactly the objects that were encoded (floats included):

- ``pack`` / ``unpack``: a body is either plain UTF-8 JSON (it starts with a JSON character; every
  row written before migration 0003 is one) or ``0x01`` + raw deflate primed with ``DICT_V1``, a
  fixed dictionary of the JSON tether itself writes (transcript, frame, event and state keys), so
  even a 100-byte message compresses. A body is compressed only when that makes it smaller.
- ``event_batch`` / ``batch_events``: the events of one commit as one JSON array: the first seq, the
  turn id and the first timestamp once, then per event its type (a code from ``EVENT_TYPES``, or
  the name itself), the timestamp as the difference of its IEEE-754 bit pattern from the previous
  one (exact, a few digits) and the data.
- ``step_record`` / ``record_step``: a step (without its result, stored once in its tool message)
  as a positional array, the finish time as a bit difference from the start time.

``DICT_V1`` and ``EVENT_TYPES`` are part of the stored format: never edit or reorder them. A new
dictionary gets a new marker byte; new event types go at the end of ``EVENT_TYPES``. This module
never touches a database.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from tether.core.events import RuntimeEvent
from tether.core.session import Step

ZLIB_V1 = 0x01
MIN_PACK = 128  # bytes: below this, deflate saves a few dozen bytes for ~5 µs

# Most likely strings last: deflate reaches the end of its dictionary with the shortest distances.
DICT_V1 = "".join(
    (
        '"globalContext":{},"selectedSkillIds":[],"pendingInteraction":null,"waitingJobIds":[],',
        '"currentTurnId":"turn-","lastError":null,"lastDslId":null,"summary":null}',
        '{"kind":"question","interactionId":"int-","question":"","options":[],"fields":[',
        '"resumed":false}{"selectedSkillIds":["],"path":"rules","reason":"keyword match (',
        '{"status":"SUCCEEDED"}{"status":"FAILED"}{"dslId":"dsl-"}{"message":"',
        '{"action":"final"}{"action":"tool_calls","tools":["',
        '"externalJobId":"job-","externalJobIds":["',
        '"kind":"error","error":"","kind":"value","summary":"","durationMs":0.',
        '{"toolCallId":"call_","toolId":"","arguments":"{\\"',
        '"PENDING","SUCCEEDED","FAILED",{}',
        '{\\"tool\\": \\"\\", \\"kind\\": \\"error\\", \\"data\\": {\\"error\\": \\"\\", \\"retryable\\": false}}',
        '\\", \\"kind\\": \\"table\\", \\"data\\": {\\"columns\\": [\\"\\"], \\"rows\\": [[\\"',
        '\\", \\"kind\\": \\"handle\\", \\"data\\": {\\"handle\\": \\"',
        '{"role":"system","content":"{"role":"user","content":"',
        '{"role":"assistant","content":"',
        '{"role":"tool","tool_call_id":"call_","content":"{\\"tool\\": \\"',
        '\\", \\"kind\\": \\"value\\", \\"data\\": {\\"',
        '{"role":"assistant","content":null,"tool_calls":[{"id":"call_',
        '","type":"function","function":{"name":"","arguments":"{\\"',
    )
).encode()

# Event types by code (core.events.EventType as of migration 0003): append only.
EVENT_TYPES = (
    "SESSION_STARTED", "TURN_STARTED", "SKILLS_SELECTED", "MODEL_DECISION", "TOKEN",
    "TOOL_CALL_REQUESTED", "TOOL_EXECUTION_STARTED", "TOOL_CALLBACK_RECEIVED",
    "TOOL_EXECUTION_FINISHED", "TOOL_EXECUTION_FAILED", "WAITING_ASYNC_CALLBACK", "QUESTION",
    "FORM_COLLECT", "WRITE_PROPOSAL", "OP_RESULT", "LINK", "ASSISTANT_MESSAGE", "LOGIN_EXPIRED",
    "ERROR", "TURN_FINISHED", "DSL_COMPILED",
    "USER_MESSAGE", "INTERACTION_ANSWERED",  # the chat page's record of messages and answers
)  # fmt: skip
_TYPE_CODE = {t: i for i, t in enumerate(EVENT_TYPES)}

# A primed compressor is copied per body (priming costs ~50 µs, a copy ~3 µs). Small bodies use a
# 2 KB window and a small hash (a ~10 KB state to copy, against ~24 KB for 4 KB and memLevel 4: on
# the hot path the copy is most of a small body's cost); large ones a full 32 KB window. The
# decoder's 32 KB window reads both, and any body written with the earlier settings.
_SMALL = 2048 - 300  # the window minus deflate's lookahead (DICT_V1 fits in what is left)
_primed_small = zlib.compressobj(6, zlib.DEFLATED, -11, 2, zlib.Z_DEFAULT_STRATEGY, DICT_V1)
_primed_large = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY, DICT_V1)
_MARK = bytes([ZLIB_V1])
loads = json.loads
_D = struct.Struct("<d")
_Q = struct.Struct("<q")


def _not_json(o: object) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


# The C encoder built once (json.dumps builds one per call): half the cost on the hot path.
_fallback = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode = (
    None
    if _c_make_encoder is None
    else _c_make_encoder(None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, True)
)


def dumps(value: Any) -> str:
    """Compact JSON text, non-ASCII kept as is; ``TypeError`` for what JSON cannot hold."""
    if _encode is None:  # pragma: no cover - CPython always has the C encoder
        return _fallback.encode(value)
    return "".join(_encode(value, 0))


def pack(text: str) -> bytes:
    """The stored form of a JSON text: compressed when that is smaller, else its UTF-8 bytes.
    (A text that starts with the marker byte, which no JSON does, is always compressed.)"""
    raw = text.encode()
    plain_ok = raw[:1] != _MARK
    if plain_ok and len(raw) < MIN_PACK:
        return raw
    c = (_primed_small if len(raw) <= _SMALL else _primed_large).copy()
    packed = c.compress(raw) + c.flush()
    return _MARK + packed if len(packed) + 1 < len(raw) or not plain_ok else raw


def unpack(body: bytes | bytearray | memoryview | str) -> str:
    """The JSON text of a stored body (plain text, plain bytes or compressed)."""
    if isinstance(body, str):
        return body
    data = bytes(body)
    if data[:1] == _MARK:
        d = zlib.decompressobj(-15, DICT_V1)
        return (d.decompress(data[1:]) + d.flush()).decode()
    return data.decode()


def _bits(x: float) -> int:
    result: int = _Q.unpack(_D.pack(x))[0]
    return result


def _float(bits: int) -> float:
    result: float = _D.unpack(_Q.pack(bits))[0]
    return result


def event_batch(events: Sequence[RuntimeEvent]) -> tuple[int, str]:
    """(the last seq, the JSON text) of one commit's events, in seq order (strictly increasing)."""
    first = events[0]
    turn = first.turn_id
    ts0 = float(first.ts)
    prev_bits, prev_seq = _bits(ts0), first.seq - 1
    entries: list[list[Any]] = []
    for e in events:
        if e.seq <= prev_seq:
            raise ValueError(f"events of a commit must be in increasing seq order ({prev_seq} then {e.seq})")
        bits = _bits(float(e.ts))
        code: int | str = _TYPE_CODE.get(e.type, str(e.type))
        entry: list[Any] = [code, bits - prev_bits, e.data]
        if e.turn_id != turn or e.seq != prev_seq + 1:
            entry += [e.turn_id, e.seq]
        entries.append(entry)
        prev_bits, prev_seq = bits, e.seq
    return prev_seq, dumps([first.seq, turn, ts0, entries])


def batch_events(session_id: str, text: str) -> Iterator[RuntimeEvent]:
    """The events of one stored batch, in seq order."""
    seq, turn, ts0, entries = loads(text)
    seq -= 1
    bits = _bits(ts0)
    for entry in entries:
        code, dbits, data = entry[0], entry[1], entry[2]
        event_turn = turn
        if len(entry) > 3:
            event_turn, seq = entry[3], entry[4]
        else:
            seq += 1
        bits += dbits
        kind = EVENT_TYPES[code] if isinstance(code, int) else code
        yield RuntimeEvent(seq, session_id, event_turn, kind, _float(bits), data)


def step_record(st: Step) -> str:
    """A step without its result: the result is its tool message's data, stored once."""
    started = float(st.started_at)
    finished = _bits(float(st.finished_at)) - _bits(started)
    return dumps([st.turn_id, st.tool_call_id, st.tool_id, st.args, st.status, started, finished])


def record_step(text: str) -> Step:
    turn, call, tool, args, status, started, finished = loads(text)
    return Step(turn, call, tool, args or {}, status, None, started, _float(_bits(started) + finished))
