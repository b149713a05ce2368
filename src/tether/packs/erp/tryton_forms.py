"""Which of Tryton's models are forms, and how a form's metadata is read off Tryton's own
``fields_get`` in the user's language: labels, types, selections, references. Nothing here words
a form or a field: every label a person reads is Tryton's translation (imperfect ones included);
this module only chooses the models, their fields and their fixed domain.

A many2one field ``party`` becomes two columns, ``party_id`` (the id) and ``party_name`` (its
``rec_name``), the shape of the demo ERP's ``customer_id`` / ``customer_name``; a text field gets
a ``like`` filter, a selection an ``eq`` filter with Tryton's options, a date or a number a
``_from`` / ``_to`` pair, a many2one a ``like`` filter on its name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

TEXT_TYPES = frozenset({"char", "text"})
NUMBER_TYPES = frozenset({"numeric", "float"})
_TYPES = {"char": "text", "text": "text", "integer": "integer", "numeric": "number", "float": "number",
          "date": "date", "datetime": "date", "selection": "select", "many2one": "text", "boolean": "text"}  # fmt: skip


@dataclass(frozen=True)
class ModelForm:
    """One Tryton model offered as a form: the fields read (in the view's order), the fixed
    domain every read is and-ed with, the order, and a bill's lines (a one2many and its fields)."""

    model: str
    fields: tuple[str, ...]
    domain: tuple[Any, ...] = ()
    order: tuple[tuple[str, str], ...] = (("id", "DESC"),)
    lines: str | None = None
    line_model: str | None = None
    line_fields: tuple[str, ...] = ()
    stock: bool = False  # quantities on hand over every warehouse (Tryton's ``locations`` context)
    editable: tuple[str, ...] = ()  # the fields a proposal may set (the form is writable with the rights)
    line_editable: tuple[str, ...] = ()
    steps: tuple[tuple[str, str, str], ...] = ()  # examine: (state, Tryton's button, the state it leads to)
    progress: tuple[str, ...] = ()  # the states in the order a record goes through them

    def reached(self, state: Any, wanted: str) -> bool:
        """Whether a record in ``state`` is at ``wanted`` or past it (a confirmed sale Tryton
        already processes is confirmed)."""
        if state == wanted:
            return True
        order = self.progress
        return state in order and wanted in order and order.index(state) > order.index(wanted)

    @property
    def key(self) -> str:
        """The model and its fixed domain: two forms may share a model (invoices, receivables)."""
        return self.model if not self.domain else f"{self.model}{self.domain!r}"


FORMS = (
    ModelForm("party.party", ("code", "name", "addresses")),
    ModelForm(
        "product.product",
        ("code", "name", "type", "list_price_used", "cost_price", "default_uom", "quantity"),
        stock=True,
    ),
    ModelForm(
        "sale.sale",
        (
            "number",
            "party",
            "sale_date",
            "state",
            "untaxed_amount",
            "total_amount",
            "reference",
            "description",
            "warehouse",
        ),
        lines="lines",
        line_model="sale.line",
        line_fields=("product", "quantity", "unit", "unit_price", "amount"),
        editable=("party", "sale_date", "warehouse", "reference", "description"),
        line_editable=("product", "quantity", "unit_price"),
        steps=(("draft", "quote", "quotation"), ("quotation", "confirm", "confirmed")),
        progress=("draft", "quotation", "confirmed", "processing", "done"),
    ),
    ModelForm(
        "purchase.purchase",
        ("number", "party", "purchase_date", "state", "untaxed_amount", "total_amount", "reference"),
        lines="lines",
        line_model="purchase.line",
        line_fields=("product", "quantity", "unit", "unit_price", "amount"),
    ),
    ModelForm(
        "account.invoice",
        ("number", "party", "invoice_date", "state", "total_amount", "amount_to_pay", "reference"),
        domain=(("type", "=", "out"),),
    ),
)
BY_MODEL = {f.model: f for f in FORMS}
# a bill line's roles by the port's column names (port.py): Tryton's product is the line's item
LINE_COLUMNS = {"product": "material", "quantity": "qty"}


def _options(spec: dict[str, Any]) -> list[dict[str, str]] | None:
    selection = spec.get("selection")
    if spec.get("type") != "selection" or not isinstance(selection, list):
        return None
    return [{"value": str(v), "label": str(label)} for v, label in selection if v not in (None, "")]


def field_meta(name: str, spec: dict[str, Any], column: str | None = None) -> list[dict[str, Any]]:
    """A Tryton field as the form's fields (a many2one: its id and its name), ``column`` the
    name the form gives it (default Tryton's)."""
    kind = str(spec.get("type"))
    label = str(spec.get("string") or name)
    name = column or name
    base = {
        "column": name,
        "label": label,
        "type": _TYPES.get(kind, "text"),
        "required": bool(spec.get("required")),
        "readOnly": bool(spec.get("readonly")),
        "options": _options(spec),
        "maxLength": spec.get("size"),
        "ref": None,
    }
    if kind != "many2one":
        return [base]
    return [
        {**base, "column": f"{name}_id", "ref": spec.get("relation")},
        {**base, "column": f"{name}_name", "readOnly": True},
    ]


def add_aliases(items: list[dict[str, Any]], other: list[dict[str, Any]], key: str) -> None:
    """``other``'s labels and option labels (the same fields in another language, matched by
    ``key``) as the aliases of ``items``' own: a question in either language finds the field."""
    by_key = {str(o.get(key)): o for o in other}
    for item in items:
        twin = by_key.get(str(item.get(key)))
        if twin is None:
            continue
        if twin.get("label") and twin["label"] != item.get("label"):
            item["aliases"] = [*(item.get("aliases") or []), twin["label"]]
        if twin.get("options"):
            item["optionAliases"] = [*(item.get("optionAliases") or []), *twin["options"]]


def filters_of(fields: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, spec in fields:
        kind, label = str(spec.get("type")), str(spec.get("string") or name)
        if not spec.get("searchable", True):
            continue
        if kind in TEXT_TYPES:
            out.append({"name": name, "label": label, "type": "text", "column": name, "op": "like"})
        elif kind == "selection":
            out.append({"name": name, "label": label, "type": "select", "column": name, "options": _options(spec)})
        elif kind == "many2one":
            out.append({"name": f"{name}_name", "label": label, "type": "text", "column": f"{name}_name", "op": "like"})
            out.append({"name": f"{name}_id", "label": label, "type": "text", "column": f"{name}_id", "op": "eq"})
        elif kind in ("date", "datetime") or kind in NUMBER_TYPES or kind == "integer":
            typed = {"date": "date", "datetime": "date", "integer": "integer"}.get(kind, "number")
            out.append({"name": f"{name}_from", "label": label, "type": typed, "column": name, "op": "gte"})
            out.append({"name": f"{name}_to", "label": label, "type": typed, "column": name, "op": "lte"})
    return out


ADDRESS_PATHS = {"city": "addresses.city", "street": "addresses.street"}  # a party's columns from its address


def domain_of(form: ModelForm, filters: list[dict[str, Any]], params: dict[str, Any]) -> list[Any]:
    """Tryton's search domain for whitelisted ``params`` (already checked against ``filters``)."""
    paths = ADDRESS_PATHS if "addresses" in form.fields else {}
    by_name = {str(f["name"]): f for f in filters}
    domain: list[Any] = [list(clause) for clause in form.domain]
    for key, value in params.items():
        f = by_name.get(key)
        if f is None or value is None or value == "":
            continue
        column = str(f["column"])
        path = paths.get(column) or _path(column)
        op = str(f.get("op") or "eq")
        if op == "like":
            domain.append([path, "ilike", f"%{value}%"])
        elif op in ("gte", "lte"):
            domain.append([path, ">=" if op == "gte" else "<=", _typed(str(f.get("type")), value)])
        elif column.endswith("_id"):
            domain.append([path, "=", int(value)])
        else:
            domain.append([path, "=", value])
    return domain


def _path(column: str) -> str:
    """A form column's Tryton path: ``party_name`` → ``party.rec_name``, ``party_id`` → ``party``."""
    if column.endswith("_name"):
        return f"{column[: -len('_name')]}.rec_name"
    if column.endswith("_id"):
        return column[: -len("_id")]
    return column


def _typed(kind: str, value: Any) -> Any:
    if kind == "date":
        return {"__class__": "date", **_ymd(str(value))}
    if kind == "integer":
        return int(value)
    return {"__class__": "Decimal", "decimal": str(Decimal(str(value)))}


def _ymd(text: str) -> dict[str, int]:
    day = date.fromisoformat(text[:10])
    return {"year": day.year, "month": day.month, "day": day.day}


def read_fields(form: ModelForm, specs: dict[str, dict[str, Any]]) -> list[str]:
    """The names ``search_read`` is asked for: a many2one also its ``rec_name``."""
    out: list[str] = []
    for name in form.fields:
        spec = specs.get(name)
        if spec is None:
            continue
        out.append(name)
        if spec.get("type") == "many2one":
            out.append(f"{name}.rec_name")
    return out


def flatten(
    row: dict[str, Any], specs: dict[str, dict[str, Any]], columns: dict[str, str] | None = None
) -> dict[str, Any]:
    """A Tryton row as the form's columns (``columns``: Tryton's name → the form's): many2one as
    id, name (and code, where read), dates as ISO text, Decimals as numbers; ``_timestamp`` as the
    record's ``version``."""
    out: dict[str, Any] = {"id": row.get("id")}
    for name, value in row.items():
        if name.endswith(".") or name == "id":
            continue
        if name == "_timestamp":
            out["version"] = value
            continue
        spec = specs.get(name) or {}
        column = (columns or {}).get(name, name)
        if spec.get("type") == "many2one":
            related = row.get(f"{name}.") or {}
            out[f"{column}_id"] = value
            out[f"{column}_name"] = related.get("rec_name")
            if "code" in related:
                out[f"{column}_code"] = related.get("code")
        else:
            out[column] = plain(value)
    return out


def plain(value: Any) -> Any:
    """Tryton's JSON classes (``{"__class__": "Decimal"…}``) as plain values."""
    if isinstance(value, dict) and "__class__" in value:
        kind = value["__class__"]
        if kind == "Decimal":
            return float(Decimal(str(value.get("decimal"))))
        if kind in ("date", "datetime"):
            return f"{value['year']:04d}-{value['month']:02d}-{value['day']:02d}"
        return str(value)
    return value
