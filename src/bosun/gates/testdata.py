"""Test data under test directories: the cases of data-driven tests, fixtures, expected outputs.

A data-driven suite loses a case when its file is deleted or emptied, and no line of test code
changes. So, for files :func:`~bosun.gates.testpaths.is_test_data` names:

* deleted, moved out of the test directories, or emptied: refused;
* a JSON or TOML file with fewer top-level entries (list items, keys or tables): refused;
* any other change: a note for the reviewer (an expected output may have been rewritten to match).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable

from bosun.core.changes import FileChange
from bosun.core.quoting import quoted
from bosun.gates.testpaths import is_test_data


def judge(
    change: FileChange, base_text: Callable[[str], str | None], new_text: Callable[[str], str | None],
    is_test_data: Callable[[str], bool] = is_test_data,
) -> tuple[list[str], list[str]] | None:
    """(refusals, notes) when the change touches test data, else None."""
    old = change.old_path if change.status[:1] == "R" and change.old_path else change.path
    if not (is_test_data(old) or is_test_data(change.path)):
        return None
    if change.status[:1] == "A" or not is_test_data(old):
        return [], []  # new data adds cases
    if change.status[:1] == "D":
        return [f"{quoted(old)} (test data) deleted"], []
    if not is_test_data(change.path):
        return [f"{quoted(old)} (test data) moved out of the tests to {quoted(change.path)}"], []
    before, after = base_text(old), new_text(change.path)
    if before is None or after is None:  # binary: only deletion is visible
        return [], [f"{quoted(change.path)} (test data) changed"] if change.status[:1] != "R" else []
    if before.strip() and not after.strip():
        return [f"{quoted(change.path)} (test data) emptied"], []
    n_before, n_after = _entries(change.path, before), _entries(change.path, after)
    if n_before is not None and n_after is not None and n_after < n_before:
        return [f"{quoted(change.path)} (test data) has fewer entries ({n_before} before, {n_after} after)"], []
    return [], [f"{quoted(change.path)} (test data) changed"] if before != after else []


def _entries(path: str, text: str) -> int | None:
    """Top-level entries of a JSON or TOML document, or None (other formats, or unparsable)."""
    try:
        if path.endswith(".json"):
            data = json.loads(text)
        elif path.endswith(".toml"):
            data = tomllib.loads(text)
        else:
            return None
    except ValueError:  # JSONDecodeError and TOMLDecodeError are both ValueErrors
        return None
    if isinstance(data, dict) and len(data) == 1:
        (only,) = data.values()  # {"cases": [...]}: the entries are one level down
        if isinstance(only, list | dict):
            return len(only)
    return len(data) if isinstance(data, list | dict) else None
