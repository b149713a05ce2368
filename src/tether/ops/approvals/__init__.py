"""Approval policies: who must sign off an op before it runs (separation of duties, M of N,
expiry), bound to the op's fingerprint. See docs/approvals.md."""
