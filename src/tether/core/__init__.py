"""The runtime core: pure Python (stdlib + pydantic). Imports no web framework, ORM or SDK."""
