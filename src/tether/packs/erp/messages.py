"""The ERP tools' failures as a person reads them: each ``ToolError`` code the pack raises, with
a template per language over the error's ``params``. The offline planner answers with these in the
language asked (``Pack.messages``); the chat page holds the same codes in its own i18n table
(``static/chat/i18n.js``, ``err_<code>``; a test keeps the two in step). The error's ``message``
stays English for the model."""

from __future__ import annotations

NO_ACCESS = "erp.no_access"
NO_BILL = "erp.no_bill"
READ_ONLY = "erp.read_only"
NO_EXAMINE = "erp.no_examine"
NO_CHANGE = "erp.no_change"
NOT_FOUND = "erp.not_found"

MESSAGES: dict[str, dict[str, str]] = {
    NO_ACCESS: {
        "zh": "没有表单 {form}，或您无权使用它。",
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
}
