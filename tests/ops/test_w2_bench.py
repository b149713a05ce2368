"""Workload W2's exactly-once probes (bench/w2.py), small: every phase in its own OS process
opened from the files — a duplicate approve in sequence, from the paused snapshot, concurrently
from two processes, and after a SIGKILL right after the ERP's COMMIT — each writes every item
exactly once; ``--json`` prints the rows issue 8 names, and the approval row (issue 26: each op
held by a policy, approved, executed once; the durable commits it adds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "w2.py"


def test_w2_writes_every_item_once_in_every_probe_and_prints_its_rows() -> None:
    cmd = [
        sys.executable,
        str(BENCH),
        "--sessions",
        "6",
        "--repeat",
        "1",
        "--probe-sessions",
        "3",
        "--no-peers",
        "--json",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)
    timing = [r for r in rows if "probe" not in r and r["framework"] == "tether"]
    assert len(timing) == 1
    for key in ("propose_p50_us", "approve_p50_us", "cpu_us_per_session", "bytes_per_session"):
        assert timing[0][key] > 0
    (approval,) = [r for r in rows if r["framework"] == "tether+approval"]  # every op held, then approved
    assert approval["sessions"] == 6 and approval["approve_p50_us"] > 0 and approval["cpu_us_per_session"] > 0
    assert 0 < approval["commits_added"] <= 1  # the held confirm's commit; the approval rides the gate's
    probes = {r["probe"]: r for r in rows if "probe" in r}
    assert sorted(probes) == ["1", "1b", "2", "3"]
    for probe in probes.values():
        assert probe["framework"] == "tether"
        assert (probe["executions_min"], probe["executions_max"], probe["written_twice_pct"]) == (1, 1, 0.0)
        assert probe["transcript_lengths"] == [4]
    assert probes["3"]["killed"] == 3  # each crashing approve really died after the ERP's commit
