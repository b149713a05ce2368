"""``make demo``'s main job, run as a new user would (``tether demo --no-serve`` in an empty
folder): the finance example, its replay, the ERP read, and the two governed writes — each
proposal shown with its diff before the confirm, then its outcome."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import free_port

pytestmark = pytest.mark.slow


README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One ``tether demo --no-serve`` in an empty folder: its output and the folder."""
    workdir = tmp_path_factory.mktemp("demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    tether = Path(sys.executable).with_name("tether")
    done = subprocess.run(
        [str(tether), "demo", "--no-serve", "--port", str(free_port())],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout, workdir


def test_the_readme_says_the_growth_the_demo_prints(demo: tuple[str, Path]) -> None:
    """The README's "about N times as many" is the demo's own 倍 figure, rounded (to a whole
    number, or to tens when the README gives a round figure)."""
    printed = re.search(r"为上一周期的 (\d+(?:\.\d)?) 倍", demo[0])
    assert printed is not None, demo[0][-3000:]
    said = re.search(r"\(about (\d+)\s+times as many", README.read_text(encoding="utf-8"))
    assert said is not None, "the README no longer says how many times as many matches the main job finds"
    figure, about = float(printed[1]), int(said[1])
    assert about in (round(figure), round(figure, -1)), f"README: about {about} times; the demo prints {figure} 倍"


def test_the_demo_runs_the_examples_and_shows_a_governed_write(demo: tuple[str, Path]) -> None:
    out = demo[0]
    # the change: a diff first, the confirm, then a prefill link for the ERP form
    change = out[out.index("的交期(天)改成15") :]
    assert re.search(r"交期\(天\): \d+ → 15", change), change[:1500]
    assert change.index("nothing is written until it is confirmed") < change.index("confirming op")
    assert re.search(r"→ pending: .*\n  link: http://127\.0\.0\.1:\d+/erp/form/2001\?staging=op\w+", change)
    # the new quotation: confirmed, executed by the ERP, a bill with its link; the session answers
    create = out[out.index("报价：M0003 10个，单价46") :]
    bill = re.search(r"→ done: ✅ 已新增报价单 (QT\d{6}-\d{4})", create)
    assert bill is not None, create[:1500]
    assert re.search(r"link: http://127\.0\.0\.1:\d+/erp/form/2001\?bill=\w+", create)
    assert f"answer:\n✅ 已新增报价单 {bill[1]}" in create
    assert out.count("turn finished: SUCCEEDED") >= 4
    # the approval: sales01's 92,000 元 quotation waits for mgr01, who approves; the ERP executes it
    approval = out[out.index("报价：M0003 2000个，单价46") :]
    assert "sales01 confirms → awaiting_approval" in approval and "1× approve.sales" in approval, approval[:1500]
    assert "mgr01 sees it (GET /api/approvals)" in approval and "requested by sales01" in approval
    assert re.search(r"→ done: ✅ 已新增报价单 QT\d{6}-\d{4}", approval), approval[:1500]
    assert "mgr01    刘洋" in out and "approves: approve.sales" in out  # the demo users list the approvers


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    assert db.exists(), f"{db} is missing"
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_the_demo_leaves_the_explorable_data_as_a_newcomer_finds_it(demo: tuple[str, Path]) -> None:
    """The ERP examples run on a scratch copy: afterwards ./var holds the main job's analysis (the
    README's report) but no conversation, op or approval of an ERP user and none of the examples'
    quotations — the chat page starts as documented, and the scratch copy is gone."""
    out, workdir = demo
    made = re.findall(r"→ done: ✅ 已新增报价单 (QT\d{6}-\d{4})", out)
    assert len(made) == 2, out[-3000:]
    tether_db, erp_db = workdir / "var" / "tether.db", workdir / "var" / "erp.db"
    users = {row[0] for row in _rows(tether_db, "SELECT owner_user FROM agent_session")}
    assert users == {"alice"}, f"conversations in ./var: {users}"
    for table in ("op_queue", "op_approval_request"):
        assert _rows(tether_db, f"SELECT count(*) FROM {table}") == [(0,)], table
    bills = {row[0] for row in _rows(erp_db, "SELECT bill_no FROM quotation")}
    assert bills, "the ERP's seeded quotations are missing"
    assert not bills & set(made), f"the demo's quotations {made} are in {erp_db}"
    assert not list((workdir / "var").glob("demo-*")), "the scratch copy is left behind"
