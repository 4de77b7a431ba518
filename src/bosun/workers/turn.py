"""One worker turn, guarded: the one call the attempt phase makes below the engine for each attempt.

Around the adapter's own ``run``, the user's git dir (its common dir: refs, config, hooks, the
worktrees' admin files) is saved, compared after the worker stopped, and put back where it changed.
The worker runs confined, so it should not reach that dir at all; this is what catches it when the
kernel sandbox is off or has a gap. What changed is returned, never silently restored: the engine
records it, and verification turns it into the USER_GIT_TAMPERED gate (engine/checking.py).

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


def run_turn(worker: Worker, wctx: WorkerContext, repo: Path, *, watch_git: bool = True) -> Turn:
    """Run ``worker`` once on ``wctx``; with ``watch_git``, keep watch on ``repo``'s git dir around it.
    An exception (bosun going down) propagates with nothing restored: the run stays recoverable."""
    if not watch_git:
        return Turn(worker.run(wctx))
    from bosun.isolation import gitwatch

    common, before = gitwatch.take(repo)
    result = worker.run(wctx)
    changed = gitwatch.changes(common, before)
    if not changed:
        return Turn(result)
    failed = gitwatch.restore(common, before, changed)
    restored = [c for c in changed if c not in failed]
    return Turn(result, {"changed": changed, "restored": restored, "failed": failed})


def merged_tampering(first: dict[str, Any] | None, then: dict[str, Any] | None) -> dict[str, Any] | None:
    """What two turns (an attempt and its fallback) changed in the user's git dir, together."""
    if not first or not then:
        return first or then
    return {key: list(dict.fromkeys([*first[key], *then[key]])) for key in ("changed", "restored", "failed")}


def tampering_message(found: dict[str, Any]) -> str:
    """The one sentence the run's events say about it."""
    message = "the worker changed the repository's git dir: " + ", ".join(found["changed"][:8])
    if found["restored"]:
        message += "; bosun restored " + ", ".join(found["restored"][:8])
    if found["failed"]:
        message += "; could NOT restore " + ", ".join(found["failed"][:8]) + " (check them by hand)"
    return message
