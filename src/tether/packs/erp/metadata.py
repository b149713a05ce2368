"""What the offline reader knows of an ERP: the caller's granted forms as the ERP describes them
(name, aliases, description, fields, filters with types, options, columns and operators, the view)
and the values seen in their rows (names, short names, codes, specs, categories, cities), read as
the caller. Plain data: the reader (``reader.py``) is a pure function over it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_SPLIT = re.compile(r"[,，;；/\s]+")
# columns whose values name a record (besides the form's text filters): what a clerk types for it
KEY_COLUMNS = ("code", "name", "short_name", "spec", "bill_no")
SHORT_TEXT = 64  # longer texts (addresses, notes) are not names a question uses


@dataclass(frozen=True)
class FieldMeta:
    column: str
    label: str
    type: str
    options: tuple[tuple[str, str], ...] = ()  # (value, label)
    ref: str | None = None
    max_length: int | None = None
    read_only: bool = False
    aliases: tuple[str, ...] = ()  # the label in the ERP's other languages (found, never shown)
    option_aliases: tuple[tuple[str, str], ...] = ()  # (value, label) in the other languages

    @property
    def numeric(self) -> bool:
        return self.type in ("number", "integer")


@dataclass(frozen=True)
class FilterMeta:
    name: str
    label: str
    type: str
    column: str
    op: str = "eq"  # eq | like | gte | lte
    options: tuple[tuple[str, str], ...] = ()
    aliases: tuple[str, ...] = ()
    option_aliases: tuple[tuple[str, str], ...] = ()


def _options(raw: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(o.get("value")), str(o.get("label") or o.get("value"))) for o in raw or [] if isinstance(o, dict))


def _aliases(raw: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(a) for a in raw.get("aliases") or () if a)


def _field(f: dict[str, Any]) -> FieldMeta:
    return FieldMeta(
        str(f["column"]), str(f.get("label") or f["column"]), str(f.get("type") or "text"), _options(f.get("options")),
        f.get("ref"), f.get("maxLength"), bool(f.get("readOnly")), _aliases(f), _options(f.get("optionAliases")),
    )  # fmt: skip


@dataclass(frozen=True)
class FormMeta:
    form_id: str
    name: str
    aliases: tuple[str, ...]
    description: str
    answers: str
    view: str
    bill_prefix: str | None
    fields: tuple[FieldMeta, ...]
    filters: tuple[FilterMeta, ...]
    columns: frozenset[str] = frozenset()  # the view's columns (empty: unknown, SQL is not offered)
    details: tuple[FieldMeta, ...] = ()  # a bill's line fields (material, qty, unit price)
    examinable: bool = False
    writable: bool = False

    @classmethod
    def from_erp(cls, card: dict[str, Any], config: dict[str, Any], columns: frozenset[str] = frozenset()) -> FormMeta:
        aliases = card.get("aliases") or ()
        if isinstance(aliases, str):
            aliases = [a for a in _SPLIT.split(aliases) if a]
        fields = tuple(_field(f) for f in config.get("master") or [] if f.get("column"))
        details = tuple(_field(f) for f in (config.get("detail") or {}).get("fields") or [] if f.get("column"))
        filters = tuple(
            FilterMeta(str(f["name"]), str(f.get("label") or f["name"]), str(f.get("type") or "text"),
                       str(f.get("column") or f["name"]), str(f.get("op") or "eq"), _options(f.get("options")),
                       _aliases(f), _options(f.get("optionAliases")))
            for f in config.get("filters") or [] if f.get("name")
        )  # fmt: skip
        return cls(
            form_id=str(config.get("formId") or card.get("formId")),
            name=str(config.get("name") or card.get("name") or ""),
            aliases=tuple(str(a) for a in aliases),
            description=str(card.get("description") or ""),
            answers=str(card.get("answers") or ""),
            view=str(config.get("view") or card.get("view") or ""),
            bill_prefix=config.get("billNoPrefix") or None,
            fields=fields,
            filters=filters,
            columns=columns,
            details=details,
            examinable=bool(config.get("examinable")),
            writable=bool(config.get("writable")),
        )

    def label_of(self, column: str) -> str:
        """A column's label: its filter's, its field's, or the column itself."""
        for f in self.filters:
            if f.column == column and f.op in ("eq", "like"):
                return f.label
        for fd in self.fields:
            if fd.column == column:
                return fd.label
        return column

    def field(self, column: str) -> FieldMeta | None:
        return next((f for f in self.fields if f.column == column), None)

    def vocabulary_columns(self) -> list[str]:
        """The columns whose values the reader learns: short text filters, record keys and short
        text fields in the view. Not bill numbers (their pattern finds them) and not long texts
        (remarks, addresses): a word of a question is not looked for inside a note."""
        wanted = [f.column for f in self.filters if f.type == "text" and self._short(f.column)]
        wanted += [c for c in KEY_COLUMNS if self._short(c)]
        wanted += [f.column for f in self.fields if f.type == "text" and self._short(f.column)]
        have = self.columns or frozenset(wanted)
        return [c for c in dict.fromkeys(wanted) if c in have and not c.endswith("_id") and c != "bill_no"]

    def named_ids(self) -> list[tuple[str, str]]:
        """(name column, id column) of each filter that takes an id while the view also holds the
        name beside it and no filter takes that name (业务员: salesman_id with salesman_name): a
        clerk names 赵强, the filter takes his id."""
        out = []
        for f in self.filters:
            if f.type != "text" or f.op != "eq" or not f.column.endswith("_id"):
                continue
            name = f.column[: -len("_id")] + "_name"
            if name in self.columns and not any(g.column == name for g in self.filters):
                out.append((name, f.column))
        return out

    def _short(self, column: str) -> bool:
        if column in KEY_COLUMNS or column.endswith(("_name", "_code")):
            return True  # names are what a clerk types, however long
        fd = self.field(column)
        return fd is None or (fd.type == "text" and (fd.max_length or 0) <= SHORT_TEXT)


@dataclass(frozen=True)
class Seen:
    """One row's identifying values in one form (``values``: column → text)."""

    form_id: str
    values: dict[str, str]


@dataclass
class Catalog:
    forms: list[FormMeta]
    rows: list[Seen] = field(default_factory=list)
    denied: list[FormMeta] = field(default_factory=list)  # the ERP's other forms: name and aliases only
    # the records a new bill's lines may name where their form is not granted (a salesperson's
    # quotation materials): identifying fields only, read through the ERP as the user, and only
    # for proposing a bill — never a question's vocabulary
    choices: list[Seen] = field(default_factory=list)

    def form(self, form_id: str) -> FormMeta | None:
        return next((f for f in self.forms if f.form_id == form_id), None)
