"""Tests for tether.models; ``chat_server`` is the reusable fake Chat Completions endpoint."""
