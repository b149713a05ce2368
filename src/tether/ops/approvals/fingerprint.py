"""An op's fingerprint: what an approval signs — the diff, the payload, the target record and its
version as proposed, and the hash of the policy rules that matched it. Any change to one of them
gives another fingerprint, and the approvals given to the old one no longer count."""

from __future__ import annotations

import hashlib
import json

from tether.ops.approvals.policy import Requirement
from tether.ops.model import Op


def fingerprint(op: Op, requirement: Requirement) -> str:
    body = [
        op.op_type,
        op.form_id,
        op.target_id,
        op.base_version,
        op.diff,
        op.payload,
        op.source_ref,
        requirement.digest,
    ]
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
