"""Other protocols onto the same runtime: MCP (``mcp_server``) and AG-UI (``agui``). Each maps
its protocol onto tether's sessions, pipeline, identity and grants; none has a path of its own."""
