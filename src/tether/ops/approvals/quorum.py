"""Whether the approvals given fill what a rule needs: each need is ``count`` seats for holders of
a grant, each approver takes at most one seat (one person counts once, however many grants they
hold), and the seats are assigned as a bipartite matching so that an approver holding two grants
never blocks a seat only they could fill."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tether.ops.approvals.policy import Need


def _seats(needs: Iterable[Need]) -> list[str]:
    return [n.grant for n in needs for _ in range(n.count)]


def filled(needs: Iterable[Need], approvers: Mapping[str, frozenset[str]]) -> bool:
    """True when every seat is taken by a distinct approver holding its grant."""
    seats = _seats(needs)
    holder: dict[int, str] = {}

    def place(person: str, tried: set[int]) -> bool:
        for i, grant in enumerate(seats):
            if grant in approvers[person] and i not in tried:
                tried.add(i)
                if i not in holder or place(holder[i], tried):
                    holder[i] = person
                    return True
        return False

    for person in approvers:
        place(person, set())
    return len(holder) == len(seats)


def missing(needs: Iterable[Need], approvers: Mapping[str, frozenset[str]]) -> list[dict[str, object]]:
    """What is still needed, per grant (for the card's 'waiting for')."""
    out = []
    for need in needs:
        have = sum(1 for grants in approvers.values() if need.grant in grants)
        if have < need.count:
            out.append({"grant": need.grant, "count": need.count - have})
    return out
