"""SQLite store: runs, transitions, attempts, cooldowns. All SQL lives in this package."""
