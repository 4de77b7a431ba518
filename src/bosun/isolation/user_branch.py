"""Moving one of the user's branches: the one place integrate, revert, apply and a plan's landing do it.

Invariant: a user's branch only moves forward, from the commit bosun read to a descendant of it, and
wherever it is checked out (the repository bosun was pointed at, or any other worktree of it) that
work tree moves with it, the way ``git merge --ff-only`` moves it: files the move does not touch keep
their staged and unstaged changes, and uncommitted files that overlap what changes refuse the move,
naming the worktree and the files, before anything is written. A branch that some worktree is
rebasing or bisecting, or that is checked out in a worktree whose directory is missing, is refused,
naming that worktree: moving its ref would leave that work tree's files behind the branch, which git
then shows as a staged undo of the change. A branch checked out nowhere has only its ref moved,
compare-and-swap.

``check_move`` is every refusal, asked before anything else is done (integration asks it before it
spends a re-verification); ``move_branch`` asks it again and moves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bosun.core.errors import Conflict


@dataclass(frozen=True)
class Holder:
    """A worktree that holds the branch: where it is, and what it is doing with it."""

    path: Path
    doing: str  # "checked out", "being rebased", "being bisected"
    primary: bool  # it is the repository bosun was pointed at
    present: bool  # its directory exists


def holder_of(repo: Path | str, branch: str) -> Holder | None:
    """The worktree of ``repo`` that has ``branch`` checked out (or is rebasing or bisecting it)."""
    here = os.path.realpath(repo)
    want = f"refs/heads/{branch}"
    for path, admin, head in _worktrees(repo):
        doing = "checked out" if head == want else _busy_with(admin, want, branch)
        if doing:
            real = os.path.realpath(path)
            return Holder(Path(path), doing, real == here, os.path.isdir(path))
    return None


def _worktrees(repo: Path | str) -> list[tuple[str, Path, str]]:
    """``(work tree, admin dir, HEAD)`` of every worktree of the repository, primary first."""
    from bosun.isolation.git import git

    common = Path(git(["rev-parse", "--path-format=absolute", "--git-common-dir"], repo).stdout.strip())
    admins = {os.path.realpath(os.path.dirname(_read(d / "gitdir"))): d
              for d in sorted((common / "worktrees").glob("*")) if (d / "gitdir").is_file()}
    out: list[tuple[str, Path, str]] = []
    path, head, bare, first = "", "", False, True
    listing = git(["worktree", "list", "--porcelain", "-z"], repo).stdout.split("\0") + [""]
    for field in listing:
        if field.startswith("worktree "):
            path, head, bare = field[len("worktree "):], "", False
        elif field.startswith("branch "):
            head = field[len("branch "):]
        elif field == "bare":
            bare = True
        elif not field and path:
            # git lists the main worktree first; its admin dir is the common dir itself.
            admin = common if first else admins.get(os.path.realpath(path), common / "worktrees" / "?")
            if not bare:
                out.append((path, admin, head))
            path, first = "", False
    return out


def _busy_with(admin: Path, ref: str, branch: str) -> str:
    """Whether the worktree whose admin dir is ``admin`` is rebasing or bisecting ``branch`` (its HEAD
    is detached meanwhile, and git puts the branch back at the end)."""
    for state in ("rebase-merge", "rebase-apply"):
        if _read(admin / state / "head-name") == ref:
            return "being rebased"
    if _read(admin / "BISECT_START") in (branch, ref):
        return "being bisected"
    return ""


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def check_move(repo: Path | str, branch: str, head: str, new: str, *, again: str = "run this again") -> Holder | None:
    """Every refusal of moving ``branch`` from ``head`` to ``new``, before anything is written: the
    worktree that holds it busy or missing, or its uncommitted files where the move would write.
    Returns the worktree that will move with the branch (None: only the ref moves)."""
    from bosun.isolation.snapshot import uncommitted_paths

    holder = holder_of(repo, branch)
    if holder is None:
        return None
    if holder.doing != "checked out":
        raise Conflict(f"branch {branch!r} is {holder.doing} in the worktree at {holder.path}",
                       f"finish or abort that in {holder.path} (`git status` there says how), then {again}",
                       code="BRANCH_CHECKED_OUT")
    if not holder.present:
        raise Conflict(f"branch {branch!r} is checked out in a worktree whose directory is missing: {holder.path}",
                       "bring that directory back, or `git worktree prune` if it is gone for good, then "
                       + again, code="BRANCH_CHECKED_OUT")
    overlap = sorted(uncommitted_paths(holder.path) & changed_between(repo, head, new))
    if overlap:
        where = "" if holder.primary else f" in the worktree at {holder.path}"
        raise Conflict(
            f"your uncommitted changes{where} overlap the files this would change: " + ", ".join(overlap[:5]),
            f"commit or stash those files{where} yourself, then {again}", code="OVERLAPS_UNCOMMITTED")
    return holder


def uncommitted_overlap(repo: Path | str, branch: str, start: str, tree: str) -> dict[str, Any] | None:
    """Where the change from ``start`` to ``tree`` touches files with uncommitted changes in the
    checkout that holds ``branch`` (moving the branch would refuse them): ``{paths, checkout}``, or
    None when nothing overlaps (or the branch is checked out nowhere)."""
    from bosun.isolation.snapshot import uncommitted_paths

    holder = holder_of(repo, branch)
    if holder is None or not holder.present or holder.doing != "checked out":
        return None
    overlap = sorted(uncommitted_paths(holder.path) & changed_between(repo, start, tree))
    return {"paths": overlap, "checkout": str(holder.path)} if overlap else None


def changed_between(repo: Path | str, a: str, b: str) -> set[str]:
    from bosun.isolation.git import git

    out = git(["diff", "--name-only", "-z", "--no-renames", a, b], repo).stdout
    return {p for p in out.split("\0") if p}


def move_branch(repo: Path | str, branch: str, head: str, new: str, *, message: str,
                again: str = "run this again") -> Holder | None:
    """``branch`` from ``head`` to its descendant ``new``, its checkout (wherever it is) with it.
    Returns the worktree that moved (None: only the ref did)."""
    from bosun.isolation.git import git
    from bosun.isolation.worktree import fast_forward_user_branch

    holder = check_move(repo, branch, head, new, again=again)
    if holder is None:
        moved = git(["update-ref", "-m", message, f"refs/heads/{branch}", new, head], repo, check=False)
        if moved.returncode != 0:
            raise Conflict(f"branch {branch!r} moved while bosun was working", f"{again} on its new tip")
        return None
    try:
        fast_forward_user_branch(holder.path, branch, head, new, message=message)
    except Conflict as exc:
        if holder.primary:
            raise
        raise Conflict(f"in the worktree at {holder.path}: {exc.message}", exc.hint, code=exc.code) from None
    return holder
