"""A new record's defaults as the ERP's form metadata declares them (``/forms/{id}/config``: a
field's ``default``), filled into a create's values before its diff is computed, so the person
confirms every value the ERP will write — a quotation's 有效期至 and 交期 as well as what they said.

A date's default is ``today``, or ``<column>+<n>d`` / ``today+<n>d``: ``n`` days after that date
field's value (given or defaulted); any other default is a value in the field's type. What the
person gave always wins, an empty value too; a default that does not read as its field's type
is left to the ERP.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from tether.packs.erp.schema import coerce, master_fields

_DAYS_AFTER = re.compile(r"^(?P<base>today|[a-z_][a-z0-9_]*)\+(?P<days>\d{1,4})d$")


def is_relative(field: dict[str, Any]) -> bool:
    """A date default that counts from another value (``bill_date+30d``): a form shows it empty."""
    default = field.get("default")
    return field.get("type") == "date" and isinstance(default, str) and _DAYS_AFTER.match(default) is not None


def _default(field: dict[str, Any], values: dict[str, Any], today: date) -> Any:
    default = field.get("default")
    if field.get("type") == "date" and isinstance(default, str):
        if default == "today":
            return today.isoformat()
        if m := _DAYS_AFTER.match(default):
            base = today.isoformat() if m["base"] == "today" else values.get(m["base"])
            try:
                return (date.fromisoformat(str(base)) + timedelta(days=int(m["days"]))).isoformat()
            except ValueError:
                return None  # its base field has no date
    try:
        return coerce(field, default)
    except ValueError:
        return None


def with_defaults(config: dict[str, Any], values: dict[str, Any], today: date) -> dict[str, Any]:
    """``values`` (checked, by column) with the default of each writable master field they do not
    give (one given empty stays empty, as the ERP keeps it); relative dates last, so that they
    count from their base field's default too."""
    out = dict(values)
    fields = [f for f in master_fields(config) if not f.get("readOnly") and f.get("default") is not None]
    for f in sorted(fields, key=is_relative):
        column = str(f["column"])
        if column not in out and (value := _default(f, out, today)) is not None:
            out[column] = value
    return out
