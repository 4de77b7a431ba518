"""The git side of landing a verified run: the one call integration makes below the engine to build
what would land (``build_landing``), and the one that moves the user's branch (``move_branches``).

1. The landing commit is ``base + the worker's diff``, built with a throwaway index, so user work
   that a dirty-tree snapshot carried into the worktree is never committed.
2. If the source branch moved, the landing commit is merged with ``git merge-tree --write-tree``
   (no work tree involved); a conflict refuses with the conflicting paths.
3. If the user's uncommitted files overlap what would change, refuse: nothing is touched.
4. Verification re-runs on the merged result (plus the user's uncommitted work) in the run's
   worktree, before the user's branch moves.
5. The user's branch is fast-forwarded the way ``git merge --ff-only`` would (local changes in
   other files survive, staged stays staged), in whichever worktree has it checked out
   (``isolation/user_branch.py``, the one place a user's branch moves). Nothing is ever pushed.

Until ``move_branches``, nothing the user sees has changed: only objects were written. The engine
(engine/integration.py) decides between the two calls, from what ``build_landing`` returns.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput, BosunError, Conflict, Rejected

if TYPE_CHECKING:
    from bosun.store.run import Run

BOSUN_IDENT = ("bosun", "bosun@localhost")


@dataclass
class Landing:
    """What would land, built and checked; nothing the user sees has moved yet."""

    ident: tuple[str, str]  # who the landing commit is authored by
    landing: str  # base + the verified change
    head: str  # the source branch's tip, read once
    merged: str  # what the branch will point at: ``landing``, or its merge with ``head``
    reverification: dict[str, Any] | None = None  # the verify commands on the merged result, when asked


def build_landing(run: Run, task: TaskContract, *, approved_diff_sha256: str | None,
                  message: str, scratch: Path, reverify: bool) -> Landing:
    """The landing commit of exactly the approved tree, merged onto the source branch's tip, the
    user's uncommitted files checked for overlap, and verified again when ``reverify``.

    Refuses (``DIFF_CHANGED``) when the tree's diff is not the approved one, ``MERGE_CONFLICT`` and
    ``OVERLAPS_UNCOMMITTED`` as they say, and an empty change."""
    from bosun.isolation.change import tree_diff
    from bosun.isolation.git import resolve_commit
    from bosun.isolation.run_env import view_of
    from bosun.isolation.user_branch import check_move

    repo = Path(run.repo)
    tree = verified_tree(run)
    diff = tree_diff(view_of(run), run.start_commit, tree)
    if hashlib.sha256(diff).hexdigest() != approved_diff_sha256:
        raise Rejected(f"the diff of {run.id} changed after it was approved", "run `bosun verify` and approve again",
                       code="DIFF_CHANGED")
    if not diff.strip():
        raise BadInput("nothing to commit", "the change is empty: there is nothing to land")
    ident = identity(repo)
    try:
        landing = landing_commit(repo, run, diff, message, scratch, ident)
    except Conflict as exc:
        raise Conflict(
            "the worker's change builds on your uncommitted work, so it cannot land on its own: " + exc.message,
            "commit your work first and re-run the task, or apply diff.patch by hand "
            f"({paths.run_dir(run.id) / 'diff.patch'})",
            code="OVERLAPS_UNCOMMITTED",
        ) from None
    head = resolve_commit(repo, f"refs/heads/{run.source_branch}")
    merged = landing if head == run.base else _merge(repo, head, landing, run.id, ident)
    # Every refusal comes before a re-verification is spent.
    check_move(repo, run.source_branch, head, merged, again=f"run `bosun integrate {run.id}` again")
    found = Landing(ident, landing, head, merged)
    if reverify and task.verify:
        target = _reverify_target(run, merged, scratch)
        found.reverification = {**reverify_merged(run, task, target), "commit": target}
    return found


def move_branches(run: Run, found: Landing) -> None:
    """The user's branch to the merged result (fast-forward, as ``git merge --ff-only``, its checkout
    wherever it is with it), and the run's branch to its landing commit."""
    from bosun.isolation.git import git
    from bosun.isolation.user_branch import move_branch

    repo = Path(run.repo)
    move_branch(repo, run.source_branch, found.head, found.merged, message=f"bosun: integrate run {run.id}",
                again=f"run `bosun integrate {run.id}` again")
    git(["update-ref", f"refs/heads/{run.branch}", found.landing], repo)


def identity(repo: Path) -> tuple[str, str]:
    from bosun.isolation.git import git

    name = git(["config", "user.name"], repo, check=False).stdout.strip()
    email = git(["config", "user.email"], repo, check=False).stdout.strip()
    return (name, email) if name and email else BOSUN_IDENT


def _merge(repo: Path, head: str, landing: str, run_id: str, ident: tuple[str, str]) -> str:
    from bosun.isolation.git import git

    res = git(["merge-tree", "--write-tree", "--name-only", head, landing], repo, check=False)
    lines = res.stdout.splitlines()
    if res.returncode == 1:
        files = sorted({ln for ln in lines[1:] if ln and not ln.startswith(("Auto-merging", "CONFLICT"))})
        raise Conflict(
            "the worker's change conflicts with commits made on the source branch during the run: "
            + ", ".join(files[:5]),
            "re-run the task on the current branch (`bosun delegate` again), or merge branch "
            f"bosun/{run_id} by hand",
            code="MERGE_CONFLICT",
        )
    if res.returncode != 0 or not lines:
        raise Conflict(f"git merge-tree failed: {res.stderr.strip()}", "check the repository state")
    tree = lines[0].strip()
    env = _ident_env(ident)
    out = git(
        ["commit-tree", tree, "-p", head, "-p", landing, "-m", f"Merge bosun run {run_id}"], repo, env=env
    )
    return out.stdout.strip()


def _ident_env(ident: tuple[str, str]) -> dict[str, str]:
    name, email = ident
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}


def _reverify_target(run: Run, merged: str, scratch: Path) -> str:
    """The commit re-verification runs on: the merged result plus the user's uncommitted work if the
    run carried it (when that still applies)."""
    from bosun.isolation.git import git
    from bosun.isolation.worktree import apply_patch_to_commit

    repo = Path(run.repo)
    if not run.data.snapshot:
        return merged
    full_start = (run.data.holdout or {}).get("full_start") or run.start_commit
    raw = git(["diff", "--binary", "--full-index", run.base, full_start], repo, text=False).stdout
    snap_patch = raw if isinstance(raw, bytes) else raw.encode()
    if not snap_patch:
        return merged
    try:
        return apply_patch_to_commit(repo, merged, snap_patch, "bosun: merged result with uncommitted work", scratch)
    except Conflict:
        return merged


def reverify_merged(run: Run, task: TaskContract, target: str) -> dict[str, Any]:
    """Verify ``target`` exactly, the way verification ran: materialized by bosun's view in the worktree,
    fresh HOME. The worktree is put back to the verified tree afterwards."""
    from bosun.isolation.change import materialize
    from bosun.isolation.git import tree_of
    from bosun.isolation.run_env import run_verify_commands, view_of

    view = view_of(run)
    try:
        materialize(view, tree_of(run.repo, target))
        return run_verify_commands(task, run, Path(run.worktree))
    finally:
        materialize(view, verified_tree(run))


def verified_tree(run: Run) -> str:
    """The tree verification read: what lands, and what the worktree is put back to."""
    tree = run.data.verified_tree
    if not tree:
        raise BosunError(f"run {run.id} has no verified tree", f"`bosun verify {run.id}` first", code="NOT_VERIFIED")
    return tree


def landing_commit(repo: Path, run: Run, diff: bytes, message: str, scratch: Path,
                   ident: tuple[str, str] | None) -> str:
    """``base`` + the verified change. Without a snapshot the verified tree *is* the landing tree: it is
    committed as is, so what was verified is byte for byte what lands."""
    from bosun.isolation.git import git
    from bosun.isolation.worktree import apply_patch_to_commit, identity_env

    tree = verified_tree(run)
    if run.start_commit == run.base:
        env = identity_env(repo, ident)
        return git(["commit-tree", tree, "-p", run.base, "-m", message], repo, env=env).stdout.strip()
    return apply_patch_to_commit(repo, run.base, diff, message, scratch, author=ident)


def checked_out_branch(repo: Path) -> str | None:
    from bosun.isolation.git import git

    res = git(["symbolic-ref", "--quiet", "--short", "HEAD"], repo, check=False)
    return res.stdout.strip() if res.returncode == 0 else None
