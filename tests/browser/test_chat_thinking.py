"""The chat page with a thinking model (a fake DeepSeek in thinking mode behind ``tether serve``):
each round's reasoning is a collapsed "thinking" item in the turn's timeline, the answer holds
none of it, and a reload shows the same."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import BROWSER, start_server
from tests.models.chat_server import ChatServer
from tests.models.server_rules import deepseek_thinking
from tests.models.test_deepseek_thinking import QUESTION, finance_script

pytestmark = BROWSER


def test_the_reasoning_is_a_collapsed_thinking_item_never_the_answer(chat: Any, tmp_path: Any) -> None:
    with ChatServer(finance_script(), rules=deepseek_thinking) as model:
        server = start_server(
            tmp_path,
            "tether.packs.finance_cs.pack",
            TETHER_MODEL="openai",
            TETHER_MODEL_PROVIDER="deepseek",
            TETHER_MODEL_BASE_URL=model.base_url,
            TETHER_MODEL_NAME="deepseek-reasoner",
            TETHER_MODEL_API_KEY="sk-deepseek-test-0123456789",
            TETHER_SKILL_ROUTING="rules",
            TETHER_FINANCE_SEED="yes",
            TETHER_FINANCE_SEED_ROWS="500",
        )
        try:
            s = chat(server)
            s.open()
            s.login_token()
            page = s.page
            s.ask(QUESTION)
            s.wait_status("SUCCEEDED")
            rows = page.eval_on_selector_all(
                ".timeline .tool-row",
                "els => els.map(e => e.classList.contains('thought') ? 'thought' : e.dataset.tool)",
            )
            assert rows == [
                "thought",
                "query_customer_sessions_mysql",
                "thought",
                "sample_sessions_by_keywords",
                "thought",
            ]
            thoughts = page.locator(".tool-row.thought")
            assert (thoughts.first.locator("summary").text_content() or "").strip() == "思考过程"
            assert not thoughts.first.locator("pre.reasoning").is_visible()  # collapsed
            page.click(".timeline > summary")
            thoughts.first.locator("summary").click()
            assert thoughts.first.locator("pre.reasoning").inner_text() == "用户要查客户C10001的会话，先查询。"
            answer = page.inner_text(".answer")
            assert answer.strip() == "已查询客户C10001的会话，并抽样了3条手续费相关会话。"
            s.shot("thinking-timeline")
            page.reload()
            s.wait_status("SUCCEEDED")
            assert page.locator(".tool-row.thought").count() == 3
            assert "可以回答" not in page.inner_text(".answer")
        finally:
            server.stop()
