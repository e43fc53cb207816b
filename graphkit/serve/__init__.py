"""The graph served to agents: :mod:`.mcp`, an MCP server over stdio whose tools answer
as the command line's ``--json`` does (``graphkit mcp``)."""
