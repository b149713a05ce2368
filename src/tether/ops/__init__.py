"""The op queue (docs/writes.md): write proposals staged as drafts, executed only by the
deterministic confirm endpoint, never by a model."""
