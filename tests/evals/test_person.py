"""The simulated person answers a question with options the way a person clicks: the one option
that holds what they mean to say; never a guess between several."""

from __future__ import annotations

from tether.evals.person import reply_to

CUSTOMERS = ["C0031 沈阳正泰机械制造有限公司", "C0032 青岛正泰精密五金有限公司", "C0033 郑州正泰精密五金有限公司"]


def test_the_one_option_holding_the_reply_is_picked() -> None:
    assert reply_to(CUSTOMERS, "青岛正泰精密五金有限公司") == "C0032 青岛正泰精密五金有限公司"
    assert reply_to(CUSTOMERS, "C0031") == "C0031 沈阳正泰机械制造有限公司"
    assert reply_to(["M0001 深沟球轴承 6204-2RS", "M0002 深沟球轴承 6205-2RS"], "6205-2RS") == (
        "M0002 深沟球轴承 6205-2RS"
    )


def test_an_option_typed_whole_is_kept() -> None:
    assert reply_to(["报价单", "销售订单"], "销售订单") == "销售订单"


def test_a_reply_several_options_hold_or_none_holds_is_sent_as_typed() -> None:
    assert reply_to(CUSTOMERS, "正泰精密五金") == "正泰精密五金"  # 青岛 and 郑州: no guess
    assert reply_to(CUSTOMERS, "宁波甬江") == "宁波甬江"
    assert reply_to([], "青岛正泰") == "青岛正泰"
