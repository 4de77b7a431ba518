"""``bosun apply RUN --to BRANCH``: land a verified (or landed) run's change on another branch.

The change is the run's landing commit against its parent when the run landed, else its verified tree
against its start (so user work a snapshot carried in is never part of it). It is merged three-way into
the tip of BRANCH (:func:`bosun.engine.undo_git.three_way`) and committed there; a conflict refuses,
naming the files. Then, as integration does, the result is re-verified before the branch moves: the
task's verify commands on exactly that commit (in the run's worktree while the run still owns it, set up
as when it was verified; otherwise in a temporary worktree), and a failure refuses with the branch
where it was. The branch moves the way integration moves it (:func:`bosun.isolation.user_branch.move_branch`);
nothing is pushed.

Refused before anything changes: an unknown run, a run that was neither verified nor landed, a read-only
run, a run whose verdict still waits for a person, an unknown branch, the run's own branch, and the
user's uncommitted files where the change would write.

The record: ``applied`` on the run (this module is its one writer), an ``applied`` event in its
``events.jsonl``, ``apply-<branch>.json`` (the re-verification) in its directory, and a note in its
transition history (its state stays).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths, states
from bosun.core.errors import BadInput, Conflict, Rejected
from bosun.engine import locks, record
from bosun.engine.undo_git import branch_head, commit_on, three_way

if TYPE_CHECKING:
    from bosun.core.contract import TaskContract
    from bosun.engine.context import RunContext
    from bosun.store.run import Run

# States in which the run's worktree is still the run's own (not removed, not given back to the pool).
OWNS_WORKTREE = frozenset({states.VERIFIED, states.APPROVED, states.INTEGRATED, states.REPORTED})


def apply(ctx: RunContext, run_id: str, branch: str, reverify: bool = True) -> dict[str, Any]:
    """Carry ``run_id``'s change onto ``branch``. Returns ``{"run": the run, "apply": what was done}``."""
    from bosun.engine.context import load_task
    from bosun.isolation.git import tree_of
    from bosun.isolation.user_branch import check_move, move_branch

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        task = load_task(run_id)
        base_tree, change_tree = change_of(run, task)
        repo = Path(run.repo)
        _check_other_branch(run, branch)
        head = branch_head(repo, branch)
        tree, conflicts = three_way(repo, base_tree, tree_of(repo, head), change_tree)
        if conflicts:
            raise Conflict(f"run {run.id}'s change conflicts with {branch}: " + ", ".join(conflicts[:5]),
                           f"delegate the task again with `base: {branch}` in the task, or merge by hand",
                           code="MERGE_CONFLICT")
        if tree == tree_of(repo, head):
            raise BadInput(f"{branch} already has run {run.id}'s change: applying it would change nothing",
                           "nothing to do", code="ALREADY_APPLIED")
        commit = commit_on(repo, tree, head, _message(run, task, branch))
        again = f"run `bosun apply {run.id} --to {branch}` again"
        check_move(repo, branch, head, commit, again=again)  # every refusal before a re-verification is spent
        verification = _reverify_on(run, task, commit, branch) if reverify and task.verify else None
        move_branch(repo, branch, head, commit, message=f"bosun: apply run {run.id}", again=again)
        done = {"branch": branch, "commit": commit, "reverified": verification is not None, "at": time.time()}
        ctx.store.write(run, applied=[*(run.data.applied or []), done])
        _event(run.id, "applied", branch=branch, commit=commit, reverified=verification is not None)
        ctx.store.note(run.id, f"applied to {branch} as {commit[:12]}")
        return {"run": ctx.store.require_run(run.id), "apply": {**done, "verification": verification}}


def change_of(run: Run, task: TaskContract) -> tuple[str, str]:
    """``(before, after)`` trees of the run's change: its landing commit's, or its verified tree's."""
    from bosun.engine.approval import ensure_landable, ensure_may_land
    from bosun.isolation.git import tree_of

    repo = Path(run.repo)
    ensure_landable(run, task)  # a read-only run never lands anything, here or anywhere
    landing = run.data.landing_commit
    if landing and run.merged_commit:
        return tree_of(repo, f"{landing}^"), tree_of(repo, landing)
    tree = run.data.verified_tree
    if run.state not in (states.VERIFIED, states.APPROVED) or not tree or not run.data.verification_passed:
        raise BadInput(f"run {run.id} is {run.state!r}: only a verified (or landed) run's change can be applied",
                       f"`bosun verify {run.id}` first, or `bosun show {run.id}` for what it is waiting for",
                       code="NOT_VERIFIED")
    ensure_may_land(run)  # landable, or its review reasons acknowledged (`bosun approve`)
    return tree_of(repo, run.start_commit), tree


def _check_other_branch(run: Run, branch: str) -> None:
    if branch != run.source_branch:
        return
    if run.merged_commit:
        raise BadInput(f"run {run.id} landed on {branch} already", "name another branch with --to",
                       code="SAME_BRANCH")
    raise BadInput(f"{branch} is the branch run {run.id} started from", f"`bosun integrate {run.id}` lands it there",
                   code="SAME_BRANCH")


def _message(run: Run, task: TaskContract, branch: str) -> str:
    from bosun.engine.integration import commit_message

    verification = record.read_doc(run.id, record.VERIFICATION, {}) or {}
    return commit_message(run, task, verification) + f"Bosun-Applied-To: {branch}\n"


def _reverify_on(run: Run, task: TaskContract, commit: str, branch: str) -> dict[str, Any]:
    """The verify commands on exactly ``commit``; a failure refuses (the branch has not moved)."""
    result = _verify_commit(run, task, commit)
    result["commit"] = commit
    record.write_doc(run.id, f"apply-{_file_safe(branch)}.json", result)
    if not result.get("passed"):
        _event(run.id, "apply_refused", branch=branch, commit=commit)
        raise Rejected(f"verification failed on run {run.id}'s change applied to {branch}; {branch} was not changed",
                       f"see apply-{_file_safe(branch)}.json in {paths.run_dir(run.id)}; the change needs "
                       f"work on {branch}: delegate the task again with `base: {branch}`", code="REVERIFY_FAILED")
    return result


def _verify_commit(run: Run, task: TaskContract, commit: str) -> dict[str, Any]:
    from bosun.isolation.landing import reverify_merged
    from bosun.isolation.verify_commands import verify_commit, verify_confinement

    if run.state in OWNS_WORKTREE and run.data.verified_tree and Path(run.worktree).is_dir():
        return reverify_merged(run, task, commit)  # as integrate re-verifies: the run's worktree, its set-up
    repo = Path(run.repo)
    return verify_commit(repo, commit, task.verify, paths.run_dir(run.id) / "apply", task.title,
                         confine_to=lambda wt, home: verify_confinement(repo, wt, home))


def _file_safe(branch: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", branch)


def _event(run_id: str, kind: str, **fields: Any) -> None:
    record.EventLog(paths.run_dir(run_id) / record.EVENTS).append({"type": kind, **fields})
