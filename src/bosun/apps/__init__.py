"""The applications over the engine: `doctor`, `models`, `savings`, `watch` (the dashboard, MCP,
skills and replay are packages of this layer of their own)."""
