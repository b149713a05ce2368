"""Finance customer-support pack (seed 000): customer-session data, analysis and reports.

The business half lives here: the ``customer_session`` table and its repository (``data``), the
request model with its validation (``query``), a deterministic demo-data generator
(``generator``), keyword analysis (``analysis``) and report rendering (``report``). Wiring these
into tools, skills and HTTP routes is done elsewhere; nothing here imports the runtime.
"""

from tether.packs.finance_cs.data import CustomerSessionRepo, Sample, create_schema, customer_session
from tether.packs.finance_cs.query import BUSINESS_LINES, CHANNELS, CUSTOMER_TIERS, SessionQuery, parse_query

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
