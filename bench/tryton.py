"""A read through tether on Tryton next to the same read done bare over Tryton's JSON-RPC, in the
same run (issue 38: target p50 ratio ≤ 1.3).

A copy of the prepared demo database (``tether tryton prepare``; built under ``var/bench-tryton``
when ``TETHER_TRYTON_DATA_DIR`` names none) is served by its own ``trytond``; ``tether serve``
runs beside it with ``TETHER_ERP_KIND=tryton``. The user is ``sales``, logged in through tether
(a Tryton login). Per round, in rotating order:

- bare: what the adapter asks Tryton for one page of the sales form — ``search_read`` of its
  fields (20 rows, id descending) and ``search_count`` — in the same session, the user's context
  sent as Tryton's clients send it, on a reused ``httpx.AsyncClient``, JSON decoded;
- tether: ``POST /tools/read-form-data`` on tether (the door, the identity's ``/me`` cache, the
  form gate, the whitelist, the audit row, the port's two calls to Tryton, the labelled result).

Both answers are checked to hold the same rows.

    .venv/bin/python bench/tryton.py           # 200 rounds after 20 warm-up rounds
    .venv/bin/python bench/tryton.py --quick   # 60 rounds
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tether.tryton import demo_data
from tether.tryton.commands import _prepare
from tether.tryton.server import copy_database, free_port, start_trytond
from tether.tryton.settings import TrytonSettings

FIELDS = ["number", "party", "party.rec_name", "sale_date", "state", "untaxed_amount", "total_amount",
          "reference", "description"]  # fmt: skip


def _tether(trytond_url: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env.update({"TETHER_PACKS": "tether.packs.erp.pack", "TETHER_ERP_KIND": "tryton", "TETHER_ERP_BASE_URL": trytond_url,
                "TETHER_PUBLIC_URL": f"http://127.0.0.1:{port}"})  # fmt: skip
    cmd = [sys.executable, "-m", "tether.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with (workdir / "tether.log").open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/api/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"tether did not start: {(workdir / 'tether.log').read_text()[-2000:]}")


async def _measure(tether_url: str, rpc_url: str, rounds: int) -> dict[str, list[float]]:
    password = next(u.password for u in demo_data.USERS if u.login == "sales")
    async with httpx.AsyncClient(timeout=60) as http:
        login = await http.post(f"{tether_url}/api/auth/login", json={"username": "sales", "password": password})
        token = login.json()["token"]
        bearer = {"Authorization": f"Bearer {token}"}
        session = {"Authorization": f"Session {token}"}
        forms = (await http.post(f"{tether_url}/tools/find-forms", json={"query": ""}, headers=bearer)).json()
        form_id = next(str(f["formId"]) for f in forms["data"]["forms"] if f["name"] == "销售订单")
        context = (await http.post(rpc_url, json={"id": 0, "method": "model.res.user.get_preferences",
                                                   "params": [True, {}]}, headers=session)).json()["result"]  # fmt: skip

        async def rpc(method: str, *params: Any) -> Any:
            body = {"id": 1, "method": method, "params": [*params, context]}
            return (await http.post(rpc_url, json=body, headers=session)).json()["result"]

        async def bare() -> list[int]:
            rows, _total = await asyncio.gather(
                rpc("model.sale.sale.search_read", [], 0, 20, [["id", "DESC"]], FIELDS),
                rpc("model.sale.sale.search_count", []),
            )
            return [r["id"] for r in rows]

        async def through_tether() -> list[int]:
            body = {"form_id": form_id, "filters": {}, "page": 1, "page_size": 20}
            answer = (await http.post(f"{tether_url}/tools/read-form-data", json=body, headers=bearer)).json()
            result = answer["data"]
            return [row[result["columns"].index("id")] for row in result["rows"]]

        timings: dict[str, list[float]] = {"bare": [], "tether": []}
        paths = {"bare": bare, "tether": through_tether}
        for n in range(rounds + 20):
            order = ["bare", "tether"] if n % 2 else ["tether", "bare"]
            seen = {}
            for name in order:
                start = time.perf_counter()
                seen[name] = await paths[name]()
                elapsed = time.perf_counter() - start
                if n >= 20:
                    timings[name].append(elapsed * 1000)
            assert seen["bare"] == seen["tether"], seen
        return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    prepared = TrytonSettings(data_dir=Path(os.environ.get("TETHER_TRYTON_DATA_DIR", "var/bench-tryton")))
    _prepare(prepared, fresh=False)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        copy = copy_database(prepared.data_dir, work / "tryton", settings=prepared)
        with start_trytond(copy) as trytond:
            proc, tether_url = _tether(trytond.url, work)
            try:
                timings = asyncio.run(_measure(tether_url, trytond.rpc_url, 60 if args.quick else 200))
            finally:
                proc.terminate()
                proc.wait(15)
    bare, tether = (statistics.median(timings[k]) for k in ("bare", "tether"))
    p90 = {k: statistics.quantiles(v, n=10)[-1] for k, v in timings.items()}
    print(f"Tryton read, sales on 销售订单 (20 rows + count), {len(timings['bare'])} rounds")
    print(f"{'path':<40} {'p50 ms':>8} {'p90 ms':>8}")
    print(f"{'bare JSON-RPC (search_read + count)':<40} {bare:8.2f} {p90['bare']:8.2f}")
    print(f"{'tether POST /tools/read-form-data':<40} {tether:8.2f} {p90['tether']:8.2f}")
    print(f"{'ratio tether / bare (target <= 1.3)':<40} {tether / bare:8.2f}")


if __name__ == "__main__":
    main()
