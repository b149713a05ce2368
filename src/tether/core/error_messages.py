"""The core's own tool-call failures as a person reads them, and the one renderer for every coded
failure (the core's and the packs').

Each failure the governed path raises (``core/pipeline.py``: an unknown tool, one not allowed in
the turn, arguments that fail validation, the per-user tool-call budget, a timeout, an upstream
outage, a tool's own bug; ``core/questions.py``) carries a stable ``code`` and ``params``. The
error's ``message`` stays plain English for the model; a person gets the code's template in their
language. The abuse limits' 429 answers carry a code of this table too (``limit.*``), so the page
says a refusal in the person's language. ``MESSAGES`` is the ``tether.core`` table: the planner merges the packs' tables over it
(a pack may override a core code), and the chat page holds the same codes in its i18n table
(``static/chat/i18n.js``, ``err_<code>``; a test keeps them in step).
"""

from __future__ import annotations

from typing import Any

Table = dict[str, dict[str, str]]  # code -> {language: template over the error's params}

UNKNOWN_TOOL = "tool.unknown"
NOT_ALLOWED = "tool.not_allowed"
NOT_AUTHORISED = "tool.not_authorised"
BAD_ARGUMENTS = "tool.bad_arguments"  # not JSON, or not a JSON object
INVALID_ARGUMENTS = "tool.invalid_arguments"  # the tool's own validation refused them
BUDGET = "tool.budget"  # the user's tool calls per minute (TETHER_USER_TOOL_CALLS_PER_MINUTE)
TIMEOUT = "tool.timeout"
UNAVAILABLE = "tool.unavailable"  # a system the tool needs cannot be reached now
FAILED = "tool.failed"  # the tool's own bug, or a failure without words of its own
EMPTY_QUESTION = "ask_user.empty"
UNKNOWN_SKILL = "skill.unknown"
TURN_TIMEOUT = "turn.timeout"  # {seconds}: the turn's time limit (TETHER_TURN_TIMEOUT_S)
TURN_ROUNDS = "turn.max_rounds"  # {rounds}: no final answer within TETHER_MAX_ROUNDS
TURN_TOOL_CALLS = "turn.max_tool_calls"  # {calls}: the turn's tool calls (TETHER_MAX_TOOL_CALLS) are spent
MODEL_FAILED = "model.failed"  # the model endpoint failed (its reason stays in the English sentence)
JOB_FAILED = "job.failed"  # an async tool's job ended FAILED (its own English reason stays the model's)
# the abuse limits' 429s (``tether.abuse``): ``resetAt`` is UTC in ISO 8601 (the page shows it as local time)
DAILY_TOKENS = "limit.daily_tokens"  # {limit, resetAt, seconds}
DAILY_MODEL_CALLS = "limit.daily_model_calls"  # {limit, resetAt, seconds}
LOGIN_LOCKED_USER = "limit.login_user"  # {resetAt, seconds}
LOGIN_LOCKED_ADDRESS = "limit.login_address"  # {resetAt, seconds}
LOGIN_BUSY_USER = "limit.login_busy_user"  # {seconds}
LOGIN_BUSY_ADDRESS = "limit.login_busy_address"  # {seconds}

MESSAGES: Table = {
    UNKNOWN_TOOL: {
        "zh": "助手要执行的一步并不存在，请换个说法再试。",
        "en": "The assistant asked for a step that does not exist; try rephrasing.",
    },
    NOT_ALLOWED: {
        "zh": "这一步不能用在这个请求里，请换个说法再试。",
        "en": "That step is not available for this request; try rephrasing.",
    },
    NOT_AUTHORISED: {
        "zh": "您没有执行这一步的权限（缺少：{grants}）。",
        "en": "You may not do this step (missing: {grants}).",
    },
    BAD_ARGUMENTS: {
        "zh": "助手给这一步的参数格式不对，请再试一次。",
        "en": "The assistant sent this step malformed arguments; try again.",
    },
    INVALID_ARGUMENTS: {
        "zh": "助手给这一步的参数不符合要求，请换个说法再试。",
        "en": "The assistant sent this step arguments it does not accept; try rephrasing.",
    },
    BUDGET: {
        "zh": "您每分钟最多可调用 {limit} 次工具，本分钟的额度已用完，请 {seconds} 秒后再试。",
        "en": "Your budget of {limit} tool calls per minute is spent; try again in {seconds} s.",
    },
    TIMEOUT: {
        "zh": "这一步在 {seconds} 秒内没有完成，请稍后再试。",
        "en": "This step did not finish within {seconds} s; try again later.",
    },
    UNAVAILABLE: {
        "zh": "{system} 暂时无法访问，请 {seconds} 秒后再试。",
        "en": "{system} cannot be reached right now; try again in {seconds} s.",
    },
    FAILED: {
        "zh": "这一步出错了，请换个说法或稍后再试。",
        "en": "This step failed; try rephrasing or try again later.",
    },
    EMPTY_QUESTION: {
        "zh": "助手想向您提问，但问题是空的，请再说一次您的需求。",
        "en": "The assistant meant to ask you something but the question was empty; say again what you need.",
    },
    UNKNOWN_SKILL: {
        "zh": "没有名为 {skill} 的技能，请换个说法再试。",
        "en": "There is no skill named {skill}; try rephrasing.",
    },
    TURN_TIMEOUT: {
        "zh": "这一轮超过了 {seconds} 秒的时间上限，已停止，请稍后再试或把问题拆小一些。",
        "en": "The turn took longer than its {seconds} s limit and was stopped; try again or ask a smaller question.",
    },
    TURN_ROUNDS: {
        "zh": "助手调用了 {rounds} 轮仍没有给出答复，已停止，请换个说法再试。",
        "en": "The assistant did not reach an answer within {rounds} rounds and was stopped; try rephrasing.",
    },
    TURN_TOOL_CALLS: {
        "zh": "助手在这一轮已用满 {calls} 次工具调用仍没有完成，已停止，请把问题拆小一些再试。",
        "en": "The assistant used its {calls} tool calls for this turn without finishing and was stopped; "
        "try a smaller question.",
    },
    MODEL_FAILED: {
        "zh": "模型服务出错了，请稍后再试。",
        "en": "The model service failed; try again later.",
    },
    JOB_FAILED: {
        "zh": "后台任务没有完成，请稍后再试。",
        "en": "The background job did not finish ({reason}); try again later.",
    },
    DAILY_TOKENS: {
        "zh": "您今天的模型用量额度（{limit} 个 token）已用完，将于 {resetAt} 恢复。",
        "en": "Your daily budget of {limit} model tokens is spent; it resets at {resetAt}.",
    },
    DAILY_MODEL_CALLS: {
        "zh": "您今天的模型调用额度（{limit} 次）已用完，将于 {resetAt} 恢复。",
        "en": "Your daily budget of {limit} model calls is spent; it resets at {resetAt}.",
    },
    LOGIN_LOCKED_USER: {
        "zh": "这个用户名登录失败的次数过多，已暂时锁定，请于 {resetAt} 之后再试。",
        "en": "Too many failed logins for this username: it is locked out; try again at {resetAt}.",
    },
    LOGIN_LOCKED_ADDRESS: {
        "zh": "从您的网络地址登录失败的次数过多，已暂时锁定，请于 {resetAt} 之后再试。",
        "en": "Too many failed logins from your address: it is locked out; try again at {resetAt}.",
    },
    LOGIN_BUSY_USER: {
        "zh": "这个用户名同时进行的登录尝试过多，请 {seconds} 秒后再试。",
        "en": "Too many login attempts at once for this username; try again in {seconds} s.",
    },
    LOGIN_BUSY_ADDRESS: {
        "zh": "从您的网络地址同时进行的登录尝试过多，请 {seconds} 秒后再试。",
        "en": "Too many login attempts at once from your address; try again in {seconds} s.",
    },
}


def say(table: Table, code: Any, params: Any, language: str) -> str | None:
    """``code``'s template in ``language`` filled from ``params``; a parameter may itself be a
    coded message ({code, params}) or a list of them (a form's problems), said the same way.
    None when the code or a nested one has no text in that language, or the params do not fill it:
    a half-said sentence is worse than the caller's fallback."""
    template = table.get(str(code), {}).get(language)
    if template is None or not isinstance(params, dict):
        return None
    filled: dict[str, str] = {}
    for key, value in params.items():
        items = value if isinstance(value, list) else [value]
        if items and all(isinstance(v, dict) and "code" in v for v in items):
            said = [say(table, v["code"], v.get("params") or {}, language) for v in items]
            if any(s is None for s in said):
                return None
            filled[key] = ("；" if language == "zh" else "; ").join(s for s in said if s is not None)
        else:
            filled[key] = str(value)
    try:
        return template.format_map(filled)
    except (KeyError, ValueError, IndexError):
        return None


# the codes whose failure tells the person they are not granted something: a turn the offline
# planner ends on one has the outcome ``not_granted`` (a pack adds its own: ``Pack.denied_codes``)
DENIED = frozenset({NOT_AUTHORISED})
