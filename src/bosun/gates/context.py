"""What every gate judges (:class:`GateInputs`) and the small helpers gates share to word results.

Gates are pure functions of a context: they never run processes and never touch git. Whoever builds
the context (isolation, after the worker exits) reads git once and hands over the change list, the
diff and accessors for file texts, so gates stay fast to test and cannot be fooled by a worktree
that changes while they run. The only filesystem access a gate makes is resolving symlinks below
``worktree``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from bosun.core.changes import FileChange
from bosun.core.contract import TaskContract
from bosun.gates.diffparse import FileDiff, parse_diff
from bosun.gates.testset import OriginalRuns, TestSet

# A detail names at most this many paths, then "and N more": details are read by people.
MAX_LISTED = 5


@dataclass
class GateInputs:
    """Everything the gates see of one finished worker run."""

    task: TaskContract
    changes: list[FileChange]  # from git, relative to the worktree's start commit
    diff: bytes  # the full `git diff --binary` text of the change
    locked: list[str]  # task.locked + always-locked defaults + user additions
    base_line_count: Callable[[str], int | None]  # lines of a path in the start commit (None if absent)
    base_text: Callable[[str], str | None]  # text of a path in the start commit (None if absent/binary)
    new_text: Callable[[str], str | None]  # text of a path as the worker left it (None if deleted/binary)
    verification_passed: bool | None  # None: not run
    verification_summary: str = ""
    worktree: Path | None = None  # for symlink resolution
    # Paths the user changed on the source branch during the run that the worker also changed.
    source_conflicts: list[str] = field(default_factory=list)
    source_detail: str = ""
    # Bytes of a path as the worker left it (None if deleted or not a regular file): binary detection
    # reads content, never git's attributes. Absent, gates fall back to ``new_text``.
    new_bytes: Callable[[str], bytes | None] | None = None
    # Every file path in the start commit (for gates that need to know which directories hold tests).
    base_paths: Callable[[], Iterable[str]] | None = None
    # Which files are tests: those the verify commands' runners reported, then the names (testset.py).
    tests: TestSet = field(default_factory=TestSet)
    # How the start tree's tests ran before the change and on its code (the held-out run), per test.
    originals: OriginalRuns = field(default_factory=OriginalRuns)
    # The verification doc as recorded: gates that judge what ran (the runner guard's records) read it.
    verification: dict[str, Any] = field(default_factory=dict)

    def content(self, path: str) -> bytes | None:
        """The bytes of ``path`` as the worker left it, or None when it is gone or unreadable."""
        if self.new_bytes is not None:
            return self.new_bytes(path)
        text = self.new_text(path)
        return None if text is None else text.encode("utf-8", "surrogateescape")

    @cached_property
    def start_paths(self) -> frozenset[str]:
        """The start commit's file paths (empty when the builder gave no listing)."""
        return frozenset(self.base_paths()) if self.base_paths is not None else frozenset()

    @cached_property
    def diff_files(self) -> list[FileDiff]:
        """The diff parsed once per context: several gates read added lines."""
        return parse_diff(self.diff)


def listing(items: Iterable[str], limit: int = MAX_LISTED) -> str:
    """Join items for a detail: "a, b, c, d, e and 3 more"."""
    seq = list(items)
    shown = ", ".join(seq[:limit])
    more = len(seq) - limit
    return f"{shown} and {more} more" if more > 0 else shown


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 file", "3 files"."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def unique(items: Sequence[str]) -> list[str]:
    """Items in first-seen order without repeats, so a path is named once per detail."""
    return list(dict.fromkeys(items))


def touched_paths(change: FileChange) -> list[str]:
    """The paths a change touches: its path and, for a rename, the source too.

    A copy ("C") leaves its source untouched, so only a rename names two changed paths.
    """
    if change.status[:1] == "R" and change.old_path and change.old_path != change.path:
        return [change.path, change.old_path]
    return [change.path]
