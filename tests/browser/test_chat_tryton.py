"""The chat page on Tryton: ``tether serve`` with ``TETHER_ERP_KIND=tryton`` against a real
``trytond`` (a copy of the prepared demo company), logged in through the page's password form as
Tryton's ``sales`` user. A group-by answered from the rows Tryton lists (labelled with Tryton's
words), and a model the user's Tryton groups cannot read refused with its badge. Run alone with
``pytest -m browser``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import BROWSER, Session, start_server
from tests.browser.test_chat_outcomes import answers
from tests.servers import ServerProcess
from tests.tryton.conftest import PreparedTryton, tryton_prepared
from tether.tryton import demo_data
from tether.tryton.server import copy_database, start_trytond

pytestmark = [*BROWSER, pytest.mark.timeout(600)]
__all__ = ["tryton_prepared"]  # the fixture, imported so that this module sees it
PASSWORD = next(u.password for u in demo_data.USERS if u.login == "sales")


@pytest.fixture(scope="module")
def tryton_server(tryton_prepared: PreparedTryton, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    where = tmp_path_factory.mktemp("chat-tryton")
    settings = copy_database(tryton_prepared.data_dir, where / "tryton", settings=tryton_prepared.settings)
    with start_trytond(settings) as trytond:
        packs = "tether.erp_demo.pack,tether.packs.erp.pack"
        server = start_server(where, packs, TETHER_ERP_KIND="tryton", TETHER_ERP_BASE_URL=trytond.url)
        try:
            yield server
        finally:
            server.stop()
        server.assert_no_server_errors()


def test_a_tryton_user_logs_in_on_the_page_and_reads_with_trytons_rights(
    chat: Any, tryton_server: ServerProcess
) -> None:
    s: Session = chat(tryton_server)
    s.open()
    s.login_erp("sales", PASSWORD)
    s.ask("每个客户的销售订单含税合计")
    s.wait_for(lambda: len(answers(s)) == 1, timeout=90, what="the group-by")
    s.wait_status("SUCCEEDED")
    table = s.page.locator(".answer-wrap .markdown table").first
    headers = table.locator("th").all_text_contents()
    assert headers == ["客户", "记录数", "含税合计"], headers  # Tryton's words, completed by its administrator
    assert "燕山化工有限公司" in table.text_content() and "3,950.00" in table.text_content()
    s.shot("tryton-group-by")
    s.ask("有哪些采购订单")
    s.wait_for(lambda: len(answers(s)) == 2, timeout=60, what="the refusal")
    refused = answers(s)[1]
    assert refused["outcome"] == "not_granted" and refused["badge"] == "无权限", refused
    assert "您没有采购订单的权限" in refused["text"]
    s.shot("tryton-not-granted")
    assert not s.errors and not s.blocked
