"""The op queue (DESIGN §8, seed 003 §10): write proposals staged as drafts, executed only by the
deterministic confirm endpoint, never by a model."""
