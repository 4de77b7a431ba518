"""The parent agent (Claude Code, Codex, ...) that drives bosun: who it is and what it spent."""
