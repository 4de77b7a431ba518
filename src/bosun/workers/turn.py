"""One worker turn, guarded: the one call the attempt phase makes below the engine for each attempt.

Around the adapter's own ``run``, two things of the user's are saved, compared after the worker
stopped, and put back where they changed: the git dir's files that steer git (its common dir: config,
hooks, the worktrees' admin files; ``isolation/gitwatch.py``) and the modes, owners and flags of
every file and directory of the repository (``isolation/modewatch.py``). The worker runs confined,
so it should reach neither; this is what catches it when the kernel sandbox is off or has a gap. What
changed is returned, never silently restored: the engine records it, and verification turns it into
the USER_GIT_TAMPERED and USER_FILES_TAMPERED gates (engine/checking.py).

A review turn (``watch_git=False``) is not watched: it is no worker of the run, and its confinement
is read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bosun.workers.base import Worker, WorkerContext, WorkerResult


@dataclass
class Turn:
    """What one turn left: the worker's result, and what it changed in the user's git dir."""

    result: WorkerResult
    git_tampered: dict[str, Any] | None = None  # {"changed", "restored", "failed"}: relative paths
    files_tampered: dict[str, Any] | None = None  # the same, for modes, owners and flags


def run_turn(worker: Worker, wctx: WorkerContext, repo: Path, *, watch_git: bool = True) -> Turn:
    """Run ``worker`` once on ``wctx``; with ``watch_git``, keep watch on ``repo``'s git dir around it.
    An exception (bosun going down) propagates with nothing restored: the run stays recoverable."""
    if not watch_git:
        return Turn(worker.run(wctx))
    from bosun.core.paths import bosun_home
    from bosun.isolation import gitwatch, modewatch

    common, before = gitwatch.take(repo)
    roots = (repo, common)
    modes = modewatch.take(roots, skip=(bosun_home(), wctx.worktree))
    result = worker.run(wctx)
    turn = Turn(result)
    changed = gitwatch.changes(common, before)
    if changed:
        failed = gitwatch.restore(common, before, changed)
        restored = [c for c in changed if c not in failed]
        turn.git_tampered = {"changed": changed, "restored": restored, "failed": failed}
    moved = modewatch.changes(modes)
    if moved:
        turn.files_tampered = modewatch.tampering(modes, moved, modewatch.restore(modes, moved), repo)
    return turn


def merged_tampering(first: dict[str, Any] | None, then: dict[str, Any] | None) -> dict[str, Any] | None:
    """What two turns (an attempt and its fallback) changed in the user's git dir, together."""
    if not first or not then:
        return first or then
    return {key: list(dict.fromkeys([*first[key], *then[key]])) for key in ("changed", "restored", "failed")}


def tampering_message(found: dict[str, Any], what: str = "the repository's git dir") -> str:
    """The one sentence the run's events say about it."""
    message = f"the worker changed {what}: " + ", ".join(found["changed"][:8])
    if found["restored"]:
        message += "; bosun restored " + ", ".join(found["restored"][:8])
    if found["failed"]:
        message += "; could NOT restore " + ", ".join(found["failed"][:8]) + " (check them by hand)"
    return message
