"""``make demo``'s main job, run as a new user would (``tether demo --no-serve`` in an empty
folder): the finance example, its replay, the ERP read, and the two governed writes — each
proposal shown with its diff before the confirm, then its outcome."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import free_port

pytestmark = pytest.mark.slow


def test_the_demo_runs_the_examples_and_shows_a_governed_write(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    tether = Path(sys.executable).with_name("tether")
    done = subprocess.run(
        [str(tether), "demo", "--no-serve", "--port", str(free_port())],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
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
