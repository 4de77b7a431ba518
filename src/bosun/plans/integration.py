"""Git for plans: the integration branch, landing task runs on it, the plan verify, and the final landing.

No step touches a work tree of the user's: commits are built with throwaway indexes
(``apply_patch_to_commit``) and ``git merge-tree --write-tree``; refs move with compare-and-swap
``update-ref``. The only write to the user's checkout is the final landing (``land``), through
``isolation/user_branch.py``, the one place a user's branch moves.

1. A task's *landing commit* is its verified diff applied on the commit its worktree started from
   (the integration head when its wave started). Built in the task's thread, in parallel.
2. After a wave, each landing is merged into the integration head in plan order: a fast-forward
   when nothing was merged since the wave started, else ``merge-tree`` + ``commit-tree``. A
   conflict leaves the branch as it was and names the files.
3. The final landing is ``source head at the checkpoint + diff(checkpoint -> integration head)``:
   when the plan started from a snapshot of the user's uncommitted work, that work is in the
   integration branch but never lands on the user's branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput, BosunError, Conflict
from bosun.isolation.verify_commands import verify_commit  # noqa: F401  (the plan runner's verify step; runs use it too)

if TYPE_CHECKING:
    from bosun.store.run import Run

ZERO = "0" * 40


class MergeConflict(Conflict):
    code = "MERGE_CONFLICT"

    def __init__(self, message: str, hint: str, files: list[str]) -> None:
        super().__init__(message, hint)
        self.files = files


def _git(args: list[str], repo: Path, **kw: Any) -> Any:
    from bosun.isolation.git import git

    return git(args, repo, **kw)


_IDENT: dict[str, dict[str, str]] = {}


def ident_env(repo: Path) -> dict[str, str]:
    """Committer identity for bosun's merge commits (the user's when configured); asked once per repo."""
    from bosun.isolation.worktree import identity_env

    key = str(repo)
    if key not in _IDENT:
        _IDENT[key] = identity_env(repo, None)
    return dict(_IDENT[key])


def branch_head(repo: Path, branch: str) -> str | None:
    res = _git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"], repo, check=False)
    sha = res.stdout.strip()
    return sha if res.returncode == 0 and sha else None


def create_branch(repo: Path, branch: str, commit: str) -> None:
    """Create ``branch`` at ``commit``; refuses (git's own check) if it already exists."""
    ok = _git(["check-ref-format", f"refs/heads/{branch}"], repo, check=False).returncode == 0
    if not ok:
        raise BadInput(f"'{branch}' is not a valid branch name",
                       f"bosun names a plan's integration branch from its id; `git check-ref-format --branch {branch}` "
                       "says why git refuses it (a repository setting?), then run the plan again")
    _git(["update-ref", "-m", "bosun: plan integration branch", f"refs/heads/{branch}", commit, ""], repo)


def set_ref(repo: Path, branch: str, commit: str) -> None:
    _git(["update-ref", "-m", "bosun: plan wave base", f"refs/heads/{branch}", commit], repo)


def move_branch(repo: Path, branch: str, new: str, old: str) -> None:
    """Compare-and-swap: move ``branch`` from ``old`` to ``new`` or raise ``Conflict``."""
    res = _git(["update-ref", "-m", "bosun: plan merge", f"refs/heads/{branch}", new, old], repo, check=False)
    if res.returncode != 0:
        raise Conflict(
            f"branch {branch} moved while bosun was merging into it",
            "something else changed the integration branch; `bosun plan resume` merges again",
            code="INTEGRATION_MOVED",
        )


def delete_branch(repo: Path, branch: str, old: str | None = None) -> None:
    args = ["update-ref", "-d", f"refs/heads/{branch}"]
    if old:
        args.append(old)
    _git(args, repo, check=False)


def is_ancestor(repo: Path, a: str, b: str) -> bool:
    from bosun.isolation.worktree import is_ancestor as anc

    return anc(repo, a, b)


def build_landing(run: Run, task: TaskContract, plan_id: str, task_id: str) -> tuple[str | None, str]:
    """The run's approved diff as one commit on its start commit: ``(landing or None, diff sha256)``.

    None when the change is empty (an explore/review task). The run's branch is pointed at the
    landing commit so it stays reachable until the plan merges it.
    """
    from bosun.core import paths
    from bosun.core.fileio import read_json
    from bosun.engine import record
    from bosun.engine.integration import commit_message
    from bosun.engine.verifying import digest as sha256_of
    from bosun.isolation.change import tree_diff
    from bosun.isolation.run_env import view_of

    repo = Path(run.repo)
    rdir = paths.run_dir(run.id)
    data = run.data
    tree = data.verified_tree
    # The approved tree is what lands, byte for byte: the worktree is never read again.
    if not tree or tree != data.approved_tree:
        raise BosunError(f"run {run.id} has no approved tree to land", "the task runs again", code="DIFF_CHANGED")
    diff = tree_diff(view_of(run), run.start_commit, tree)
    digest = sha256_of(diff)
    if data.approved_diff_sha256 and digest != data.approved_diff_sha256:
        raise BosunError(f"the diff of {run.id} changed after it was approved", "the task runs again",
                         code="DIFF_CHANGED")
    if not diff.strip():
        return None, digest
    verification = read_json(rdir / record.VERIFICATION, {}) or {}
    message = commit_message(run, task, verification) + f"Bosun-Plan: {plan_id}\nBosun-Task: {task_id}\n"
    parent = run.start_commit
    hold = data.holdout or {}
    if hold.get("paths"):
        # The worker started without the holdout files: they go back in, on the commit that has them.
        from bosun.isolation.heldout import with_holdout

        parent = hold["full_start"]
        tree = with_holdout(view_of(run), tree, parent, hold["paths"])
    landing = str(_git(["commit-tree", tree, "-p", parent, "-m", message], repo,
                       env=ident_env(repo)).stdout.strip())
    _git(["update-ref", f"refs/heads/{run.branch}", landing], repo)
    return landing, digest


def merge_landing(repo: Path, head: str, landing: str, start: str, message: str) -> str:
    """The integration head with ``landing`` merged in (no work tree). ``MergeConflict`` names the files."""
    if head == start:
        return landing  # nothing merged since the task started: a fast-forward
    res = _git(["merge-tree", "--write-tree", "--name-only", "--no-messages", head, landing], repo, check=False)
    lines = res.stdout.splitlines()
    if res.returncode == 1:
        files = []
        for ln in lines[1:]:
            if not ln.strip():
                break
            files.append(ln)
        files = sorted(set(files))
        raise MergeConflict(
            "conflicts with what is already merged into the integration branch: " + ", ".join(files[:10]),
            "sequence the conflicting tasks with depends and `bosun plan continue PLAN --plan fixed.yaml`",
            files,
        )
    if res.returncode != 0 or not lines:
        raise BosunError(f"git merge-tree failed: {res.stderr.strip()}", "check the repository state")
    tree = lines[0].strip()
    out = _git(["commit-tree", tree, "-p", head, "-p", landing, "-m", message], repo, env=ident_env(repo))
    return str(out.stdout.strip())


# -- the final landing ---------------------------------------------------------------------------


def plan_patch(repo: Path, checkpoint: str, head: str) -> bytes:
    """What the plan changed: the binary diff from the checkpoint to the integration head."""
    res = _git(
        ["-c", "core.quotePath=true", "diff", "--binary", "--full-index", "--no-color", "--no-ext-diff",
         "--no-textconv", "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", checkpoint, head],
        repo, text=False,
    )
    return bytes(res.stdout)


def changed_between(repo: Path, a: str, b: str) -> set[str]:
    out = _git(["diff", "--name-only", "-z", "--no-renames", a, b], repo).stdout
    return {p for p in out.split("\0") if p}


def build_final(
    repo: Path, plan: dict[str, Any], integration_head: str, message: str, scratch: Path
) -> dict[str, Any]:
    """Compute (without moving anything) what would land on the source branch.

    Returns ``{"head": current source head, "merged": commit to fast-forward to, "landing": the
    squashed commit on the checkpoint head, "touched": paths that change}``; ``merged`` is None when
    the plan changed nothing. Raises ``Conflict`` when it cannot land.
    """
    from bosun.isolation.worktree import apply_patch_to_commit

    branch = plan["source_branch"]
    head = branch_head(repo, branch)
    if head is None:
        raise Conflict(f"the source branch {branch} no longer exists", "recreate it, then `bosun plan continue`",
                       code="SOURCE_GONE")
    patch = plan_patch(repo, plan["checkpoint"], integration_head)
    if not patch.strip():
        return {"head": head, "merged": None, "landing": None, "touched": []}
    base = plan["source_head"]
    try:
        landing = apply_patch_to_commit(repo, base, patch, message, scratch)
    except Conflict as exc:
        if head == base:
            raise Conflict(
                "the plan's change builds on your uncommitted work, so it cannot land without it: " + exc.message,
                "commit that work on your branch, then `bosun plan continue " + plan["id"] + "`; or merge "
                f"branch {plan['integration_branch']} by hand",
                code="OVERLAPS_UNCOMMITTED",
            ) from None
        # The source branch moved (perhaps the user committed the work the plan built on): land on it.
        try:
            landing = apply_patch_to_commit(repo, head, patch, message, scratch)
            base = head
        except Conflict as exc2:
            raise MergeConflict(
                "the plan's change conflicts with commits made on your branch meanwhile: " + exc2.message,
                f"merge branch {plan['integration_branch']} by hand, or rebase your work and `bosun plan continue`",
                [],
            ) from None
    merged = landing if head == base else _merge_source(repo, head, landing, plan)
    return {"head": head, "merged": merged, "landing": landing, "touched": sorted(changed_between(repo, head, merged))}


def _merge_source(repo: Path, head: str, landing: str, plan: dict[str, Any]) -> str:
    try:
        return merge_landing(repo, head, landing, "", f"Merge bosun plan {plan['id']}")
    except MergeConflict as exc:
        raise MergeConflict(
            "the plan's change conflicts with commits made on your branch meanwhile: " + ", ".join(exc.files[:10]),
            f"merge branch {plan['integration_branch']} by hand, or resolve and `bosun plan continue {plan['id']}`",
            exc.files,
        ) from None


def reverify_target(repo: Path, plan: dict[str, Any], merged: str, scratch: Path) -> str:
    """The merged result plus the user's uncommitted work (when the plan carried it), as a commit."""
    from bosun.isolation.worktree import apply_patch_to_commit

    if plan["checkpoint"] == plan["source_head"]:
        return merged
    snap = plan_patch(repo, plan["source_head"], plan["checkpoint"])
    try:
        return apply_patch_to_commit(repo, merged, snap, "bosun: merged plan with uncommitted work", scratch)
    except (Conflict, BadInput):
        return merged


def tree(repo: Path, commit: str) -> str:
    from bosun.isolation.git import tree_of

    return tree_of(repo, commit)


def check_land(repo: Path, plan_id: str, branch: str, old: str, new: str) -> None:
    """Every refusal of moving the source branch, before the plan's re-verification is spent."""
    from bosun.isolation.user_branch import check_move

    check_move(repo, branch, old, new, again=f"`bosun plan continue {plan_id}`")


def land(repo: Path, plan_id: str, branch: str, old: str, new: str) -> None:
    """Move the source branch, its checkout (wherever it is) with it: ``isolation/user_branch.py``,
    the one place a user's branch moves."""
    from bosun.isolation.user_branch import move_branch as move_user_branch

    move_user_branch(repo, branch, old, new, message=f"bosun: land plan {plan_id}",
                     again=f"`bosun plan continue {plan_id}`")
