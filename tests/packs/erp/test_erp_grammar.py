"""The words a clerk adds that carry no meaning of their own (帮我, 发, 那边, 一下, 呀, get, please)
never block a reading; a content word nobody explains still does, and so do the small words that
would change the answer (不, 除了, 大约, 经常, 他, 那个, not, only). Questions written for these
tests, over the reader's catalog fixture (``test_erp_reader``)."""

from __future__ import annotations

import pytest

from tests.packs.erp.test_erp_reader import ADMIN, SALES, TODAY, reading
from tether.packs.erp import grammar
from tether.packs.erp.reader import read
from tether.packs.erp.readings import Reading, Refusal

HENGDA = "苏州工业园区恒达自动化设备有限公司"


@pytest.mark.parametrize(
    ("question", "form_id", "filters"),
    [
        ("帮我发一下恒达自动化那边的联系人", "1001", {"code": "C0001"}),
        ("麻烦问下常州力拓的电话呗", "1001", {"name": "常州力拓传动机械有限公司"}),
        ("你好，苏州的客户有哪些呀", "1001", {"city": "苏州"}),
        ("给我瞅瞅未审核的报价单吧", "2001", {"status": "draft"}),
        ("哎，液压气动的供应商都有哪几家啊", "1002", {"category": "液压气动"}),
        ("麻烦问问报价单的数量嘛", "2001", {}),
        ("供应商这边一共多少家嘞", "1002", {}),
    ],
)
def test_function_words_do_not_block_a_reading(question: str, form_id: str, filters: dict[str, str]) -> None:
    r = reading(question)
    assert r.form.form_id == form_id and r.filters == filters


@pytest.mark.parametrize(
    ("question", "form_id", "shape"),
    [
        ("can you tell me how many customers we have", "1001", "count"),
        ("please get me the list of suppliers", "1002", "list"),
        ("hi, could you check how many quotations there are", "2001", "count"),
    ],
)
def test_english_function_words_do_not_block_a_reading(question: str, form_id: str, shape: str) -> None:
    r = reading(question)
    assert r.form.form_id == form_id and r.shape == shape and not r.filters


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("恒达那边的员工", "员工"),  # a noun nobody explains
        ("不是常州的客户", "不"),  # negation
        ("除了苏州以外的客户", "以外"),  # exclusion
        ("他的报价单", "他"),  # someone not named
        ("那个客户的电话", "那"),
        ("苏州的客户大约有几家", "大约"),  # approximation
        ("经常下单的客户", "经常"),  # frequency
        ("即将到期的发票", "即将"),  # another time
        ("恒达等客户的电话", "恒达等"),  # 等: and others
        ("customers not in 苏州", "not"),
        ("only suppliers in 苏州", "only"),
    ],
)
def test_content_and_meaning_changing_words_still_block(question: str, word: str) -> None:
    outcome = read(question, ADMIN, TODAY)
    assert isinstance(outcome, Refusal) and outcome.outcome == "not_understood", outcome
    assert f"“{word}”" in outcome.text or f"{word}." in outcome.text or f"{word}," in outcome.text


def test_function_words_around_a_record_leave_it_read() -> None:
    r = read("劳驾搜一下恒达自动化那边发过的报价单呢", SALES, TODAY)
    assert isinstance(r, Reading) and r.form.form_id == "2001" and r.filters == {"customer_name": HENGDA}


@pytest.mark.parametrize(
    ("piece", "runs"),
    [
        ("帮我发一下", []),
        ("那边的员工", [("员工", 3)]),
        ("北辰重工还", [("北辰重工", 0)]),  # neighbouring content words stay one run
        ("叫什么来着", []),
        ("不是", [("不是", 0)]),
        ("两张", [("两张", 0)]),  # a number counts
        ("龘", [("龘", 0)]),  # a character the dictionary lacks is content
    ],
)
def test_content_words_are_the_runs_that_carry_meaning(piece: str, runs: list[tuple[str, int]]) -> None:
    assert grammar.content_words(piece, (), key=-1) == runs


def test_the_data_values_are_kept_whole() -> None:
    grammar.content_words("", ["北辰精密"], key=-2)
    assert grammar.content_words("北辰精密的", (), key=-2) == [("北辰精密", 0)]
