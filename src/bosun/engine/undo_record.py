"""A run's ``reverted`` record, written in one place: by ``bosun revert`` (its revert commit, or the
revert run it prepared) and by integration when that revert run lands (the commit that reverted it).

Invariant: once the revert has landed, ``reverted.commit`` names the commit that undid the run, however
it was made, so every surface shows the run as reverted from its own record (``core/states.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bosun.store.db import Store
    from bosun.store.run import Run


def mark_reverted(store: Store, run: Run, done: dict[str, Any]) -> None:
    """``run``'s change was reverted (``{commit | run, branch, landing, at}``)."""
    store.write(run, reverted=done)


def revert_run_landed(store: Store, revert_run: Run, landing: str) -> None:
    """``revert_run`` (prepared by ``revert --onto-worktree``) landed as ``landing``: the run it reverts
    records that commit as the one that reverted it."""
    of = revert_run.data.revert_of or {}
    original = store.get_run(of["run"]) if of.get("run") else None
    if original is not None and (original.data.reverted or {}).get("run") == revert_run.id:
        mark_reverted(store, original, {**(original.data.reverted or {}), "commit": landing})
