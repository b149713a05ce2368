"""``python -m tether.evals.zygote``: imports the server once, then forks a fresh server process
per trial (``tether.evals.serve`` in the trial's folder, its own environment and log) — a trial pays
for a fork, not for importing FastAPI, SQLAlchemy and the packs again (seconds each on a busy
machine). Each child is a whole server process; nothing of one trial's state reaches another.

Protocol: one JSON object per line on stdin, ``{"workdir", "args", "env", "log"}``; the answer is
``{"pid"}`` on stdout. The zygote reaps its children; the caller stops one with a signal.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time


def _reap() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(0.05)


def _child(request: dict[str, object]) -> None:
    """Never returns: whatever happens, the child ends here (it must not go on as a zygote)."""
    code = 1
    try:
        code = _serve(request)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _serve(request: dict[str, object]) -> int:
    from tether.evals import serve

    os.chdir(str(request["workdir"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})  # type: ignore[call-overload]
    fd = os.open(str(request["log"]), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return serve.main([str(a) for a in list(request["args"])])  # type: ignore[call-overload]


def main() -> int:
    import tether.app.main
    import tether.erp_demo.pack
    import tether.evals.serve
    import tether.packs.erp.pack
    import tether.packs.finance_cs.pack  # noqa: F401

    threading.Thread(target=_reap, daemon=True).start()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"pid": pid}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
