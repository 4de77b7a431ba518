"""Integration: land an approved run's change on the user's branch, safely.

1. The landing commit is ``base + the worker's diff``, built with a throwaway index, so user work
   that a dirty-tree snapshot carried into the worktree is never committed.
2. If the source branch moved, the landing commit is merged with ``git merge-tree --write-tree``
   (no work tree involved); a conflict refuses with the conflicting paths.
3. If the user's uncommitted files overlap what would change, refuse: nothing is touched.
4. Verification re-runs on the merged result (plus the user's uncommitted work) in the run's
   worktree, before the user's branch moves.
5. The user's branch is fast-forwarded the way ``git merge --ff-only`` would (local changes in
   other files survive, staged stays staged). Nothing is ever pushed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths, states
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput, BosunError, Conflict, Rejected
from bosun.core.fileio import read_json
from bosun.engine import record
from bosun.engine.stops import RunStopped, stopping

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.db import Store
    from bosun.store.run import Run

BOSUN_IDENT = ("bosun", "bosun@localhost")


def identity(repo: Path) -> tuple[str, str]:
    from bosun.isolation.git import git

    name = git(["config", "user.name"], repo, check=False).stdout.strip()
    email = git(["config", "user.email"], repo, check=False).stdout.strip()
    return (name, email) if name and email else BOSUN_IDENT


def commit_message(run: Run, task: TaskContract, verification: dict[str, Any]) -> str:
    cmds = verification.get("commands", [])
    if verification.get("passed"):
        verdict = f"passed ({len(cmds)} command{'s' if len(cmds) != 1 else ''})"
    else:
        verdict = "none (waived)"
    profile = run.profile or "unknown"
    return (
        f"{task.title}\n\n"
        f"Delegated to a worker by bosun and independently verified.\n\n"
        f"Bosun-Run: {run.id}\n"
        f"Bosun-Worker: {profile}\n"
        f"Bosun-Verification: {verdict}; diff sha256 {run.diff_sha256}\n"
    )


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


def changed_between(repo: Path, a: str, b: str) -> set[str]:
    from bosun.isolation.git import git

    out = git(["diff", "--name-only", "-z", "--no-renames", a, b], repo).stdout
    return {p for p in out.split("\0") if p}


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
    from bosun.isolation.run_env import view_of
    from bosun.isolation.verification import run_verify_commands

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


def integrate_run(ctx: RunContext, run: Run, task: TaskContract, reverify: bool) -> None:
    from bosun.isolation.change import tree_diff
    from bosun.isolation.git import git, resolve_commit
    from bosun.isolation.run_env import view_of
    from bosun.isolation.snapshot import uncommitted_paths
    from bosun.isolation.worktree import fast_forward_user_branch

    run_id = run.id
    repo = Path(run.repo)
    rdir = paths.run_dir(run_id)
    scratch = rdir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)

    tree = run.data.verified_tree
    if not tree or tree != run.data.approved_tree:
        ctx.store.transition(run_id, states.APPROVED, states.REJECTED, "approved tree missing or changed")
        raise Rejected(f"{run_id} has no approved tree to land", "run `bosun verify` and approve again",
                       code="DIFF_CHANGED")
    view = view_of(run)
    diff = tree_diff(view, run.start_commit, tree)
    if hashlib.sha256(diff).hexdigest() != run.data.approved_diff_sha256:
        ctx.store.transition(run_id, states.APPROVED, states.REJECTED, "diff changed after approval")
        raise Rejected(
            f"the diff of {run_id} changed after it was approved", "run `bosun verify` and approve again",
            code="DIFF_CHANGED",
        )
    verification = read_json(rdir / record.VERIFICATION, {}) or {}
    ident = identity(repo)
    if ident == BOSUN_IDENT:
        from bosun.workers.base import ev_message

        note = ("no git identity is set (user.name, user.email), so the landing commit is authored "
                "bosun <bosun@localhost>; `git config user.name ...` and `git config user.email ...` change that")
        record.EventLog(rdir / record.EVENTS).append(ev_message(note, role="system"))
        ctx.store.merge_data(run.id, landing_author_note=note)
    if not diff.strip():
        raise BadInput("nothing to commit", "the change is empty: there is nothing to land")
    try:
        landing = landing_commit(repo, run, diff, commit_message(run, task, verification), scratch, ident)
    except Conflict as exc:
        raise Conflict(
            "the worker's change builds on your uncommitted work, so it cannot land on its own: " + exc.message,
            "commit your work first and re-run the task, or apply diff.patch by hand "
            f"({rdir / record.DIFF})",
            code="OVERLAPS_UNCOMMITTED",
        ) from None

    branch = run.source_branch
    head = resolve_commit(repo, f"refs/heads/{branch}")
    merged = landing if head == run.base else _merge(repo, head, landing, run_id, ident)

    touched = changed_between(repo, head, merged)
    on_branch = checked_out_branch(repo) == branch
    if on_branch:
        overlap = sorted(uncommitted_paths(repo) & touched)
        if overlap:
            raise Conflict(
                "your uncommitted changes overlap the files this change touches: " + ", ".join(overlap[:5]),
                "commit or stash those files yourself, then run `bosun integrate` again",
                code="OVERLAPS_UNCOMMITTED",
            )

    if reverify and task.verify:
        target = _reverify_target(run, merged, scratch)
        result = reverify_merged(run, task, target)
        result["commit"] = target
        record.write_doc(run_id, "reverification.json", result)
        if not result["passed"]:
            with stopping(ctx, run):
                raise RunStopped(states.REJECTED, Rejected(
                    f"verification failed on the merged result of {run_id}; your branch was not changed",
                    "the source branch changed underneath the run: see reverification.json in the run "
                    "directory, and re-run the task on the current branch", code="REVERIFY_FAILED"),
                    "re-verification on the merged result failed")

    if on_branch:
        fast_forward_user_branch(repo, branch, head, merged)
    else:
        git(["update-ref", f"refs/heads/{branch}", merged, head], repo)
    git(["update-ref", f"refs/heads/{run.branch}", landing], repo)
    ctx.store.update_run(run_id, merged_commit=merged)
    record_landing(ctx.store, run_id, landing, reverified=bool(reverify and task.verify))
    ctx.store.transition(run_id, states.APPROVED, states.INTEGRATED, f"merged into {branch} at {merged[:12]}")


def checked_out_branch(repo: Path) -> str | None:
    from bosun.isolation.git import git

    res = git(["symbolic-ref", "--quiet", "--short", "HEAD"], repo, check=False)
    return res.stdout.strip() if res.returncode == 0 else None


def record_landing(store: Store, run_id: str, landing: str | None, reverified: bool | None = None) -> None:
    """The commit that carried the run's change onto a branch (integrate's, or a plan's merge): what
    ``bosun revert`` undoes. This module is the one writer of ``landing_commit``."""
    store.merge_data(run_id, landing_commit=landing, reverified=reverified)
