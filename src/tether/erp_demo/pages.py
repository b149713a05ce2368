"""The ERP's native form pages (seed §10's deep links), plain HTML without scripts:

- ``GET /form/{formId}?bill={id}``: the bill, read-only;
- ``GET /form/{formId}?staging={sId}``: a staged op — create / update as a form prefilled from its
  payload whose Save posts to ``POST /form/{formId}/save?staging={sId}`` (the same write path as
  every write, and the op is marked executed); delete / examine / generate as a confirmation;
- ``GET /ui/todos``: the user's AI todos; ``GET/POST /ui/login``: sets the ``erp_token`` cookie.

Every value is escaped (the data holds hostile text on purpose) and the pages are served with a
Content-Security-Policy that allows no script at all. Saves carry a CSRF value bound to the token.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any
from urllib.parse import parse_qs, quote

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.exc import DataError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from tether.erp_demo import login_gate, meta, reads, staging
from tether.erp_demo.auth import csrf_for
from tether.erp_demo.errors import ErpError, Invalid, LoginFailed, NotFound, Unauthorized
from tether.erp_demo.forms import BY_ID, Field, Form
from tether.erp_demo.schema import TABLES
from tether.erp_demo.users import User, bearer, login, resolve
from tether.erp_demo.writes import resolve_ref

COOKIE = "erp_token"
CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'self'; base-uri 'none'"
OP_LABELS = {"create": "新增", "update": "修改", "delete": "删除", "examine": "审核", "generate": "生成"}
STATUS_LABELS = {"draft": "待确认", "confirmed": "待处理", "executing": "处理中", "executed": "已完成", "failed": "失败",
                 "cancelled": "已取消", "expired": "已过期", "examined": "已审核"}  # fmt: skip
BLANK_LINES = 3
STYLE = (
    "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}"
    ".err{color:#b00}.muted{color:#777}input,select,textarea{font:inherit}textarea{width:30em;height:4em}"
)


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    text = f"<!doctype html><html lang='zh'><head><meta charset='utf-8'><title>{esc(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>"
    headers = {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
    }
    return HTMLResponse(text, status_code=status, headers=headers)


def _root(request: Request) -> str:
    return str(request.scope.get("root_path") or "/erp").rstrip("/")


def _safe_next(value: str | None, root: str) -> str:
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value and "\n" not in value:
        return value
    return f"{root}/ui/todos"


def _token(request: Request) -> str:
    return bearer(request.headers.get("authorization")) or request.cookies.get(COOKIE, "")


# ---- rendering ---------------------------------------------------------------------------------------


def _options(conn: sa.Connection, user: User, form: Form) -> dict[str, list[dict[str, str]]]:
    config = meta.form_config_of(conn, user, form.form_id)
    fields = config["master"] + (config["detail"]["fields"] if config["detail"] else [])
    return {f["column"]: f["options"] for f in fields if f["options"]}


def _shown(f: Field, value: Any, row: dict[str, Any], options: dict[str, list[dict[str, str]]]) -> str:
    if f.type == "ref" and f.column.endswith("_id"):
        stem = f.column[:-3]
        named = row.get(f"{stem}_name") or row.get(f"{stem}_bill_no") or row.get(f"{stem}_code")
        code = row.get(f"{stem}_code") or value  # the code a person knows, not the internal id
        if named and named != code:
            return f"{esc(named)} <span class='muted'>{esc(code)}</span>"
        return esc(named or value)
    label = next((o["label"] for o in options.get(f.column, []) if str(o["value"]) == str(value)), None)
    return esc(label if label is not None else value)


def _record_table(form: Form, master: dict[str, Any], options: dict[str, list[dict[str, str]]]) -> str:
    rows = "".join(
        f"<tr><th>{esc(f.label)}</th><td>{_shown(f, master.get(f.column), master, options)}</td></tr>"
        for f in form.fields
    )
    return f"<table>{rows}</table>"


def _lines_table(form: Form, lines: list[dict[str, Any]]) -> str:
    if not form.detail_table:
        return ""
    heads = "".join(f"<th>{esc(f.label)}</th>" for f in form.detail_fields)
    body = ""
    for line in lines:
        cells = []
        for f in form.detail_fields:
            value = line.get(f.column)
            if f.column == "material_id":
                value = (
                    f"{line.get('material_code') or ''} {line.get('material_name') or ''} {line.get('spec') or ''}".strip()
                    or value
                )
            cells.append(f"<td>{esc(value)}</td>")
        body += "<tr>" + "".join(cells) + "</tr>"
    return f"<h3>明细</h3><table><tr>{heads}</tr>{body}</table>"


def render_bill(conn: sa.Connection, user: User, form: Form, bill_id: str, root: str) -> HTMLResponse:
    record = reads.read_record(conn, user, form.form_id, bill_id)
    master = record["master"]
    title = f"{form.name} {master.get('bill_no') or master.get('code') or ''}"
    options = _options(conn, user, form)
    status = str(master.get("status") or "")
    # the bill's own status label (草稿, 已审核), as in its table below; the op labels otherwise
    shown = next((o["label"] for o in options.get("status", []) if str(o["value"]) == status), None)
    body = (
        f"<h1>{esc(title)}</h1><p class='muted'>{esc(shown or STATUS_LABELS.get(status, status))}"
        f" · 版本 {esc(master.get('version'))}</p>{_record_table(form, master, options)}"
        f"{_lines_table(form, record['details'])}<p><a href='{esc(root)}/ui/todos'>我的 AI 待办</a></p>"
    )
    return page(title, body)


def _input(f: Field, name: str, value: Any, options: dict[str, list[dict[str, str]]]) -> str:
    shown = "" if value is None else value
    if f.type == "select" and f.column in options:
        opts = "<option value=''></option>" + "".join(
            f"<option value='{esc(o['value'])}'{' selected' if str(o['value']) == str(shown) else ''}>{esc(o['label'])}</option>"
            for o in options[f.column]
        )
        return f"<select name='{esc(name)}'>{opts}</select>"
    if f.type == "textarea":
        return f"<textarea name='{esc(name)}'>{esc(shown)}</textarea>"
    kind = "date" if f.type == "date" else "text"
    limit = f" maxlength='{f.max_length}'" if f.max_length else ""
    return f"<input type='{kind}' name='{esc(name)}' value='{esc(shown)}'{limit}>"


def _ref_named(conn: sa.Connection, user: User, f: Field, value: Any) -> tuple[Any, str]:
    """A reference as a person types it (the record's code or bill number, which the write path
    takes as well as its id) and the record's name, for a hint beside the input — only for a
    record the user may use (the write path's own lookup, row scope included)."""
    if f.type != "ref" or not f.ref or value in (None, "") or f.ref not in BY_ID:
        return value, ""
    table = TABLES[BY_ID[f.ref].table]
    key = table.c.code if "code" in table.c else table.c.bill_no if "bill_no" in table.c else None
    found = resolve_ref(conn, user, BY_ID[f.ref], str(value)) if key is not None else None
    if key is None or found is None:
        return value, ""
    name = table.c.name if "name" in table.c else key
    row = conn.execute(sa.select(key, name).where(table.c.id == found)).first()
    return (row[0], "" if row[1] == row[0] else str(row[1])) if row else (value, "")


def _prefill(conn: sa.Connection, user: User, form: Form, op: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    values, lines = _prefill_ids(conn, user, form, op)
    for f in form.fields:
        values[f.column] = _ref_named(conn, user, f, values.get(f.column))[0]
    for line in lines:
        for f in form.detail_fields:
            if f.column in line:
                line[f.column] = _ref_named(conn, user, f, line[f.column])[0]
    return values, lines


def _prefill_ids(conn: sa.Connection, user: User, form: Form, op: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data, details = staging.split_payload(staging.op_dict(op)["payload"])
    if op.op_type == "update" and op.target_bill_id:
        record = reads.read_record(conn, user, form.form_id, op.target_bill_id)
        current = {f.column: record["master"].get(f.column) for f in form.fields}
        lines = (
            details
            if details is not None
            else [{f.column: d.get(f.column) for f in form.detail_fields} for d in record["details"]]
        )
        return {**current, **data}, [dict(line) for line in lines or []]
    defaults = {  # a date's default is the write's to fill (today, 30 days after the bill date)
        f.column: ("" if f.type == "date" else f.default) for f in form.fields if f.default and not f.read_only
    }
    return {**defaults, **data}, [dict(line) for line in details or []]


def _hints(
    conn: sa.Connection, user: User, form: Form, values: dict[str, Any], lines: list[dict[str, Any]]
) -> dict[str, str]:
    """Input name → the name of the record a reference input holds."""
    hints = {f.column: _ref_named(conn, user, f, values.get(f.column))[1] for f in form.fields if f.type == "ref"}
    for i, line in enumerate(lines):
        for f in form.detail_fields:
            if f.type == "ref":
                hints[f"line{i}.{f.column}"] = _ref_named(conn, user, f, line.get(f.column))[1]
    return {k: v for k, v in hints.items() if v}


def _edit_form(
    form: Form,
    values: dict[str, Any],
    lines: list[dict[str, Any]],
    options: dict[str, list[dict[str, str]]],
    errors: dict[str, str],
    hints: dict[str, str],
) -> str:
    def hint(name: str) -> str:
        return f" <span class='muted'>{esc(hints[name])}</span>" if name in hints else ""

    rows = ""
    for f in form.fields:
        if f.read_only:
            continue
        mark = " *" if f.required else ""
        err = f"<div class='err'>{esc(errors[f.column])}</div>" if f.column in errors else ""
        rows += (
            f"<tr><th>{esc(f.label)}{mark}</th><td>{_input(f, f.column, values.get(f.column), options)}"
            f"{hint(f.column)}{err}</td></tr>"
        )
    html_ = f"<table>{rows}</table>"
    if form.detail_table:
        editable = [f for f in form.detail_fields if not f.read_only]
        heads = "".join(f"<th>{esc(f.label)}{' *' if f.required else ''}</th>" for f in editable)
        body = ""
        for i, line in enumerate([*lines, *({} for _ in range(BLANK_LINES))]):
            cells = ""
            for f in editable:
                key = f"details[{i}].{f.column}"
                err = f"<div class='err'>{esc(errors[key])}</div>" if key in errors else ""
                name = f"line{i}.{f.column}"
                cells += f"<td>{_input(f, name, line.get(f.column), options)}{hint(name)}{err}</td>"
            body += f"<tr>{cells}</tr>"
        html_ += f"<h3>明细（物料填编码或 id；空行忽略）</h3><table><tr>{heads}</tr>{body}</table>"
    return html_


def render_staging(
    conn: sa.Connection, user: User, form: Form, op: Any, root: str, *,
    values: dict[str, Any] | None = None, lines: list[dict[str, Any]] | None = None, errors: dict[str, str] | None = None,
) -> HTMLResponse:  # fmt: skip
    title = f"AI 待办：{OP_LABELS[op.op_type]}{form.name}"
    head = (
        f"<h1>{esc(title)}</h1><p>状态：<b>{esc(STATUS_LABELS.get(op.status, op.status))}</b>"
        f" · 提议于 {esc(staging.op_dict(op)['created_at'])} · 有效至 {esc(staging.op_dict(op)['expire_at'])}</p>"
    )
    if op.status not in staging.WAITING:
        outcome = staging.outcome(conn, op, root)
        body = f"<p>{esc(outcome['resultMsg'] or '')}</p><p class='err'>{esc(outcome['errorMsg'] or '')}</p>"
        if outcome["link"]:
            body += f"<p><a href='{esc(outcome['link'])}'>查看单据</a></p>"
        return page(title, head + body)
    if op.status == "draft":  # shown, not saved: the confirm belongs to the chat
        return page(title, head + f"<p class='err'>{esc(staging.UNCONFIRMED)}</p>")
    action = f"{root}/form/{form.form_id}/save?staging={quote(op.id)}"
    hidden = f"<input type='hidden' name='csrf' value='{esc(csrf_for(user.token))}'>"
    problems = ""
    if errors:
        problems = (
            "<div class='err'>请修改后再保存：<ul>"
            + "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in errors.items())
            + "</ul></div>"
        )
    if op.op_type in ("create", "update"):
        prefilled, prelines = _prefill(conn, user, form, op)
        shown = values if values is not None else prefilled
        shown_lines = lines if lines is not None else prelines
        hints = _hints(conn, user, form, shown, shown_lines)
        inner = _edit_form(form, shown, shown_lines, _options(conn, user, form), errors or {}, hints)
        button = "保存"
    else:
        inner = _confirmation(conn, user, form, op)
        button = f"确认{OP_LABELS[op.op_type]}"
    body = f"{problems}<form method='post' action='{esc(action)}'>{hidden}{inner}<p><button type='submit'>{esc(button)}</button></p></form>"
    return page(title, head + body, status=422 if errors else 200)


def _confirmation(conn: sa.Connection, user: User, form: Form, op: Any) -> str:
    if op.op_type == "generate":
        ref = staging.op_dict(op)["source_ref"] or {}
        source = reads.form_of(ref.get("formId", ref.get("form_id")))
        record = reads.read_record(conn, user, source.form_id, str(ref.get("billId", ref.get("bill_id"))))
        picked = ref.get("lineIds", ref.get("line_ids"))
        lines = [d for d in record["details"] if picked is None or d["id"] in picked]
        return (
            f"<p>据{esc(source.name)} {esc(record['master'].get('bill_no'))} 生成{esc(form.name)}：</p>"
            f"{_record_table(source, record['master'], _options(conn, user, source))}{_lines_table(source, lines)}"
        )
    record = reads.read_record(conn, user, form.form_id, op.target_bill_id)
    return f"{_record_table(form, record['master'], _options(conn, user, form))}{_lines_table(form, record['details'])}"


def _todos(conn: sa.Connection, user: User, root: str) -> HTMLResponse:
    ops = staging.todos(conn, user, every=True)[:50]
    rows = "".join(
        f"<tr><td>{esc(o['created_at'])}</td><td>{esc(OP_LABELS.get(o['op_type'], o['op_type']))}"
        f"{esc(BY_ID[o['target_form_id']].name)}</td><td>{esc(STATUS_LABELS.get(o['status'], o['status']))}</td>"
        f"<td><a href='{esc(root)}/form/{esc(o['target_form_id'])}?staging={esc(quote(o['id']))}'>打开</a></td></tr>"
        for o in ops
    )
    body = f"<h1>我的 AI 待办</h1><p class='muted'>{esc(user.name)}</p><table><tr><th>时间</th><th>操作</th><th>状态</th><th></th></tr>{rows}</table>"
    return page("我的 AI 待办", body)


# ---- saving ------------------------------------------------------------------------------------------


def _posted(
    form: Form, fields: dict[str, list[str]], creating: bool
) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    data: dict[str, Any] = {}
    for f in form.fields:
        if f.read_only or f.column not in fields:
            continue
        value = fields[f.column][0]
        if value.strip() or not creating:
            data[f.column] = value if value.strip() else None
    if not form.detail_table:
        return data, None
    lines: dict[int, dict[str, Any]] = {}
    for key, values in fields.items():
        if key.startswith("line") and "." in key:
            index, _, column = key[4:].partition(".")
            if re.fullmatch(r"[0-9]{1,4}", index) and form.detail_field(column) and values[0].strip():
                lines.setdefault(int(index), {})[column] = values[0].strip()
    return data, [lines[i] for i in sorted(lines)]


def _raise(exc: Exception) -> Any:
    raise exc


def save(conn: sa.Connection, user: User, form: Form, op_id: str, fields: dict[str, list[str]], root: str) -> Response:
    op = staging.expire(conn, staging.owned(conn, user, op_id, lock=True))
    if op.target_form_id != form.form_id:
        raise NotFound(f"no staged op {op_id[:64]!r} for form {form.form_id}")
    if fields.get("csrf", [""])[0] != csrf_for(user.token):
        return page("已拒绝", "<p class='err'>页面已过期，请重新打开。</p>", status=403)
    if op.status not in staging.WAITING:
        return render_staging(conn, user, form, op, root)
    if op.status == "draft":  # nothing is written before the person's confirm in the chat
        return page("尚未确认", f"<p class='err'>{esc(staging.UNCONFIRMED)}</p>", status=409)
    payload: dict[str, Any] | None = None
    values: dict[str, Any] = {}
    lines: list[dict[str, Any]] | None = None
    if op.op_type in ("create", "update"):
        values, lines = _posted(form, fields, creating=op.op_type == "create")
        payload = {**values, "details": lines} if lines is not None else dict(values)
    try:
        with conn.begin_nested():
            done = staging.perform(conn, user, op, payload)
    except Invalid as exc:  # the user fixes the form; the op keeps waiting
        return render_staging(
            conn, user, form, op, root, values=values, lines=lines, errors=exc.errors or {"": exc.msg}
        )
    except ErpError as exc:
        op = staging.finish(conn, user, op, functools.partial(_raise, exc))
        return render_staging(conn, user, form, op, root)
    op = staging.finish(conn, user, op, lambda: done)
    if op.result_bill_id:
        return RedirectResponse(f"{root}/form/{form.form_id}?bill={quote(op.result_bill_id)}", status_code=303)
    return render_staging(conn, user, form, op, root)


# ---- routes ------------------------------------------------------------------------------------------


def _who(erp: Any, request: Request) -> User | None:
    try:
        with erp.tx() as conn:
            user: User = resolve(conn, _token(request))
            return user
    except Unauthorized:
        return None


def _to_login(request: Request) -> Response:
    root = _root(request)
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"{root}/ui/login?next={quote(here, safe='')}", status_code=303)


def _guarded(erp: Any, request: Request, fn: Any) -> Response:
    """Run a page as the logged-in user (cookie or Authorization); to the login page otherwise."""
    user = _who(erp, request)
    if user is None:
        return _to_login(request)
    try:
        with erp.tx() as conn:
            response: Response = fn(conn, user, _root(request))
            return response
    except ErpError as exc:
        return page("出错了", f"<p class='err'>{esc(exc.msg)}</p>", status=exc.status)
    except DataError:
        return page("出错了", "<p class='err'>输入含有数据库无法保存的字符。</p>", status=422)


def install(app: FastAPI, erp: Any) -> None:
    def guarded(request: Request, fn: Any) -> Response:
        return _guarded(erp, request, fn)

    @app.get("/form/{form_id}")
    def form_page(form_id: str, request: Request, bill: str | None = None) -> Response:
        op_id = request.query_params.get("staging")

        def show(conn: sa.Connection, user: User, root: str) -> Response:
            form = reads.form_of(form_id)
            if op_id:
                op = staging.expire(conn, staging.owned(conn, user, op_id))
                if op.target_form_id != form.form_id:
                    raise NotFound(f"no staged op {op_id[:64]!r} for form {form.form_id}")
                return render_staging(conn, user, form, op, root)
            if bill:
                return render_bill(conn, user, form, bill, root)
            raise NotFound("open a bill (?bill=) or a staged op (?staging=)")

        return guarded(request, show)

    @app.post("/form/{form_id}/save")
    async def form_save(form_id: str, request: Request) -> Response:
        fields = parse_qs((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
        op_id = request.query_params.get("staging", "")

        def run(conn: sa.Connection, user: User, root: str) -> Response:
            return save(conn, user, reads.form_of(form_id), op_id, fields, root)

        return await run_in_threadpool(guarded, request, run)

    @app.get("/ui/todos")
    def todos_page(request: Request) -> Response:
        return guarded(request, _todos)

    _install_login(app, erp)


def _install_login(app: FastAPI, erp: Any) -> None:
    @app.get("/ui/login")
    def login_page(request: Request, next: str | None = None) -> Response:
        return _login_form(_safe_next(next, _root(request)))

    @app.post("/ui/login")
    async def login_post(request: Request) -> Response:
        fields = parse_qs((await request.body()).decode("utf-8", "replace"))
        username, password = (fields.get(k, [""])[0] for k in ("username", "password"))
        target = _safe_next(fields.get("next", [""])[0], _root(request))

        def check() -> str:
            with erp.tx() as conn:
                return login(conn, username[:64], password[:256], erp.settings.token_ttl_s)[0]

        try:  # through the host's login limits, as the JSON login (``login_gate``)
            token = await login_gate.checked(erp, request, username[:64], check)
        except LoginFailed:
            return _login_form(target, "用户名或密码错误")
        except StarletteHTTPException as exc:  # locked out: the host's 429, said on the form
            if exc.status_code != 429:
                raise
            locked = _login_form(target, f"登录失败次数过多，请稍后再试（{exc.detail}）")
            locked.status_code = 429
            locked.headers.update(exc.headers or {})
            return locked
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE, token, httponly=True, samesite="lax", path=_root(request) or "/", max_age=erp.settings.token_ttl_s
        )
        return response


def _login_form(next_url: str, error: str = "") -> HTMLResponse:
    err = f"<p class='err'>{esc(error)}</p>" if error else ""
    body = (
        f"<h1>登录 ERP</h1>{err}<form method='post'><input type='hidden' name='next' value='{esc(next_url)}'>"
        "<p><label>用户名 <input name='username'></label></p><p><label>密码 <input type='password' name='password'></label></p>"
        "<p><button type='submit'>登录</button></p></form>"
    )
    return page("登录 ERP", body, status=401 if error else 200)
