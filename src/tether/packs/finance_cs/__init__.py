"""Finance customer-support pack (seed 000): customer-session data, analysis and reports.

The business half lives here: the ``customer_session`` table and its repository (``data``), the
request model with its validation (``query``), a deterministic demo-data generator
(``generator``), keyword analysis (``analysis``) and report rendering (``report``). Wiring these
into tools, skills and HTTP routes is done elsewhere; nothing here imports the runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.packs.finance_cs.data import CustomerSessionRepo, Sample, create_schema, customer_session
    from tether.packs.finance_cs.query import BUSINESS_LINES, CHANNELS, CUSTOMER_TIERS, SessionQuery, parse_query

_DATA = ("CustomerSessionRepo", "Sample", "create_schema", "customer_session")
_QUERY = ("BUSINESS_LINES", "CHANNELS", "CUSTOMER_TIERS", "SessionQuery", "parse_query")
__all__ = [
    "BUSINESS_LINES",
    "CHANNELS",
    "CUSTOMER_TIERS",
    "CustomerSessionRepo",
    "Sample",
    "SessionQuery",
    "create_schema",
    "customer_session",
    "parse_query",
]


def __getattr__(name: str) -> Any:
    """Loaded on first use, so that ``tether --help`` (which lists the pack's commands) stays quick."""
    if name in _DATA:
        return getattr(importlib.import_module("tether.packs.finance_cs.data"), name)
    if name in _QUERY:
        return getattr(importlib.import_module("tether.packs.finance_cs.query"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
