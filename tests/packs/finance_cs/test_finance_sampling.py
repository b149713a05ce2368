"""Proportional allocation behind the stratified sample."""

from __future__ import annotations

from tether.packs.finance_cs.data import allocate


def test_allocation_is_proportional_and_exact() -> None:
    shares = allocate({"app": 500, "web": 250, "phone": 150, "wechat": 100}, 100)
    assert shares == {"app": 50, "web": 25, "phone": 15, "wechat": 10}
    odd = allocate({"a": 1, "b": 1, "c": 1}, 2)
    assert sum(odd.values()) == 2 and max(odd.values()) == 1
    assert allocate({"a": 3, "b": 2}, 10) == {"a": 3, "b": 2}
