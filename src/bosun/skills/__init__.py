"""The on-ramp for parent agents: the playbook skill, the Claude Code plugin and MCP registration."""
