"""No internal tool name ever reaches a person: not in a coded failure's words (the core's table
and the ERP pack's, in either language), not in a reply to a clerk's request on the live server —
a write the plan cannot finish included (it once read "未能完成：collect_form 不能在这一步使用")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.packs.erp.conftest import ErpServer
from tether.core import error_messages
from tether.packs.erp import messages

SKILLS = Path(messages.__file__).parent / "skills"


def _tool_names() -> set[str]:
    """Every tool the ERP skills may call, from their own ``allowed-tools`` lines."""
    names = {"ask_user"}
    for skill in SKILLS.glob("*/SKILL.md"):
        line = re.search(r"^allowed-tools:\s*\[(.*)\]", skill.read_text(encoding="utf-8"), re.M)
        assert line is not None, skill
        names |= {n.strip() for n in line.group(1).split(",") if n.strip()}
    return names


class _Params(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "read_form_data" if key == "tool" else "1"


@pytest.mark.parametrize("table", [error_messages.MESSAGES, messages.MESSAGES], ids=["core", "erp"])
@pytest.mark.parametrize("language", ["zh", "en"])
def test_no_coded_failure_names_the_tool_that_failed(table: dict[str, dict[str, str]], language: str) -> None:
    for code, said in table.items():
        if language in said:
            assert "read_form_data" not in said[language].format_map(_Params()), code


REQUESTS = [
    "给嘉兴金泰报价，深沟球轴承6205-2RS 50个，单价18元",  # once: collect_form 不能在这一步使用
    "帮嘉兴金泰开张报价单，深沟球轴承6205 50个，每个18块",
    "嘉兴金泰要2000个圆锥滚子轴承30205，单价46，做张报价单",
    "帮嘉兴金泰开张报价单，飞轮组件 3套",
    "开张报价单",
    "给大华做个报价，M0004两台",
    "把QT209912-0001的交期改成30天",
    "quote 恒达 for 5 pcs of M9999 at 45 each",
]


def test_no_reply_to_a_clerks_request_names_a_tool(erp_server: ErpServer) -> None:
    tools = _tool_names()
    assert {"collect_form", "propose_write", "read_question"} <= tools
    replied = 0
    with erp_server.login("sales01") as client:
        for request in REQUESTS:
            session = erp_server.ask(client, request)
            said = [str(m.get("content") or "") for m in session["transcript"] if m.get("role") == "assistant"]
            said.append(str(session.get("lastError") or ""))
            shown = "\n".join(said)
            assert not [t for t in tools if t in shown], (request, shown)
            replied += bool(said[:-1])
    assert replied >= 4  # the finished ones answered in words; the rest wait on a form or a question
