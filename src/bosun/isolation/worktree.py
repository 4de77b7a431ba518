"""The worker's worktree: creating it, landing a change, removing it.

Reading the worker's change back is :mod:`bosun.isolation.change`'s job (bosun's own git dir, never
the worktree's). Landing never touches a work tree or ref except in ``fast_forward_user_branch``,
which moves the user's branch the way ``git merge --ff-only`` would and refuses rather than overwrite
their uncommitted work.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import tempfile
import time
from pathlib import Path

from bosun.core.errors import BadInput, Conflict
from bosun.core.paths import RUN_ID_RE
from bosun.isolation.git import GitError, git, git_path, tree_of
from bosun.isolation.snapshot import BOSUN_EMAIL, BOSUN_NAME, NO_SPLIT_INDEX


def branch_exists(repo: Path | str, branch: str) -> bool:
    res = git(["show-ref", "--verify", "--quiet", f"refs/heads/{branch}"], repo, check=False)
    return res.returncode == 0


def is_ancestor(repo: Path | str, a: str, b: str) -> bool:
    """True when commit ``a`` is ``b`` or one of its ancestors."""
    res = git(["merge-base", "--is-ancestor", a, b], repo, check=False)
    if res.returncode in (0, 1):
        return res.returncode == 0
    raise GitError.from_failure(["merge-base", "--is-ancestor", a, b], res.returncode, res.stderr, repo)


def create_worktree(repo: Path | str, path: Path, branch: str, start: str) -> None:
    """Add a worktree at ``path`` on a new ``branch`` pointing at ``start``.

    The worker's change is never read back from here through git's view of this worktree: see
    :mod:`bosun.isolation.change`.
    """
    # Checked as a full ref name: --branch would expand "@{-1}" and friends. A run's own branch
    # (bosun/ and a run id: lower-case letters, digits and dashes) is valid by construction.
    valid = (branch.startswith("bosun/") and RUN_ID_RE.match(branch[len("bosun/"):]) is not None) or git(
        ["check-ref-format", f"refs/heads/{branch}"], repo, check=False).returncode == 0
    if not valid or branch.startswith("-"):
        raise BadInput(f"'{branch}' is not a valid branch name", "pick a name git accepts as a branch")
    if branch_exists(repo, branch):
        raise BadInput(f"branch '{branch}' already exists", "pick another run name or delete the old branch")
    if path.exists() or path.is_symlink():
        raise BadInput(f"worktree path already exists: {path}", "remove it or pick another run directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    # --no-track: never write upstream config into the user's repository.
    args = ["worktree", "add", "--quiet", "--no-track", "-b", branch, os.path.abspath(path), start]
    for attempt in range(ADD_ATTEMPTS):
        try:
            git(args, repo)
            return
        except GitError as exc:
            if attempt + 1 == ADD_ATTEMPTS or not _lost_add_race(exc, path):
                raise
        # git created the branch, then died reading a worktree another process was adding: add the
        # worktree on that branch now (it is this run's own, just made, and checked out nowhere).
        if branch_exists(repo, branch):
            args = ["worktree", "add", "--quiet", os.path.abspath(path), branch]
        time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))


# `git worktree add -b` checks that the new branch is not checked out in another worktree by reading
# every worktree's admin files; one that another `worktree add` is writing at that moment has an
# empty `commondir`, and git dies ("failed to read .git/worktrees/X/commondir") without having made
# the worktree. Plans add many worktrees at once, so this race is lost routinely; it is retried.
ADD_ATTEMPTS = 6


def _lost_add_race(exc: GitError, path: Path) -> bool:
    return "failed to read" in exc.stderr and "worktrees/" in exc.stderr and not path.exists()


def _remove_index(index: Path) -> None:
    for p in (index, index.with_name(index.name + ".lock")):
        p.unlink(missing_ok=True)


def _parse_raw(out: bytes) -> list[tuple[str, str, str, str | None, str]]:
    """``(status, old_mode, new_mode, old_path, path)`` from ``--raw -z``.

    Records are ``:old new oldsha newsha STATUS\\0path\\0``; renames and copies carry two paths.
    """
    tokens = out.split(b"\0")
    records = []
    i = 0
    while i < len(tokens):
        meta = tokens[i]
        i += 1
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, _old_sha, _new_sha, score = meta[1:].decode("ascii").split(" ")
        status = score[0]
        if status in "RC":
            old_path, path = os.fsdecode(tokens[i]), os.fsdecode(tokens[i + 1])
            i += 2
        else:
            old_path, path = None, os.fsdecode(tokens[i])
            i += 1
        records.append((status, old_mode, new_mode, old_path, path))
    return records


def _parse_numstat(out: bytes) -> dict[str, tuple[int, int, bool]]:
    """``path -> (added, deleted, binary)`` from ``--numstat -z`` ("-\\t-" marks a binary file).

    Records are ``added\\tdeleted\\tpath\\0``, or ``added\\tdeleted\\t\\0old\\0new\\0`` for a rename.
    """
    tokens = out.split(b"\0")
    counts: dict[str, tuple[int, int, bool]] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok:
            continue
        added, deleted, path_bytes = tok.split(b"\t", 2)
        if not path_bytes:
            path_bytes = tokens[i + 1]
            i += 2
        binary = added == b"-"
        counts[os.fsdecode(path_bytes)] = (0 if binary else int(added), 0 if binary else int(deleted), binary)
    return counts


# Messages ``git apply`` prints for a path it could not apply (LC_ALL=C keeps them in English).
_APPLY_FAILED = re.compile(
    r"^error: (?:patch failed: (?P<a>.+):\d+|(?P<b>.+): (?:patch does not apply|does not exist in index"
    r"|already exists in index|does not match index|wrong type|file exists))$"
)


def apply_patch_to_commit(
    repo: Path | str,
    base: str,
    patch: bytes,
    message: str,
    scratch_dir: Path,
    author: tuple[str, str] | None = None,
) -> str:
    """A new commit: ``base`` with ``patch`` applied. No work tree, index or ref is touched."""
    if not patch.strip():
        raise BadInput("nothing to commit", "the change is empty: there is nothing to land")
    scratch_dir.mkdir(parents=True, exist_ok=True)
    index = scratch_dir / "apply.index"
    _remove_index(index)
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git([*NO_SPLIT_INDEX, "read-tree", base], repo, env=env)
        args = [
            *NO_SPLIT_INDEX,
            "-c",
            "apply.ignoreWhitespace=no",
            "apply",
            "--cached",
            "--binary",
            "--whitespace=nowarn",
        ]
        res = git(args, repo, env=env, input=patch, text=False, check=False)
        if res.returncode != 0:
            _raise_apply_failure(repo, base, args, res.returncode, _text(res.stderr))
        tree = git(["write-tree"], repo, env=env).stdout.strip()
    finally:
        _remove_index(index)
    if tree == tree_of(repo, base):
        raise BadInput("nothing to commit", "the change makes no difference to the branch")
    ident = identity_env(repo, author)
    return git(["commit-tree", tree, "-p", base, "-m", message], repo, env=ident).stdout.strip()


def _text(data: str | bytes) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def _raise_apply_failure(repo: Path | str, base: str, args: list[str], code: int, stderr: str) -> None:
    paths: list[str] = []
    for line in stderr.splitlines():
        m = _APPLY_FAILED.match(line.strip())
        if m:
            path = m.group("a") or m.group("b")
            if path not in paths:
                paths.append(path)
    if not paths:
        # Not a conflict: the patch itself is unreadable.
        raise GitError.from_failure(args, code, stderr, repo)
    raise Conflict(
        f"the change does not apply on {base[:12]}: {', '.join(paths)}",
        "these files changed on the branch since the worker started; rerun the task on the new base "
        "or apply the patch by hand",
    )


def identity_env(repo: Path | str, author: tuple[str, str] | None) -> dict[str, str]:
    """Author/committer env for a commit that lands on the user's branch.

    The user's own identity is used when it is configured; bosun's fixed one fills in otherwise, so
    landing never fails with "Please tell me who you are".
    """
    env: dict[str, str] = {}
    if author is not None:
        env["GIT_AUTHOR_NAME"], env["GIT_AUTHOR_EMAIL"] = author
    elif not _ident_configured(repo, "GIT_AUTHOR_IDENT"):
        env.update(GIT_AUTHOR_NAME=BOSUN_NAME, GIT_AUTHOR_EMAIL=BOSUN_EMAIL)
    if not _ident_configured(repo, "GIT_COMMITTER_IDENT"):
        env.update(GIT_COMMITTER_NAME=BOSUN_NAME, GIT_COMMITTER_EMAIL=BOSUN_EMAIL)
    return env


def _ident_configured(repo: Path | str, var: str) -> bool:
    # useConfigOnly: an identity guessed from the hostname does not count as configured.
    res = git(["-c", "user.useConfigOnly=true", "var", var], repo, check=False)
    return res.returncode == 0


def _registered_worktrees(repo: Path | str) -> set[str]:
    out: bytes = git(["worktree", "list", "--porcelain", "-z"], repo, text=False).stdout  # type: ignore[assignment]
    return {
        os.path.realpath(os.fsdecode(tok[len(b"worktree ") :]))
        for tok in out.split(b"\0")
        if tok.startswith(b"worktree ")
    }


def remove_worktree(repo: Path | str, path: Path, branch: str | None, *, delete_branch: bool) -> None:
    """Remove the worktree and its metadata, and its branch when asked. Safe to call again."""
    target = os.path.realpath(path)
    # The usual case, one git process: git removes a registered worktree or says it did not. Only
    # then is there more to find out (already gone, never registered, locked, half-created).
    removed = git(["worktree", "remove", "--force", os.path.abspath(path)], repo, check=False)
    if removed.returncode != 0:
        git(["worktree", "prune"], repo)  # forgets worktrees whose directory is already gone
        if target in _registered_worktrees(repo):
            raise GitError.from_failure(["worktree", "remove", "--force", str(path)], 1, removed.stderr, repo)
    if delete_branch and branch and branch_exists(repo, branch):
        git(["branch", "-D", branch], repo)


def fast_forward_user_branch(
    repo: Path | str, branch: str, old: str, new: str, *, message: str = "bosun: fast-forward"
) -> None:
    """Move the user's checked-out ``branch`` from ``old`` to its descendant ``new``, like ``merge --ff-only``.

    Files the update does not touch keep their staged and unstaged changes. A local change (or an
    untracked file) in the way makes it raise ``Conflict`` before anything is written.
    """
    head_ref = git(["symbolic-ref", "--quiet", "HEAD"], repo, check=False).stdout.strip()
    if head_ref != f"refs/heads/{branch}":
        raise Conflict(
            f"branch '{branch}' is no longer checked out in {repo}",
            f"check out '{branch}' again and retry the merge",
        )
    old, new = _commit_sha(repo, old), _commit_sha(repo, new)
    head = git(["rev-parse", "--verify", "HEAD"], repo).stdout.strip()
    if head != old:
        raise Conflict(f"branch '{branch}' moved while bosun was working", "retry the merge on the new tip")
    if not is_ancestor(repo, old, new):
        raise Conflict(f"{new[:12]} is not a fast-forward of '{branch}'", "retry the merge on the new tip")
    if old == new:
        return
    _check_two_way_merge(repo, old, new)
    # Same as merge --ff-only: stat-only differences (a touched file) must not read as local changes.
    git(["update-index", "-q", "--refresh"], repo, check=False)
    res = git(["read-tree", "-m", "-u", old, new], repo, check=False)
    if res.returncode != 0:
        raise _local_changes_conflict(res.stderr)
    moved = git(["update-ref", "-m", message, f"refs/heads/{branch}", new, old], repo, check=False)
    if moved.returncode != 0:
        # The branch moved between our check and the update: put the files back where they were.
        git(["read-tree", "-m", "-u", new, old], repo, check=False)
        raise Conflict(f"branch '{branch}' moved while bosun was merging", "retry the merge on the new tip")


def _commit_sha(repo: Path | str, rev: str) -> str:
    # Full shas, so comparing with HEAD and update-ref's old-value check mean what they say.
    return git(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"], repo).stdout.strip()


def _check_two_way_merge(repo: Path | str, old: str, new: str) -> None:
    """Dry-run the update on a refreshed copy of the user's index, so a refusal changes nothing at all."""
    with tempfile.TemporaryDirectory(prefix="bosun-ff-") as tmp:
        copy = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(copy)}
        real = git_path(repo, "index")
        if real.is_file():
            shutil.copy2(real, copy)
        git(["update-index", "-q", "--refresh"], repo, env=env, check=False)
        res = git(["read-tree", "-m", "-u", "-n", old, new], repo, env=env, check=False)
        if res.returncode != 0:
            raise _local_changes_conflict(res.stderr)


# How ``read-tree -m -u`` names a path it refuses to overwrite (LC_ALL=C keeps this stable).
_READ_TREE_REFUSED = re.compile(
    r"^error: (?:Entry|Untracked working tree file) '(.+)' (?:not uptodate|would be)"
)


def _local_changes_conflict(stderr: str) -> Conflict:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    paths = [m.group(1) for m in map(_READ_TREE_REFUSED.match, lines) if m]
    if paths:
        return Conflict(
            f"your uncommitted changes would be overwritten by the merge: {', '.join(paths)}",
            "commit or stash those files (or move the untracked ones away), then retry the merge",
        )
    # Not a local change in the way: a merge in progress, a held index.lock, a damaged index.
    return Conflict(
        f"could not update your working tree: {lines[-1] if lines else 'git read-tree failed'}",
        "finish any merge in progress and make sure no other git command is running, then retry the merge",
    )
