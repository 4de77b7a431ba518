"""Where a run starts, found in the user's repository before anything of the run exists.

The user's branch and HEAD; their uncommitted work, carried as a snapshot commit on top of HEAD
(never by touching their index); and the holdout files taken out of what the worker will see. The
prepare phase records all of it on the run: ``SOURCE_CHANGED`` and integration read it later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput


class StartPoint:
    """``start`` is the commit the worktree is checked out at; ``full_start`` the same before the
    holdout files were taken out (``hidden``); ``head`` the user's HEAD; ``uncommitted`` their tree's
    state, scanned once."""

    __slots__ = ("source_branch", "head", "uncommitted", "snapshot", "full_start", "start", "hidden")

    def __init__(self, source_branch: str | None, head: str, uncommitted: Any, snapshot: str | None,
                 full_start: str, start: str, hidden: list[str]) -> None:
        self.source_branch, self.head, self.uncommitted = source_branch, head, uncommitted
        self.snapshot, self.full_start, self.start, self.hidden = snapshot, full_start, start, hidden


def check_holdout(repo: Path, base: str, task: TaskContract) -> None:
    """Holdout globs that match no committed file are a mistake in the task: refused before the run exists."""
    if not task.holdout:
        return
    # Holdout files need the gates' notion of a test path. Imported only for a task that has them: the
    # gates package is the largest import of a delegation, and until the worker stops nothing else needs it.
    from bosun.isolation.heldout import holdout_paths

    if not holdout_paths(repo, base, task.holdout):
        raise BadInput(f"holdout {task.holdout} matches no file at {task.base}",
                       "name files committed in the repository (globs as in scope and locked)")


def find_start(repo: Path, task: TaskContract, base: str, carry_uncommitted: bool, scratch: Path) -> StartPoint:
    """The run's start point. ``carry_uncommitted=False`` starts from ``base`` exactly (plans: their
    integration branch already holds the user's snapshot). A detached HEAD is refused before
    ``scratch`` (in the run's directory) is made."""
    from bosun.isolation.git import current_branch, head_commit
    from bosun.isolation.snapshot import snapshot_commit, uncommitted_state

    source_branch = current_branch(repo)
    # The pre-flight resolved the base moments ago; with the default base that is HEAD already.
    head = base if task.base == "HEAD" else head_commit(repo)
    scratch.mkdir(parents=True, exist_ok=True)  # the run's directory exists from here on
    # One scan of the user's tree serves both the snapshot decision and SOURCE_CHANGED later.
    uncommitted = uncommitted_state(repo)
    # The user's uncommitted work only makes sense on top of their HEAD.
    carry = carry_uncommitted and base == head and bool(uncommitted)
    snapshot = snapshot_commit(repo, base, scratch, known_dirty=True) if carry else None
    full_start = snapshot or base
    start, hidden = full_start, list[str]()
    if task.holdout:
        from bosun.isolation.heldout import strip_holdout

        start, hidden = strip_holdout(repo, full_start, task.holdout, scratch)
    return StartPoint(source_branch, head, uncommitted, snapshot, full_start, start, hidden)
