"""``ask_user``: the built-in question tool (seed 003 §5 AskUser), always allowed like
``load_skill``. It ends the turn with a QUESTION; the user's next message, or
``POST …/interactions/{id} {answer}``, is the tool's result — never a new request (checked by
``core.answer_check.accept_answer``: not empty, one of the options unless free text is allowed)."""

from __future__ import annotations

from typing import Any

from tether.core import error_messages
from tether.core.tools import Interaction, Tool, tool
from tether.errors import ToolError

MAX_OPTIONS = 20


def _options(options: list[Any]) -> list[str]:
    """Options are the texts shown on the chips; the one picked is the answer."""
    out = []
    for o in options[:MAX_OPTIONS]:
        out.append(str(o.get("label") or o.get("value")) if isinstance(o, dict) else str(o))
    return out


def ask_user_tool() -> Tool:
    @tool(name="ask_user")
    async def ask_user(question: str, options: list[Any] | None = None, allow_free_text: bool = True) -> Any:
        """Ask the user a short question (to disambiguate or clarify), optionally with options to
        pick from. The turn ends; the user's answer comes back as this tool's result."""
        if not question.strip():
            raise ToolError("question must not be empty", code=error_messages.EMPTY_QUESTION)
        payload = {
            "question": question.strip()[:1000],
            "options": _options(options or []),
            "allowFreeText": allow_free_text,
        }
        return Interaction("question", payload)

    ask_user.in_dsl = False
    return ask_user
