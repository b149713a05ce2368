"""What the reader makes of a question: a ``Reading`` (the form, the filters, the shape), a
``Proposal`` (a change request's ``propose_write`` arguments), an ``Ask`` (a question back, with options) or a ``Refusal`` (what it did not understand, or the form the caller is not granted:
its ``outcome``, ``not_understood`` or ``not_granted``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tether.pack import phrases
from tether.packs.erp.metadata import FieldMeta, FormMeta


@dataclass
class Reading:
    form: FormMeta
    shape: str  # list | count | field | aggregate | group | top
    filters: dict[str, Any] = field(default_factory=dict)  # the form's own filter parameters
    where: list[tuple[str, str, Any]] = field(default_factory=list)  # (column, op, value) beyond them
    having: list[tuple[str, str, Any]] = field(default_factory=list)  # on a group's sum: 总库存低于10
    said: list[str] = field(default_factory=list)  # each filter as the answer states it
    measure: FieldMeta | None = None
    agg: str | None = None  # sum | avg | max | min
    group: str | None = None  # a column
    top: int | None = None
    asked: list[FieldMeta] = field(default_factory=list)  # the fields a "field" question asks for
    ascending: bool = False  # a top-N of the smallest
    period: phrases.Period | None = None
    english: bool = False
    chosen: bool = False  # read again with the user's pick of candidates
    distinct: FieldMeta | None = None  # a count of a field's values (几个仓库), not of the records
    latest: bool = False  # one record, the newest by ``measure`` (its date): 最近一张, latest
    beside: bool = False  # a sum shown with the rows it adds up (还剩几个: the stock rows too)

    @property
    def needs_sql(self) -> bool:
        return (
            self.shape in ("aggregate", "group", "top") or bool(self.where or self.having) or self.distinct is not None
        )


@dataclass
class Ask:
    question: str
    options: list[str]


@dataclass
class Refusal:
    text: str
    outcome: str = "not_understood"  # | not_granted: the turn's outcome (core/session.py OUTCOMES)


@dataclass
class Proposal:
    """A change request read: the ``propose_write`` arguments (a proposal the person confirms)."""

    args: dict[str, Any]


@dataclass
class FormFill:
    """A new bill the reader could not finish (a material or customer it did not find, a quantity
    not said): the form, prefilled with what it did understand, for the person to complete;
    ``unclear`` is the words it could not place."""

    form_id: str
    prefill: dict[str, Any]
    unclear: list[str] = field(default_factory=list)


Outcome = Reading | Ask | Refusal | Proposal | FormFill
