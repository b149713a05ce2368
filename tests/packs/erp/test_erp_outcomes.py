"""A read question's three honest outcomes through the live server, as sales01 types them: a form
not granted (named, never read), nothing matching the filters (said in words) and words not
understood — each recorded on the session, carried by its events and told apart by ``tether
ask``'s exit status, beside an answer and a question back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.packs.erp.conftest import ErpServer, answer_of, facts, get_session, runtime_events, tether_cli

NOT_GRANTED = "您没有销售发票的权限。"
NO_ROWS = f"没有符合条件的记录：客户名称 含 {facts.SALES01_CUSTOMER[1]}，单据日期 2020-01-01 至 2020-12-31（发货单）。"


def outcome_of(c: httpx.Client, session: dict[str, Any]) -> tuple[str | None, list[str | None], str | None]:
    """(the session's outcome as GET returns it, the ASSISTANT_MESSAGE events', the TURN_FINISHED's)."""
    stored = get_session(c, session["sessionId"])
    events = runtime_events(c, session["sessionId"])
    said = [e["data"].get("outcome") for e in events if e["type"] == "ASSISTANT_MESSAGE"]
    finished = [e["data"].get("outcome") for e in events if e["type"] == "TURN_FINISHED"][-1]
    return stored["outcome"], said, finished


def test_not_granted_no_rows_and_not_understood_are_three_outcomes_on_the_session_and_its_events(
    erp_server: ErpServer,
) -> None:
    with erp_server.login("sales01") as c:
        own = erp_server.ask(c, f"{facts.SALES01_CUSTOMER[1]}的销售发票")  # a customer sales01 serves
        other = erp_server.ask(c, "本月开了几张销售发票")
        for s in (own, other):
            assert s["status"] == "SUCCEEDED" and answer_of(s) == NOT_GRANTED  # the same, data or not
            assert s["outcome"] == "not_granted" and outcome_of(c, s) == ("not_granted", ["not_granted"], "not_granted")
            assert not [st for st in s["executedSteps"] if st["toolId"] != "read_question"]  # nothing read
        none = erp_server.ask(c, "恒达2020年的发货单")
        assert answer_of(none) == NO_ROWS
        assert outcome_of(c, none) == ("no_rows", ["no_rows"], "no_rows")
        lost = erp_server.ask(c, "报价单里的扑朔迷离")
        assert "“扑朔迷离”" in answer_of(lost) and "权限" not in answer_of(lost)
        assert outcome_of(c, lost) == ("not_understood", ["not_understood"], "not_understood")
        answered = erp_server.ask(c, "我一共有多少个客户？")
        assert outcome_of(c, answered) == ("answered", ["answered"], "answered")
        asked = erp_server.ask(c, "新建一张报价单给恒达自动化")  # the form card: waiting on the person
        assert asked["status"] == "WAITING_USER_INPUT"
        assert outcome_of(c, asked) == ("asked", [], "asked")


def test_tether_ask_exits_with_the_outcome(erp_server: ErpServer, tmp_path: Path) -> None:
    tether = tether_cli(erp_server, tmp_path)

    assert tether("login", "sales01", "--password", facts.PASSWORD).returncode == 0
    for question, code in (
        ("我一共有多少个客户？", 0),
        ("恒达2020年的发货单", 3),
        ("本月开了几张销售发票", 4),
        ("报价单里的扑朔迷离", 5),
        ("新建一张报价单给恒达自动化", 6),
    ):
        done = tether("ask", question)
        assert done.returncode == code, (question, done.returncode, done.stdout + done.stderr)
    assert tether("logout").returncode == 0
