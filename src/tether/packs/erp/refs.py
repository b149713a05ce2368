"""References in a payload (``ref`` fields: a customer, a material, a source bill) resolved
through the ERP as the user: a value may be the record's id, its code or bill number, or its name.
Exactly one match resolves; several are a question for the user with the candidates; none is a
problem on that field. Only id, code and name of candidates are shown (never other fields).

The lookup reads the referenced form with the user's token (the ERP's tenant and row scope
apply) even where the form itself is not granted: choosing the customer of a quotation the user
may write is part of writing it, and nothing but the identifying fields is returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tether.pack import ToolError
from tether.packs.erp.client import LoginExpired
from tether.packs.erp.port import ErpPort
from tether.packs.erp.schema import Problems, detail_fields, master_fields

MAX_CANDIDATES = 8


@dataclass
class Ambiguous:
    field: str
    label: str
    value: str
    candidates: list[dict[str, str]]


@dataclass
class Resolved:
    values: dict[str, Any]
    names: dict[str, str] = field(default_factory=dict)  # "customer_id" / "details[0].material_id" -> display
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # the same keys -> the record found
    problems: Problems = field(default_factory=list)
    ambiguous: Ambiguous | None = None


def _key(row: dict[str, Any]) -> str:
    return str(row.get("code") or row.get("bill_no") or row.get("id"))


def _display(row: dict[str, Any]) -> str:
    name = row.get("name") or row.get("customer_name") or ""
    code = row.get("code") or row.get("bill_no") or row.get("id")
    return " ".join(str(x) for x in (code, name, row.get("spec")) if x)  # same-named materials differ by spec


async def lookup(client: ErpPort, token: str, ref_form: str, value: str) -> list[dict[str, Any]]:
    config = await client.config(token, ref_form)
    filters = {str(f["name"]) for f in config.get("filters") or []}
    for name in ("code", "bill_no"):
        if name in filters:
            rows = (await client.read(token, ref_form, {name: value}, 1, 10))["rows"]
            exact = [r for r in rows if str(r.get(name) or "").upper() == value.upper()]
            if exact:
                return exact
    try:
        record = await client.record(token, ref_form, value)
        return [record.get("master") or {}]
    except LoginExpired:
        raise
    except ToolError:
        pass
    if "name" in filters:
        rows = (await client.read(token, ref_form, {"name": value}, 1, MAX_CANDIDATES + 1))["rows"]
        exact = [r for r in rows if value in (r.get("name"), r.get("short_name"))]
        return exact or rows
    return []


async def resolve(client: ErpPort, token: str, config: dict[str, Any], values: dict[str, Any]) -> Resolved:
    """Replace each ref value by the referenced record's id (master and detail lines)."""
    out = Resolved(dict(values))
    jobs: list[tuple[dict[str, Any], dict[str, Any], str]] = []
    for f in master_fields(config):
        if f.get("type") == "ref" and out.values.get(f["column"]) is not None:
            jobs.append((f, out.values, str(f["column"])))
    lines = out.values.get("details")
    if isinstance(lines, list):
        out.values["details"] = lines = [dict(line) for line in lines]
        for n, line in enumerate(lines):
            for f in detail_fields(config):
                if f.get("type") == "ref" and line.get(f["column"]) is not None:
                    jobs.append((f, line, f"details[{n}].{f['column']}"))
    for f, target, name in jobs:
        column = str(f["column"])
        value = str(target[column]).strip()
        found = await lookup(client, token, str(f["ref"]), value)
        if not found:
            message = f"{f['label']}: nothing you can see matches {value!r}"
            out.problems.append({"field": name, "message": message, "label": str(f["label"]), "value": value})
        elif len(found) > 1:
            candidates = [{"value": _key(r), "label": _display(r)} for r in found[:MAX_CANDIDATES]]
            out.ambiguous = out.ambiguous or Ambiguous(name, str(f["label"]), value, candidates)
        else:
            target[column] = str(found[0].get("id"))
            out.names[name] = _display(found[0])
            out.records[name] = found[0]
    return out
