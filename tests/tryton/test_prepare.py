"""``tether.tryton.prepare`` against a real ``trytond`` on SQLite: the modules activate, the demo
company is seeded through Tryton's own API, and Tryton itself then reports the counts and states
that ``demo_data`` promises (read back through ``proteus`` in a process of its own). The database
is the session's (``tryton_prepared``: one ``tether tryton prepare`` on an empty folder per run);
what ``prepare`` prints and keeps is tested in ``test_server.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tryton.conftest import PreparedTryton
from tether.tryton.server import copy_database

pytest.importorskip("trytond", reason="Tryton is the `tryton` dependency group: uv sync --group tryton")

READ_BACK = """
import collections, json, sys
from proteus import Model, config
config.set_trytond("tether_demo", config_file=sys.argv[1])
count = lambda name: len(Model.get(name).find([]))
print(json.dumps({
    "sales": collections.Counter(s.state for s in Model.get("sale.sale").find([])),
    "invoices": collections.Counter(i.state for i in Model.get("account.invoice").find([("type", "=", "out")])),
    "currency": Model.get("company.company").find([])[0].currency.code,
    "users": sorted(u.login for u in Model.get("res.user").find([])),
    "products": len(Model.get("product.product").find([("code", "!=", None)])),
}))
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_prepare_seeds_the_demo_company_through_tryton(tryton_prepared: PreparedTryton, tmp_path: Path) -> None:
    built = tryton_prepared.data_dir
    assert (built / "tether_demo.sqlite").exists() and not (built / ".building").exists()
    copy = copy_database(built, tmp_path / "copy", settings=tryton_prepared.settings)  # the prepared one stays unread

    read = subprocess.run(
        [sys.executable, "-c", READ_BACK, str(copy.config_file)], capture_output=True, text=True, check=False
    )
    assert read.returncode == 0, read.stderr[-3000:]
    seen = json.loads(read.stdout.splitlines()[-1])
    assert seen["sales"] == {"draft": 2, "quotation": 2, "confirmed": 2, "processing": 3, "done": 3}
    assert seen["invoices"] == {"posted": 3, "paid": 3}
    assert seen["currency"] == "CNY"
    assert {"admin", "sales", "stock", "accountant", "manager"} <= set(seen["users"])
    assert seen["products"] == 42
