"""SQLite store: runs, transitions, attempts, cooldowns. All SQL lives in this package.

The package first imports sqlite3 lean (without datetime's pure-Python half): start-up of every verb
that reads the store."""

from bosun.core.lean_imports import import_sqlite3

import_sqlite3()
