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
PROBLEM = "erp.problem."  # + a schema problem's code (required, type, read_only...)

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


def invalid_values(config: dict[str, Any], problems: Problems, message: str) -> ToolError:
    """Values that do not fit the form: ``message`` for the model, each problem coded for a person."""
    said = [
        {"code": PROBLEM + p["code"], "params": {"label": _label(config, p["field"])}}
        for p in problems
        if PROBLEM + p.get("code", "") in MESSAGES
    ]
    form = str(config.get("name") or config.get("formId"))
    if len(said) != len(problems):  # a problem without words of its own: the model's message only
        return ToolError(message)
    return ToolError(message, code=INVALID, params={"form": form, "problems": said})
