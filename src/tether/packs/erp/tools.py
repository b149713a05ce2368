"""The ERP tools (seed 003 §5): find_forms, kg_search, read_form_data, lookup_record, query_data.

Each one passes the form gate (``authz.granted_form``) before it touches the ERP, forwards the
caller's own token and nothing else, and returns bounded, plainly labelled data. Read filters are
only the form's whitelisted filter parameters: any other key — ``bUpdate``, ``bUpdateAll``, a
procedure parameter — is refused here and never reaches the ERP. A refused token (expired,
logged out) is not retried with any other account: the tool asks the user to log in again.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tether.pack import Interaction, Tool, ToolContext, ToolError, tool
from tether.packs.erp import authz, messages
from tether.packs.erp.catalog import FormEntry, search
from tether.packs.erp.client import ErpRefused, LoginExpired
from tether.packs.erp.identity import ErpIdentityProvider
from tether.packs.erp.kg import KnowledgeGraph
from tether.packs.erp.port import ErpPort
from tether.packs.erp.query_data import QueryService
from tether.packs.erp.settings import ErpPackSettings

MAX_PAGE_SIZE = 100
BILL_NO = re.compile(r"^[A-Z]{2}\d{6}-\d{4}$", re.I)  # the ERP's bill numbers: QT202612-0001
MAX_TEXT = 200
LOGIN_MESSAGE = "ERP 登录已过期，请重新登录后再发送请求。(The ERP login expired: log in again, then resend.)"


@dataclass
class Erp:
    """What the tools, the routes and the identity provider share."""

    settings: ErpPackSettings
    client: ErpPort
    query: QueryService
    kg: KnowledgeGraph
    identity: ErpIdentityProvider  # who a token is (cached): the tools' row scope comes from it

    @property
    def queryable(self) -> bool:
        """Whether tether may read the ERP's database (query_data, kg_search): not on Tryton,
        whose rows only Tryton's rights hand out."""
        return self.settings.kind != "tryton"

    async def granted_forms(self, ctx: ToolContext) -> list[FormEntry]:
        forms = [FormEntry.from_erp(f) for f in await self.client.forms(token(ctx))]
        return [f for f in forms if f.form_id in ctx.grants]

    async def form_config(self, ctx: ToolContext, form_id: Any) -> dict[str, Any]:
        return await self.client.config(token(ctx), authz.granted_form(ctx, form_id))


def version_of(base_version: Any) -> int | str:
    """A record's version as the ERP gave it: the demo ERP's counter, Tryton's ``_timestamp`` text."""
    text = str(base_version)
    return int(text) if text.isdigit() else text


def token(ctx: ToolContext) -> str:
    if not ctx.credential:
        raise LoginExpired()
    return ctx.credential


def login_guard(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """A refused token pauses the session for a new login (LOGIN_EXPIRED); nothing is retried."""

    @functools.wraps(fn)
    async def guarded(ctx: ToolContext, **kwargs: Any) -> Any:
        try:
            return await fn(ctx, **kwargs)
        except LoginExpired:
            return Interaction("login", {"message": LOGIN_MESSAGE})

    return guarded


def no_bill(config: dict[str, Any], bill_no: str) -> ToolError:
    form = str(config.get("name") or config.get("formId") or "record")
    return ToolError(
        f"no {form} with bill number {bill_no} that you can see",
        code=messages.NO_BILL,
        params={"form": form, "bill_no": bill_no},
    )


async def record_of(erp: Erp, ctx: ToolContext, config: dict[str, Any], record_id: str) -> dict[str, Any]:
    """One record by its id, as the user sees it: an id the ERP does not know (or hides from them)
    is refused as a bill number nobody can see is."""
    form = str(config.get("formId"))
    try:
        return await erp.client.record(token(ctx), form, record_id)
    except ErpRefused as exc:
        if exc.status != 404:
            raise
        name = str(config.get("name") or form)
        params = {"form": name, "record": record_id}
        raise ToolError(
            f"no {name} record {record_id} that you can see", code=messages.NO_RECORD, params=params
        ) from None


def bad_arguments(tool_name: str, message: str) -> ToolError:
    """The model's own arguments refused (page bounds, an empty query): the person can only rephrase."""
    return ToolError(message, code=messages.BAD_ARGUMENTS, params={"tool": tool_name})


def whitelist(config: dict[str, Any], filters: dict[str, Any]) -> dict[str, Any]:
    """Only the form's declared filter parameters, with scalar values; anything else is refused."""
    allowed = {str(f["name"]): f for f in config.get("filters") or []}
    unknown = sorted(k for k in filters if k not in allowed)
    form = str(config.get("name") or config.get("formId"))
    if unknown:
        names = ", ".join(sorted(allowed)) or "none"
        said = ", ".join(str(k)[:40] for k in unknown[:5])
        raise ToolError(
            f"not a filter of form {config.get('formId')}: {', '.join(unknown)}; its filters are: {names}",
            code=messages.UNKNOWN_FILTER,
            params={"form": form, "filters": said},
        )
    clean: dict[str, Any] = {}
    for key, value in filters.items():
        if value is None or value == "":
            continue
        label = str(allowed[key].get("label") or key)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ToolError(
                f"filter {key!r} must be a single text, number or date value",
                code=messages.BAD_FILTER,
                params={"filter": label},
            )
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise ToolError(
                f"filter {key!r} is longer than {MAX_TEXT} characters",
                code=messages.FILTER_TOO_LONG,
                params={"filter": label, "max": MAX_TEXT},
            )
        clean[key] = value
    return clean


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + "…"
    return value


# json.dumps(values, ensure_ascii=False, default=str) without building an encoder per row
_encode_row = json.JSONEncoder(ensure_ascii=False, default=str).encode


def fit_rows(rows: list[dict[str, Any]], budget: int) -> tuple[list[str], list[list[Any]], bool]:
    """Rows as (columns, values) trimmed to ``budget`` characters of JSON."""
    columns = list(dict.fromkeys(c for row in rows for c in row))  # every column, in first-seen order
    out: list[list[Any]] = []
    used = len(json.dumps(columns, ensure_ascii=False))
    for row in rows:
        values = [
            v[:MAX_TEXT] + "…" if isinstance(v, str) and len(v) > MAX_TEXT else v  # _short, inlined
            for v in map(row.get, columns)
        ]
        size = len(_encode_row(values)) + 1
        if out and used + size > budget:
            return columns, out, True
        out.append(values)
        used += size
    return columns, out, False


# labels of the columns that views add to a form's own fields (names resolved from references)
RECORD_COUNT = "记录数"  # a count column's header
COMMON_LABELS = {
    "bill_no": "单号",
    "bill_date": "单据日期",
    "status": "状态",
    "remark": "备注",
    "customer_code": "客户编码",
    "customer_name": "客户名称",
    "supplier_code": "供应商编码",
    "supplier_name": "供应商名称",
    "salesman_name": "业务员",
    "material_code": "物料编码",
    "material_name": "物料名称",
    "spec": "规格型号",
    "unit": "单位",
    "warehouse_name": "仓库",
    "line_no": "行号",
    "qty": "数量",
    "unit_price": "单价",
    "amount": "金额",
    "total_amount": "金额合计",
    "order_count": "订单数",
    "invoiced": "开票金额",
    "received": "收款金额",
    "difference": "差额",
}


def labels_of(config: dict[str, Any], columns: list[str] | None = None) -> dict[str, str]:
    labels = {c: label for c, label in COMMON_LABELS.items() if columns is None or c in columns}
    fields = list(config.get("master") or []) + list((config.get("detail") or {}).get("fields") or [])
    labels.update({str(f["column"]): str(f.get("label") or f["column"]) for f in fields})
    return labels if columns is None else {c: v for c, v in labels.items() if c in columns}


def value_labels(config: dict[str, Any], columns: list[str]) -> dict[str, dict[str, str]]:
    """Display labels of coded values (status draft → 草稿) for the columns shown."""
    fields = list(config.get("master") or []) + list(config.get("filters") or [])
    labels: dict[str, dict[str, str]] = {}
    for f in fields:
        column = str(f.get("column") or f.get("name"))
        if column in columns and f.get("options"):
            labels[column] = {str(o["value"]): str(o["label"]) for o in f["options"] if "value" in o}
    return labels


async def query_labels(erp: Erp, ctx: ToolContext, result: dict[str, Any]) -> dict[str, str]:
    """A query's columns by the labels of the forms whose views it read (最近入库, not
    last_in_date), the common ones (单号, 客户名称) and 记录数 for a count."""
    columns = list(result["columns"])
    labels = {c: COMMON_LABELS[c] for c in columns if c in COMMON_LABELS}
    views = erp.query.views()
    for table in result.pop("tables", ()):
        form_id = views.get(str(table).lower())
        if form_id is not None and form_id in ctx.grants:
            own = labels_of(await erp.form_config(ctx, form_id), columns)
            labels.update({c: v for c, v in own.items() if c not in labels})
    if "record_count" in columns:
        labels.setdefault("record_count", RECORD_COUNT)
    return labels


def build_tools(erp: Erp) -> list[Tool]:
    @tool(read_only=True, audited=True)
    @login_guard
    async def find_forms(ctx: ToolContext, query: str = "") -> Any:
        """Search the ERP forms you may use by name, alias or what they answer (e.g. 应收, 库存, 报价单).
        Returns form ids, names and what each answers; use the id with read_form_data."""
        forms = await erp.granted_forms(ctx)
        found = search(forms, query[:200])
        return {"query": query[:200], "forms": found, "granted": len(forms)}

    @tool(read_only=True, audited=True)
    @login_guard
    async def kg_search(ctx: ToolContext, query: str, level: str = "L2") -> Any:
        """Look up the ERP knowledge graph by a term: level L2 = a form's neighbours and document flow
        (报价单 → 销售订单 → 发货单 → 销售发票 → 收款单); L3 = field label → column → table. Truncated."""
        if level not in ("L2", "L3"):
            raise bad_arguments("kg_search", "level must be 'L2' (forms and flow) or 'L3' (fields)")
        if not query.strip():
            raise bad_arguments("kg_search", "query must name a form, a business term or a field label")
        return await erp.kg.search(ctx.grants, query.strip()[:100], level)

    @tool(read_only=True, audited=True)
    @login_guard
    async def read_form_data(
        ctx: ToolContext,
        form_id: str,
        filters: dict[str, Any] | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> Any:
        """Rows of one ERP form (list + total) with the form's own filter parameters only (see
        its config: customer_name, bill_no, date_from, ...). page starts at 1; page_size ≤ 100."""
        config = await erp.form_config(ctx, form_id)
        params = whitelist(config, filters or {})
        if page < 1 or not 1 <= page_size <= MAX_PAGE_SIZE:
            raise bad_arguments("read_form_data", f"page must be ≥ 1 and page_size between 1 and {MAX_PAGE_SIZE}")
        answer = await erp.client.read(token(ctx), str(config.get("formId", form_id)), params, page, page_size)
        columns, rows, cut = fit_rows(answer["rows"], erp.settings.result_chars)
        total = answer["total"]
        more = page * page_size < total
        return {
            "form": {"formId": config.get("formId", form_id), "name": config.get("name")},
            "filters": params,
            "labels": labels_of(config, columns),
            "valueLabels": value_labels(config, columns),
            "columns": columns,
            "rows": rows,
            "total": total,
            "page": page,
            "pageSize": page_size,
            "truncated": cut,
            "nextPage": page + 1 if more else None,
        }

    @tool(read_only=True, audited=True)
    @login_guard
    async def lookup_record(ctx: ToolContext, form_id: str, record_id: str) -> Any:
        """One ERP record with all its fields and its detail lines; record_id is its id or its bill
        number (e.g. QT202612-0001)."""
        config = await erp.form_config(ctx, form_id)
        form = str(config.get("formId", form_id))
        wanted = authz.record_id(record_id)
        if BILL_NO.match(wanted) and any(f.get("name") == "bill_no" for f in config.get("filters") or []):
            found = await erp.client.read(token(ctx), form, {"bill_no": wanted}, 1, 5)
            exact = [r for r in found["rows"] if str(r.get("bill_no", "")).upper() == wanted.upper()]
            if not exact:
                raise no_bill(config, wanted)
            wanted = str(exact[0]["id"])
        answer = await record_of(erp, ctx, config, wanted)
        master = {k: _short(v) for k, v in (answer.get("master") or {}).items()}
        details = answer.get("details") or []
        columns, rows, cut = fit_rows(details, erp.settings.result_chars)
        labels = labels_of(config, columns)
        return {
            "form": {"formId": config.get("formId", form_id), "name": config.get("name")},
            "labels": labels_of(config, list(master)),
            "valueLabels": value_labels(config, list(master)),
            "master": master,
            "details": {"columns": columns, "rows": rows, "labels": labels, "total": len(details), "truncated": cut},
        }

    @tool(read_only=True, audited=True)
    @login_guard
    async def query_data(ctx: ToolContext, question: str, sql: str | None = None) -> Any:
        """Ad-hoc read-only SQL over the viw_* views of your forms, only when no form answers the
        question: one SELECT (CTEs, joins, GROUP BY allowed); your brand's filter is added for you.
        Leave sql empty to reuse this question's validated SQL."""
        who = await erp.identity.lookup(token(ctx))  # the same login as every other ERP tool
        if not question.strip():
            raise bad_arguments("query_data", "question must say what the query answers (it keys the SQL cache)")
        own = who.profile.get("jurisdiction") == "own"  # a salesperson who sees only their customers
        result = await erp.query.run(ctx, question.strip()[:1000], sql, own_rows=own)
        if isinstance(result, dict):
            result["labels"] = await query_labels(erp, ctx, result)
        return result

    return [find_forms, kg_search, read_form_data, lookup_record, query_data]
