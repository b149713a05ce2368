"""The AI staging queue (seed §10): ``ai_op_queue`` rows proposed by the agent as the user, and the
ERP-side executor that carries them out — in one transaction, through the ERP's own write path
(``writes``), idempotently on the op id.

Life of an op: ``draft`` (staged) → ``confirmed`` (a manual op checked and waiting for the user in
the native form) → ``executed`` | ``failed``; ``cancelled`` and ``expired`` end it without a write.
A terminal op answers every later call with its recorded outcome and executes nothing again —
except ``failed``: a failed op wrote nothing (one transaction), so executing it again is a retry.

Bound to what was approved: ``execStaging`` carries the fingerprint of the values the agent
backend holds for the op (``fingerprint``: ``tether.pack.staged_fingerprint`` of type, form,
target, base version, payload and source); the op executes or validates only when its stored row
has that fingerprint, else 409 ``StagedDiffers`` (code -3) with nothing written. Every answer
says the stored row's fingerprint, so the caller can re-read what is staged before it executes.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from tether.erp_demo import facts, users, writes
from tether.erp_demo.errors import Conflict, ErpError, Invalid, NotFound, StagedDiffers
from tether.erp_demo.forms import BY_ID, Form
from tether.erp_demo.reads import form_of
from tether.erp_demo.schema import TABLES, ai_op_queue
from tether.erp_demo.users import User, utcnow
from tether.erp_demo.values import as_flag, as_int, as_text, jsonable
from tether.pack import staged_fingerprint

OP_TYPES = ("create", "update", "delete", "examine", "generate")
TERMINAL = ("executed", "failed", "cancelled", "expired")
WAITING = ("draft", "confirmed")
UNCONFIRMED = "the proposal is not confirmed yet: confirm it in the chat first, then complete it here"
STALE = "the record changed since the proposal; propose again"
_OP_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
MAX_PAYLOAD = 200_000


def _get(body: dict[str, Any], camel: str, snake: str) -> Any:
    return body.get(camel, body.get(snake))


def _payload(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid({"payload": "must be an object {column: value, ..., details?: [...]}"})
    if len(json.dumps(value, ensure_ascii=False, default=str)) > MAX_PAYLOAD:
        raise Invalid({"payload": f"is larger than {MAX_PAYLOAD} characters"})
    return value


def split_payload(payload: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """(master columns, detail lines or None): flat ``{col: v, details: [...]}`` or ``{data, details}``."""
    if isinstance(payload.get("data"), dict):
        return dict(payload["data"]), payload.get("details")
    data = {k: v for k, v in payload.items() if k != "details"}
    return data, payload.get("details")


def _check_form(op_type: str, form: Form) -> None:
    if op_type in ("create", "update", "delete", "generate") and not form.writable:
        raise Invalid({"target_form_id": f"{form.name} ({form.form_id}) is read-only"})
    if op_type == "examine" and not form.examinable:
        raise Invalid({"target_form_id": f"{form.name} ({form.form_id}) has no examine"})


def _check_payload(conn: sa.Connection, user: User, op_type: str, form: Form, payload: dict[str, Any]) -> None:
    """Types, options, references and unknown columns now; required-ness only when it executes
    (a manual op may be completed by the user in the native form)."""
    if op_type not in ("create", "update"):
        return
    data, details = split_payload(payload)
    _, errors = writes.check_master(conn, user, form, data, creating=op_type == "create", partial=True)
    if details is not None:
        _, line_errors = writes.check_details(conn, user, form, details, partial=True)
        errors.update(line_errors)
    if errors:
        raise Invalid(errors)


def create(conn: sa.Connection, user: User, body: Any, ttl_s: int) -> dict[str, Any]:
    """Stage a draft op as ``user`` (nothing is executed)."""
    if not isinstance(body, dict):
        raise Invalid({"body": "must be a JSON object"})
    op_type = _get(body, "opType", "op_type")
    if op_type not in OP_TYPES:
        raise Invalid({"op_type": f"must be one of {', '.join(OP_TYPES)}"})
    form = form_of(_get(body, "targetFormId", "target_form_id"))
    _check_form(op_type, form)
    op_id = _get(body, "sId", "id")
    if op_id is not None:
        if not isinstance(op_id, str) or not _OP_ID.match(op_id):
            raise Invalid({"sId": "must be 8-64 letters, digits, '-' or '_'"})
        existing = conn.execute(sa.select(ai_op_queue).where(ai_op_queue.c.id == op_id)).first()
        if existing is not None:
            if existing.user_id != user.id:
                raise Conflict("that op id is taken")
            return op_dict(existing)  # staging the same op twice stores it once
    payload = _payload(_get(body, "payload", "payload"))
    source_ref = _get(body, "sourceRef", "source_ref")
    target_bill = _get(body, "targetBillId", "target_bill_id")
    base_version = _get(body, "baseVersion", "base_version")
    base = as_int("base_version", base_version) if base_version is not None else None
    if op_type in ("update", "delete", "examine"):
        if not isinstance(target_bill, str) or not target_bill:
            raise Invalid({"target_bill_id": f"the id of the record to {op_type} is required"})
        row = writes.locked_record(conn, user, form, target_bill)
        if base is not None and base != row.version:
            raise Conflict(f"{STALE} (version {row.version}, proposal based on {base})")
        base = row.version
    else:
        target_bill = None
    if op_type == "generate":  # bound to the upstream bill as it is now: its version, like a target's
        source, bill_id, _ = writes.parse_source_ref(source_ref)
        if (source.form_id, form.form_id) not in writes.GENERATE:
            raise Invalid({"target_form_id": f"cannot generate {form.form_id} from {source.form_id}"})
        row = writes.locked_record(conn, user, source, bill_id)
        if base is not None and base != row.version:
            raise Conflict(f"{STALE} (the upstream bill is at version {row.version}, proposal based on {base})")
        base = row.version
    elif source_ref is not None and not isinstance(source_ref, dict):
        raise Invalid({"source_ref": "must be an object"})
    _check_payload(conn, user, op_type, form, payload)
    session_id = _get(body, "sessionId", "session_id")
    expire_in = as_int("expire_in_s", _get(body, "expireInS", "expire_in_s") or ttl_s, low=60, high=90 * 86_400)
    now = utcnow()
    values = {
        "id": op_id or uuid.uuid4().hex, "user_id": user.id, "brands_id": user.brands_id,
        "subsidiary_id": user.subsidiary_id, "op_type": op_type, "target_form_id": form.form_id,
        "target_module_id": form.module, "target_table": form.table, "target_bill_id": target_bill,
        "payload": json.dumps(payload, ensure_ascii=False, default=str),
        "source_ref": json.dumps(source_ref, ensure_ascii=False) if source_ref is not None else None,
        "base_version": base, "auto_execute": as_flag("auto_execute", _get(body, "autoExecute", "auto_execute") or False),
        "status": "draft", "session_id": as_text("session_id", session_id, 64) if session_id is not None else None,
        "created_at": now, "expire_at": now + timedelta(seconds=expire_in),
    }  # fmt: skip
    conn.execute(ai_op_queue.insert().values(**values))
    return op_dict(conn.execute(sa.select(ai_op_queue).where(ai_op_queue.c.id == values["id"])).one())


def revise(conn: sa.Connection, user: User, op_id: str, body: Any) -> Any:
    """Replace a draft's payload (edit before approve): the caller's own draft, or — for an
    approver — one ``revisable`` by them. Checked as a staged payload is, as its owner (the write
    runs in their name, within their row scope); an update is bound again to its record's version
    now (``baseVersion``). The op stays its owner's: only they confirm and execute it; the row
    records who revised it (``revised_by``, ``revised_at``)."""
    if not isinstance(body, dict):
        raise Invalid({"body": "must be a JSON object"})
    op = expire(conn, revisable(conn, user, op_id))
    owner = user if op.user_id == user.id else users.by_id(conn, op.user_id)
    if op.status != "draft":
        raise Conflict(f"the op is {op.status}; only a draft can be edited")
    if op.op_type not in ("create", "update"):
        raise Invalid({"op_type": f"a {op.op_type} has no values to edit"})
    form = BY_ID[op.target_form_id]
    payload = _payload(_get(body, "payload", "payload"))
    values: dict[str, Any] = {
        "payload": json.dumps(payload, ensure_ascii=False, default=str),
        "revised_by": user.id,
        "revised_at": utcnow(),
    }
    if op.op_type == "update":
        row = writes.locked_record(conn, owner, form, op.target_bill_id)
        base = _get(body, "baseVersion", "base_version")
        if base is not None and as_int("base_version", base) != row.version:
            raise Conflict(f"{STALE} (version {row.version}, edit based on {base})")
        values["base_version"] = row.version
    _check_payload(conn, owner, op.op_type, form, payload)
    conn.execute(ai_op_queue.update().where(ai_op_queue.c.id == op.id).values(**values))
    return conn.execute(sa.select(ai_op_queue).where(ai_op_queue.c.id == op.id)).one()


def fingerprint(row: Any) -> str:
    """The fingerprint of the op as stored (the algorithm the agent backend computes its own with)."""
    return staged_fingerprint(
        row.op_type,
        row.target_form_id,
        row.target_bill_id,
        row.base_version,
        json.loads(row.payload or "{}"),
        json.loads(row.source_ref or "null"),
    )


def _bound(op: Any, expected: Any) -> None:
    """Refuse (409, nothing written) when the caller confirmed other values than those stored."""
    if expected is None:
        return
    if not isinstance(expected, str) or expected != fingerprint(op):
        raise StagedDiffers(
            "the staged op differs from what was confirmed and approved (fingerprint mismatch): it was changed "
            "after the confirm; nothing was executed"
        )


def op_dict(row: Any) -> dict[str, Any]:
    op = {k: jsonable(v) for k, v in dict(row._mapping).items()}
    op["auto_execute"] = bool(op["auto_execute"])
    for key in ("payload", "source_ref"):
        if isinstance(op.get(key), str):
            op[key] = json.loads(op[key])
    return op


def owned(conn: sa.Connection, user: User, op_id: str, *, lock: bool = False) -> Any:
    """The caller's own op (404 for anyone else's: ownership is never revealed)."""
    query = sa.select(ai_op_queue).where(
        ai_op_queue.c.id == op_id, ai_op_queue.c.user_id == user.id, ai_op_queue.c.brands_id == user.brands_id
    )
    row = conn.execute(query.with_for_update() if lock else query).first()
    if row is None:
        raise NotFound(f"no staged op {op_id[:64]!r} of yours")
    return row


def approves(user: User, form_id: str) -> bool:
    """The user holds an approval grant that covers the form (``facts.APPROVAL_FORMS``)."""
    return any(form_id in facts.APPROVAL_FORMS.get(grant, ()) for grant in user.auths)


def revisable(conn: sa.Connection, user: User, op_id: str) -> Any:
    """The op, locked, when the caller may revise it: their own, or — as an approver — one of
    their brand and subsidiary whose form an approval grant of theirs covers. Anyone else (another
    brand, a peer without the grant): 404, as ``owned`` answers."""
    query = sa.select(ai_op_queue).where(
        ai_op_queue.c.id == op_id,
        ai_op_queue.c.brands_id == user.brands_id,
        ai_op_queue.c.subsidiary_id == user.subsidiary_id,
    )
    row = conn.execute(query.with_for_update()).first()
    if row is None or not (row.user_id == user.id or approves(user, row.target_form_id)):
        raise NotFound(f"no staged op {op_id[:64]!r} of yours")
    return row


def expire(conn: sa.Connection, row: Any) -> Any:
    if row.status in WAITING and row.expire_at <= utcnow():
        conn.execute(
            ai_op_queue.update()
            .where(ai_op_queue.c.id == row.id)
            .values(status="expired", error_msg="the proposal expired before it was executed; propose again")
        )
        return conn.execute(sa.select(ai_op_queue).where(ai_op_queue.c.id == row.id)).one()
    return row


def todos(conn: sa.Connection, user: User, every: bool = False) -> list[dict[str, Any]]:
    """The caller's ops waiting for them in the ERP — confirmed in the chat, to be completed in the
    native form — newest first; ``every``: all of them. A draft waits for its confirm in the chat,
    not here."""
    query = sa.select(ai_op_queue).where(ai_op_queue.c.user_id == user.id, ai_op_queue.c.brands_id == user.brands_id)
    if not every:
        query = query.where(ai_op_queue.c.status == "confirmed")
    rows = conn.execute(query.order_by(ai_op_queue.c.created_at.desc(), ai_op_queue.c.id).limit(200)).all()
    rows = [expire(conn, r) for r in rows]
    return [op_dict(r) for r in rows if every or r.status == "confirmed"]


# ---- executing ---------------------------------------------------------------------------------------


def _base_record(conn: sa.Connection, user: User, form: Form, op: Any) -> Any:
    """The op's record — for a generate, its upstream bill — locked, unchanged since the proposal."""
    if op.op_type == "generate":
        form, bill_id, _ = writes.parse_source_ref(json.loads(op.source_ref or "null"))
    else:
        bill_id = op.target_bill_id
    row = writes.locked_record(conn, user, form, bill_id)
    if op.base_version is not None and row.version != op.base_version:
        raise Conflict(f"{STALE} (version {row.version} now, {op.base_version} when proposed)")
    return row


def perform(conn: sa.Connection, user: User, op: Any, payload: dict[str, Any] | None = None) -> writes.Written | None:
    """Carry the op out through the write path (``payload``: what the user saved in the form)."""
    form = BY_ID[op.target_form_id]
    payload = payload if payload is not None else json.loads(op.payload or "{}")
    data, details = split_payload(payload)
    if op.op_type == "create":
        return writes.add(conn, user, form, data, details)
    _base_record(conn, user, form, op)
    if op.op_type == "generate":
        return writes.generate(conn, user, form, json.loads(op.source_ref or "null"), data)
    if op.op_type == "update":
        return writes.update(conn, user, form, op.target_bill_id, data, details, op.base_version)
    if op.op_type == "delete":
        return writes.delete(conn, user, form, op.target_bill_id, op.base_version)
    undo = payload.get("action") == "unexamine"
    return writes.examine(conn, user, form, op.target_bill_id, op.base_version, undo=undo)


def validate(conn: sa.Connection, user: User, op: Any) -> None:
    """A manual op's check at confirmation: its record (or source) is still there and unchanged."""
    if op.op_type != "create":
        _base_record(conn, user, BY_ID[op.target_form_id], op)


def _message(op: Any, done: writes.Written | None) -> str:
    form = BY_ID[op.target_form_id]
    label = done.bill_no if done and done.bill_no else (done.id if done else op.target_bill_id)
    verbs = {"create": "已新增", "update": "已修改", "delete": "已删除", "examine": "已审核", "generate": "已生成"}
    verb = (
        "已反审核"
        if op.op_type == "examine" and json.loads(op.payload or "{}").get("action") == "unexamine"
        else verbs[op.op_type]
    )
    return f"{verb}{form.name} {label}"


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ErpError):
        return exc.msg
    return f"the database refused the write ({type(exc).__name__}); nothing was written"


def finish(conn: sa.Connection, user: User, op: Any, action: Callable[[], writes.Written | None]) -> Any:
    """Run ``action`` in a savepoint; record executed or failed on the op (the same transaction)."""
    now = utcnow()
    try:
        with conn.begin_nested():
            done = action()
    except (ErpError, SQLAlchemyError) as exc:
        values: dict[str, Any] = {"status": "failed", "error_msg": _error_text(exc)[:4000], "executed_at": now}
        if isinstance(exc, Invalid) and exc.errors:
            values["result_msg"] = json.dumps(exc.errors, ensure_ascii=False)[:4000]
    else:
        values = {
            "status": "executed", "executed_at": now, "result_bill_id": done.id if done and op.op_type != "delete" else None,
            "result_msg": _message(op, done), "error_msg": None,
        }  # fmt: skip
    values.setdefault("confirmed_at", op.confirmed_at or now)
    conn.execute(ai_op_queue.update().where(ai_op_queue.c.id == op.id).values(**values))
    return conn.execute(sa.select(ai_op_queue).where(ai_op_queue.c.id == op.id)).one()


def execute(conn: sa.Connection, user: User, op_id: str, mode: Any, expected: Any = None) -> Any:
    """``execStaging``: execute (auto ops) or validate (manual ops); terminal ops answer as before.
    ``expected``: the fingerprint the caller confirmed (see the module's docstring)."""
    op = expire(conn, owned(conn, user, op_id, lock=True))
    if op.status in TERMINAL and op.status != "failed":  # a failed op wrote nothing: it may be retried
        return op
    mode = mode if mode is not None else ("execute" if op.auto_execute else "validate")
    if mode not in ("execute", "validate"):
        raise Invalid({"mode": "must be execute or validate"})
    _bound(op, expected)
    if mode == "execute":
        if op.status == "draft" and not op.auto_execute:  # seed §10: a manual op waits for its confirm
            raise Conflict(UNCONFIRMED)
        return finish(conn, user, op, lambda: perform(conn, user, op))
    try:
        with conn.begin_nested():
            validate(conn, user, op)
    except ErpError as exc:
        values: dict[str, Any] = {"status": "failed", "error_msg": exc.msg}
    else:
        values = {"status": "confirmed", "error_msg": None}
    values["confirmed_at"] = op.confirmed_at or utcnow()
    conn.execute(ai_op_queue.update().where(ai_op_queue.c.id == op.id).values(**values))
    return conn.execute(sa.select(ai_op_queue).where(ai_op_queue.c.id == op.id)).one()


def cancel(conn: sa.Connection, user: User, op_id: str) -> Any:
    op = expire(conn, owned(conn, user, op_id, lock=True))
    if op.status in WAITING:
        conn.execute(ai_op_queue.update().where(ai_op_queue.c.id == op.id).values(status="cancelled"))
        op = conn.execute(sa.select(ai_op_queue).where(ai_op_queue.c.id == op.id)).one()
    return op


def _bill_no(conn: sa.Connection, op: Any) -> str | None:
    if not op.result_bill_id:
        return None
    table = TABLES[BY_ID[op.target_form_id].table]
    if "bill_no" not in table.c:
        return None
    value = conn.execute(sa.select(table.c.bill_no).where(table.c.id == op.result_bill_id)).scalar_one_or_none()
    return str(value) if value is not None else None


def outcome(conn: sa.Connection, op: Any, root: str) -> dict[str, Any]:
    """The answer of execStaging: status, result, the link to open in the ERP."""
    link = None
    if op.status == "executed" and op.result_bill_id:
        link = f"{root}/form/{op.target_form_id}?bill={op.result_bill_id}"
    elif op.status in WAITING:
        link = f"{root}/form/{op.target_form_id}?staging={op.id}"
    ok = op.status in ("executed", "confirmed")
    return {
        "code": 1 if ok else -1,
        "sId": op.id,
        "status": op.status,
        "resultBillId": op.result_bill_id,
        "resultBillNo": _bill_no(conn, op),
        "resultMsg": op.result_msg,
        "errorMsg": op.error_msg,
        "revisedBy": op.revised_by,
        "revisedAt": jsonable(op.revised_at),
        "fingerprint": fingerprint(op),
        "link": link,
        "msg": op.result_msg
        if ok and op.result_msg
        else (op.error_msg or ("待处理" if op.status == "confirmed" else op.status)),
        "op": op_dict(op),
    }
