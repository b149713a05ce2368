"""The ERP tools' failures as a person reads them: each ``ToolError`` code the pack raises, with
a template per language over the error's ``params``. The offline planner answers with these in the
language asked (``Pack.messages``); the chat page holds the same codes in its own i18n table
(``static/chat/i18n.js``, ``err_<code>``; a test keeps the two in step). The error's ``message``
stays English for the model."""

from __future__ import annotations

import re
from typing import Any

from tether.pack import ToolError
from tether.packs.erp.schema import Problems, detail_fields, master_fields

NO_ACCESS = "erp.no_access"
NO_BILL = "erp.no_bill"
READ_ONLY = "erp.read_only"
NO_EXAMINE = "erp.no_examine"
NO_CHANGE = "erp.no_change"
NOT_FOUND = "erp.not_found"
INVALID = "erp.invalid_values"
UNREACHABLE = "erp.unreachable"
LOGIN_EXPIRED = "erp.login_expired"
LOGIN_MISSING = "erp.login_missing"  # no ERP token, or an identity that is not an ERP user's
REFUSED = "erp.refused"  # the ERP answered with an error of its own ({status}; its {reason} in English)
NO_RECORD = "erp.no_record"
BAD_RECORD_ID = "erp.bad_record_id"
NEEDS_RECORD = "erp.needs_record"
NEEDS_SOURCE = "erp.needs_source"
NEEDS_SESSION = "erp.needs_session"
NO_LINE = "erp.no_line"
BAD_OP = "erp.bad_op"
CANNOT_EDIT = "erp.cannot_edit"
NOTHING_TO_EDIT = "erp.nothing_to_edit"
AMBIGUOUS_REF = "erp.ambiguous_ref"
CHOOSE_ONE = "erp.choose_one"
NO_VIEWS = "erp.no_views"
NO_SQL = "erp.no_sql"  # query_data called without SQL and none validated for the question yet
QUERY_FAILED = "erp.query_failed"  # the model's SQL refused by the sandbox or the database
UNKNOWN_FILTER = "erp.unknown_filter"
BAD_FILTER = "erp.bad_filter"
FILTER_TOO_LONG = "erp.filter_too_long"
BAD_ARGUMENTS = "erp.bad_arguments"  # the model's own arguments (page bounds, an empty query): not the person's
PROBLEM = "erp.problem."  # + a schema problem's code (required, type, read_only...)
OTHER_PROBLEM = PROBLEM + "invalid"  # a problem kind without words of its own

MESSAGES: dict[str, dict[str, str]] = {
    NO_ACCESS: {
        "zh": "表单 {form} 不存在，或您无权使用它。",
        "en": "There is no form {form}, or you may not use it.",
    },
    NO_BILL: {
        "zh": "没有找到您可以查看的{form} {bill_no}。请核对单号。",
        "en": "There is no {form} {bill_no} that you can see. Check the number.",
    },
    READ_ONLY: {"zh": "{form}是只读的，不能通过助手写入。", "en": "{form} is read-only: it cannot be written here."},
    NO_EXAMINE: {"zh": "{form}没有审核操作。", "en": "{form} has no examine step."},
    NO_CHANGE: {"zh": "{record} 已经是这些值，没有需要修改的内容。", "en": "{record} already has these values."},
    NOT_FOUND: {
        "zh": "{label}“{value}”没有您可以查看的匹配记录。",
        "en": "{label}: nothing you can see matches “{value}”.",
    },
    UNREACHABLE: {
        "zh": "ERP 暂时无法访问，请 {seconds} 秒后再试。",
        "en": "The ERP cannot be reached right now; try again in {seconds} s.",
    },
    LOGIN_EXPIRED: {"zh": "ERP 登录已过期，请重新登录后再试。", "en": "Your ERP login has expired; log in again."},
    LOGIN_MISSING: {
        "zh": "这需要 ERP 登录，请用 ERP 账号登录后再试。",
        "en": "This needs an ERP login; log in with your ERP account and try again.",
    },
    REFUSED: {
        "zh": "ERP 拒绝了这个请求（{status}），请核对后再试。",
        "en": "The ERP refused the request ({status}): {reason}.",
    },
    NO_RECORD: {
        "zh": "没有找到您可以查看的{form} {record}。请核对单号或编号。",
        "en": "There is no {form} {record} that you can see. Check the number.",
    },
    BAD_RECORD_ID: {
        "zh": "“{value}”不是有效的单号或记录编号（只能含字母、数字和 - _ . :，最多 64 个字符）。",
        "en": "“{value}” is not a bill number or record id (letters, digits, - _ . : only; at most 64).",
    },
    NEEDS_RECORD: {
        "zh": "请说明要操作的是哪一张单据（单号或记录编号）。",
        "en": "Say which record to {op} (its bill number or id).",
    },
    NEEDS_SOURCE: {
        "zh": "请说明要由哪一张单据生成（来源单据的单号）。",
        "en": "Say which bill to generate from (its bill number).",
    },
    NEEDS_SESSION: {
        "zh": "写入只能在会话中提议，由您确认后才执行。",
        "en": "A write can only be proposed in a conversation, where you confirm it.",
    },
    NO_LINE: {"zh": "{record} 没有第 {lines} 行明细。", "en": "{record} has no line {lines}."},
    BAD_OP: {
        "zh": "不支持“{op}”：只能新增、修改、删除、审核或生成单据。",
        "en": "“{op}” is not an operation here: create, update, delete, examine or generate.",
    },
    CANNOT_EDIT: {
        "zh": "这个 ERP 连接不支持修改待确认的提议，请取消后重新提议。",
        "en": "This ERP connection cannot edit a proposal; cancel it and propose again.",
    },
    NOTHING_TO_EDIT: {"zh": "这个提议没有可以修改的值。", "en": "A {op} has no values to edit."},
    AMBIGUOUS_REF: {
        "zh": "有一项引用匹配到多条记录，请用编码指明。",
        "en": "A reference matches several records; name it by its code.",
    },
    CHOOSE_ONE: {"zh": "请从候选项中选择一个。", "en": "Choose one of the candidates."},
    NO_VIEWS: {
        "zh": "您的表单都没有可查询的视图，无法做这种查询。",
        "en": "None of your forms has a query view, so this query cannot be run for you.",
    },
    NO_SQL: {
        "zh": "助手还没有为这个问题写出查询，请换个说法再试。",
        "en": "The assistant has no query for this question yet; try rephrasing.",
    },
    QUERY_FAILED: {
        "zh": "助手写的查询没有通过检查或执行失败，请换个说法再试。",
        "en": "The assistant's query was refused or failed; try rephrasing.",
    },
    UNKNOWN_FILTER: {
        "zh": "{form}没有这些筛选条件：{filters}。",
        "en": "{form} has no filter {filters}.",
    },
    BAD_FILTER: {
        "zh": "筛选条件{filter}只能是一个文本、数字或日期。",
        "en": "The filter {filter} must be a single text, number or date.",
    },
    FILTER_TOO_LONG: {
        "zh": "筛选条件{filter}超过 {max} 个字符，请缩短后再试。",
        "en": "The filter {filter} is longer than {max} characters; shorten it.",
    },
    BAD_ARGUMENTS: {
        "zh": "助手给这一步的参数有误，请换个说法再试。",
        "en": "The assistant gave this step arguments it cannot use; try rephrasing.",
    },
    INVALID: {"zh": "填写的内容不符合{form}：{problems}。", "en": "The values do not fit {form}: {problems}."},
    PROBLEM + "required": {"zh": "{label}为必填项", "en": "{label} is required"},
    PROBLEM + "type": {"zh": "{label}的值格式不对", "en": "{label} has a value of the wrong kind"},
    PROBLEM + "option": {"zh": "{label}不是可选的值", "en": "{label} is not one of its options"},
    PROBLEM + "read_only": {"zh": "{label}是只读的，由 ERP 填写", "en": "{label} is read-only (the ERP sets it)"},
    PROBLEM + "unknown": {"zh": "{label}不是此表单的字段", "en": "{label} is not a field of this form"},
    PROBLEM + "max_length": {"zh": "{label}超过最大长度", "en": "{label} is too long"},
    PROBLEM + "date": {"zh": "{label}的日期格式应为 YYYY-MM-DD", "en": "{label} must be a date YYYY-MM-DD"},
    PROBLEM + "min": {"zh": "{label}小于允许的最小值", "en": "{label} is below its minimum"},
    PROBLEM + "max": {"zh": "{label}超过允许的最大值", "en": "{label} is above its maximum"},
    PROBLEM + "max_lines": {"zh": "{label}行数过多", "en": "{label} has too many lines"},
    PROBLEM + "ambiguous_field": {
        "zh": "{label}对应多个字段，请写出完整的字段名",
        "en": "{label} names several fields; use the full field name",
    },
    OTHER_PROBLEM: {"zh": "{label}的值不符合要求", "en": "{label} has a value the form does not accept"},
}

_LINE = re.compile(r"^details\.(\d+)\.(.+)$")


def _label(config: dict[str, Any], name: str) -> str:
    """A problem's field as the person knows it: its label (a line's with its number)."""
    if name == "details":
        return "明细"
    if m := _LINE.match(name):
        found = next((f for f in detail_fields(config) if f["column"] == m.group(2)), None)
        return f"{found['label'] if found else m.group(2)} ({int(m.group(1)) + 1})"
    found = next((f for f in master_fields(config) if f["column"] == name or f["label"] == name), None)
    return str(found["label"]) if found else name


def _problem_code(problem: dict[str, str]) -> str:
    code = PROBLEM + problem.get("code", "")
    return code if code in MESSAGES else OTHER_PROBLEM  # a kind without words of its own: said plainly


def invalid_values(config: dict[str, Any], problems: Problems, message: str) -> ToolError:
    """Values that do not fit the form: ``message`` for the model, each problem coded for a person."""
    said = [{"code": _problem_code(p), "params": {"label": _label(config, p["field"])}} for p in problems]
    form = str(config.get("name") or config.get("formId"))
    return ToolError(message, code=INVALID, params={"form": form, "problems": said})
