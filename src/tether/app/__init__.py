"""The HTTP layer (the only place that imports FastAPI): parse, authenticate, call the core, serialise."""
