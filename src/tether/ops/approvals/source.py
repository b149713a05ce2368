"""Where the policy comes from: the operator's YAML file, read again when it changes.

At start a file that is missing or does not parse is a ``ConfigError`` (the server refuses to
start: never "no policy, so no approvals"). Later, a change that does not parse keeps the policy
in force and logs an error on every check until the file is fixed — loudly, never silently empty.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from tether.errors import ConfigError
from tether.ops.approvals.policy import Policy, parse_policy

log = logging.getLogger("tether.approvals")
DEMO_POLICY = Path(__file__).with_name("demo_policy.yaml")


class PolicySource:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.problem: str | None = None  # why the file on disk is not the policy in force
        self._stamp: tuple[float, int] | None = None
        self._policy = self._read()

    def _stat(self) -> tuple[float, int]:
        st = os.stat(self.path)
        return (st.st_mtime, st.st_size)

    def _read(self) -> Policy:
        try:
            stamp = self._stat()
            policy = parse_policy(self.path.read_bytes())
        except OSError as exc:
            raise ConfigError(f"TETHER_APPROVAL_POLICIES: cannot read {self.path}: {exc.strerror}") from None
        except ConfigError as exc:
            raise ConfigError(f"TETHER_APPROVAL_POLICIES ({self.path}): {exc.message}") from None
        self._stamp = stamp
        return policy

    def current(self) -> Policy:
        """The policy in force: the file as last parsed, read again when its time or size changed."""
        try:
            stamp = self._stat()
        except OSError as exc:
            self._complain(f"cannot read {self.path}: {exc.strerror}")
            return self._policy
        if stamp == self._stamp:
            if self.problem:
                log.error(
                    "approval policy %s: %s; still using version %s", self.path, self.problem, self._policy.version[:12]
                )
            return self._policy
        try:
            self._policy = self._read()
        except ConfigError as exc:
            self._stamp = stamp
            self._complain(exc.message)
            return self._policy
        self.problem = None
        log.warning("approval policy %s reloaded: version %s", self.path, self._policy.version[:12])
        return self._policy

    def _complain(self, problem: str) -> None:
        self.problem = problem
        log.error("approval policy %s: %s; still using version %s", self.path, problem, self._policy.version[:12])
