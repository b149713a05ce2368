"""``kg_search``'s source: the ERP's knowledge-graph views (seed 003 §11), read through the
read-only connection. The views are small metadata, loaded once and refreshed every few minutes;
every answer is filtered to the caller's granted forms (a row naming an ungranted form is not
shown) and truncated — a view is never dumped whole."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tether.pack import ReadOnlyExecutor
from tether.packs.erp.query_data import plain_value

L2_VIEWS = ("viw_kg_form_neighbors", "viw_kg_edge_flow")
L3_VIEWS = ("viw_kg_field_dict",)
CARDS = "viw_kg_form_card"
DOMAINS = "viw_kg_domain"
MAX_ROWS = 20
TTL_S = 300.0


def _form_columns(row: dict[str, Any]) -> list[str]:
    return [c for c in row if c == "form_id" or c.endswith("form_id") or c == "ref_form"]


class KnowledgeGraph:
    def __init__(self, executor: ReadOnlyExecutor) -> None:
        self.executor = executor
        self._views: dict[str, list[dict[str, Any]]] = {}
        self._loaded = 0.0

    def _load(self) -> dict[str, list[dict[str, Any]]]:
        if self._views and time.monotonic() - self._loaded < TTL_S:
            return self._views
        views: dict[str, list[dict[str, Any]]] = {}
        for name in (*L2_VIEWS, *L3_VIEWS, CARDS, DOMAINS):
            result = self.executor.execute(f"SELECT * FROM {name}")  # fixed names, no input
            views[name] = [dict(zip(result.columns, (plain_value(v) for v in r), strict=True)) for r in result.rows]
        self._views, self._loaded = views, time.monotonic()
        return views

    def domains(self) -> list[dict[str, Any]]:
        return self._load()[DOMAINS]

    async def search(self, grants: frozenset[str], term: str, level: str) -> dict[str, Any]:
        views = await asyncio.to_thread(self._load)
        visible = [r for r in views[CARDS] if _granted(r, grants)]
        named = {str(r[c]) for r in visible for c in _form_columns(r) if _mentions(r, term)}
        found: dict[str, Any] = {"query": term, "level": level}
        for name in L2_VIEWS if level == "L2" else L3_VIEWS:
            rows = [
                r
                for r in views[name]
                if _granted(r, grants) and (_mentions(r, term) or any(str(r.get(c)) in named for c in _form_columns(r)))
            ]
            found[name] = {"rows": rows[:MAX_ROWS], "total": len(rows), "truncated": len(rows) > MAX_ROWS}
        if level == "L2":
            found["forms"] = [r for r in visible if str(r.get("form_id")) in named][:MAX_ROWS]
        return found


def _granted(row: dict[str, Any], grants: frozenset[str]) -> bool:
    return all(row.get(c) is None or str(row[c]) in grants for c in _form_columns(row))


def _mentions(row: dict[str, Any], term: str) -> bool:
    low = term.lower()
    return any(isinstance(v, str) and (low in v.lower() or (len(v) >= 2 and v.lower() in low)) for v in row.values())
