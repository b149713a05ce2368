"""Op confirm and execution in the traces and metrics of a live server with the demo ERP: a
person's confirm and the op's execution are spans (with the session and user ids, never the ERP
token), exported over OTLP/HTTP to the local receiver; ops by state and op actions are metrics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.otlp_receiver import OtlpReceiver
from tests.packs.erp.conftest import ErpServer, wait_status
from tests.packs.erp.test_erp_ops import propose, wait_op

pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


def _samples(url: str) -> dict[tuple[str, str], float]:
    text = httpx.get(url + "/metrics", timeout=10).text
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())))] = s.value
    return out


def test_op_confirm_and_execution_are_spans_and_metrics(tmp_path: Path, receiver: OtlpReceiver) -> None:
    server = ErpServer(tmp_path, TETHER_OTEL_ENDPOINT=receiver.url).start(timeout=120)
    try:
        token = server.token("sales01")
        with server.client(token, timeout=60) as c:
            s, op_id = propose(server, c)
            drafts = _samples(server.url)
            assert drafts[("tether_ops", "state=draft")] == 1
            assert c.post(f"/api/ops/{op_id}/confirm").status_code == 200
            done = wait_op(c, op_id, {"done", "failed"})
            assert done["state"] == "done", done
            wait_status(c, s["sessionId"], "SUCCEEDED")
        after = _samples(server.url)
        assert after[("tether_ops", "state=executed")] == 1 and after.get(("tether_ops", "state=draft"), 0) == 0
        assert after[("tether_op_actions_total", "action=confirm,outcome=ok")] == 1
        assert after[("tether_op_actions_total", "action=execute,outcome=ok")] == 1
        (confirm,) = receiver.wait_for("tether.op.confirm")
        (execute,) = receiver.wait_for("tether.op.execute")
    finally:
        server.stop()
    assert confirm.attributes["tether.op.id"] == op_id and confirm.attributes["enduser.id"] == "sales01"
    assert confirm.attributes["tether.session.id"] == s["sessionId"]
    assert execute.attributes["tether.op.id"] == op_id and execute.attributes["tether.op.status"] == "executed"
    assert (
        execute.attributes["tether.op.type"] == "create" and execute.attributes["tether.session.id"] == s["sessionId"]
    )
    assert "tether.op.payload" not in execute.attributes  # business data only with capture on
    everything = b"".join(receiver.raw)
    assert not any(t.encode() in everything for t in server.tokens)  # never the ERP token
    server.assert_no_server_errors()
