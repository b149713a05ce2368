"""``tether doctor`` as an operator runs it (the real CLI, in a subprocess), against a live
``tether serve`` with the demo ERP and the demo approval policy: with that server's settings every
line is ``ok`` — its database and the packs' schemas current, the policy loaded, the ERP answering
and the check user logged in and out — and the exit status is 0. Each broken setting — an ERP URL
nothing answers at, a wrong check password, a policy file with a syntax error, a database that
cannot be reached, one whose schema is behind — is a ``FAIL`` line naming the fix, exit status 1."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.packs.erp.conftest import ErpServer, facts
from tests.servers import free_port
from tether.ops.approvals.source import DEMO_POLICY


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ErpServer]:
    s = ErpServer(tmp_path_factory.mktemp("erp-doctor"), TETHER_APPROVAL_POLICIES=str(DEMO_POLICY))
    s.start(timeout=120)
    try:
        yield s
    finally:
        s.stop()


def doctor(server: ErpServer, **env: str) -> subprocess.CompletedProcess[str]:
    """``tether doctor`` where the server runs, with its settings (``env`` changes some)."""
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", "doctor"],
        env={**server.env, "TETHER_ERP_CHECK_USER": "sales01", "TETHER_ERP_CHECK_PASSWORD": facts.PASSWORD, **env},
        cwd=server.workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )


def line(out: str, what: str) -> str:
    """The doctor's line about ``what`` (its status and words)."""
    for text in out.splitlines():
        if text[5:].startswith(what + "  "):
            return " ".join(text.split())
    raise AssertionError(f"no line about {what!r} in:\n{out}")


def test_with_the_servers_settings_every_line_is_ok(server: ErpServer) -> None:
    result = doctor(server)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    lines = out.splitlines()
    assert lines[0] == "tether doctor" and lines[-1] == "every check ok", out
    assert all(x.startswith("ok   ") for x in lines[1:-1]), out
    assert line(out, "database").endswith("./var/tether.db: schema 0009, current"), out
    assert "schema erp0001, current" in line(out, "erp schema")
    assert f"{DEMO_POLICY} (TETHER_APPROVAL_POLICIES): 3 rule(s), version" in line(out, "approval policy")
    erp = line(out, "ERP")
    assert f"{server.url}/erp answers; logged in as sales01" in erp and "and out again" in erp, erp
    assert line(out, "model").startswith("ok model the offline planner")
    assert facts.PASSWORD not in out + result.stderr


def test_each_broken_setting_fails_its_line_and_names_the_fix(server: ErpServer, tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/erp"
    result = doctor(server, TETHER_ERP_BASE_URL=nowhere)
    assert result.returncode == 1, result.stdout + result.stderr
    erp = line(result.stdout, "ERP")
    assert erp.startswith(
        f"FAIL ERP nothing answers at {nowhere} (ConnectError) — fix: start the ERP, or set TETHER_ERP_BASE_URL"
    )
    assert line(result.stdout, "database").startswith("ok") and result.stdout.endswith("1 check(s) failed\n")

    result = doctor(server, TETHER_ERP_CHECK_PASSWORD="wrong-password")
    assert result.returncode == 1
    erp = line(result.stdout, "ERP")
    assert erp.startswith("FAIL ERP") and "refused the login of sales01" in erp and "TETHER_ERP_CHECK_PASSWORD" in erp
    assert "wrong-password" not in result.stdout + result.stderr

    result = doctor(server, TETHER_ERP_CHECK_USER="")
    assert result.returncode == 0 and "a login was not tried" in line(result.stdout, "ERP")  # reachability only

    broken = tmp_path / "policy.yaml"
    broken.write_text("rules:\n  - name: big\n    when: [total_above: 5\n", encoding="utf-8")
    result = doctor(server, TETHER_APPROVAL_POLICIES=str(broken))
    assert result.returncode == 1
    policy = line(result.stdout, "approval policy")
    assert policy.startswith(
        f"FAIL approval policy TETHER_APPROVAL_POLICIES ({broken}): the approval policy file does not parse"
    )
    assert "— fix: correct the file (docs/approvals.md), or set TETHER_APPROVAL_POLICIES" in policy

    gone = f"postgresql+psycopg://tether:s3cret-pw@127.0.0.1:{free_port()}/tether"
    result = doctor(server, TETHER_DATABASE_URL=gone)
    assert result.returncode == 1
    database = line(result.stdout, "database")
    assert database.startswith(
        f"FAIL database postgresql+psycopg://tether:***@127.0.0.1:{gone.rsplit(':', 1)[1].split('/')[0]}/tether: cannot connect"
    )
    assert "— fix: start the database or correct the URL" in database
    assert "s3cret-pw" not in result.stdout + result.stderr


def test_a_database_behind_the_code_says_to_upgrade(server: ErpServer, tmp_path: Path) -> None:
    from tether.store.migrate import upgrade

    old = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(old, "0008")
    result = doctor(server, TETHER_DATABASE_URL=old, TETHER_PACKS="")
    assert result.returncode == 1
    assert (
        line(result.stdout, "database")
        == f"FAIL database {old}: schema 0008, behind 0009 — fix: `tether db upgrade` (tether serve also migrates)"
    )
