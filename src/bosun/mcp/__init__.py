"""``bosun mcp``: bosun as tools a parent agent calls over the Model Context Protocol.

``ops`` does the work (engine calls, returning the CLI's ``--json`` objects); ``answer`` builds the
compact result a parent reads; ``server`` is the only module that imports the MCP SDK.
"""
