"""Carrying the user's uncommitted work into a worker's start commit, and proving we left it alone.

The user's index, stash, refs and files are sacred: a snapshot is built in a throwaway index (a copy
of theirs, so git's stat cache spares us rehashing unchanged files) and turned into a dangling commit
that no ref points at. ``user_state`` fingerprints everything sacred so tests, and the engine before
it integrates, can prove nothing moved.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from bosun.isolation.git import git, git_path, tree_of

# A fixed identity so snapshots work in repositories with no user.name/user.email configured.
BOSUN_NAME = "bosun"
BOSUN_EMAIL = "bosun@localhost"
BOSUN_IDENTITY = {
    "GIT_AUTHOR_NAME": BOSUN_NAME,
    "GIT_AUTHOR_EMAIL": BOSUN_EMAIL,
    "GIT_COMMITTER_NAME": BOSUN_NAME,
    "GIT_COMMITTER_EMAIL": BOSUN_EMAIL,
}

SNAPSHOT_MESSAGE = "bosun: snapshot of uncommitted work"

# Throwaway indexes are always written whole: a split index would leave sharedindex.* files behind
# in the user's git dir.
NO_SPLIT_INDEX = ["-c", "core.splitIndex=false"]


def _status_records(
    repo: Path | str, untracked: str, only: list[str] | None = None
) -> list[tuple[str, str]]:
    """``(XY, path)`` for every changed path, from ``status --porcelain -z`` (paths decoded losslessly).

    ``--no-renames`` reports a rename as a deletion plus an addition, so both paths appear without
    depending on the user's status.renames setting; R/C records are still parsed in case.
    ``only`` limits the scan to those paths (taken literally, not as globs).
    """
    spec = ["--", *(f":(literal){p}" for p in only)] if only else []
    res = git(
        ["status", "--porcelain", "-z", "--no-renames", f"--untracked-files={untracked}", *spec],
        repo,
        text=False,
    )
    out: bytes = res.stdout  # type: ignore[assignment]
    tokens = out.split(b"\0")
    records: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if len(tok) < 4:
            continue
        xy = tok[:2].decode("ascii", "replace")
        records.append((xy, os.fsdecode(tok[3:])))
        if "R" in xy or "C" in xy:
            # The next token is the rename's source path.
            if i < len(tokens) and tokens[i]:
                records.append((xy, os.fsdecode(tokens[i])))
            i += 1
    return records


def is_dirty(repo: Path | str) -> bool:
    """True when anything is staged, modified, deleted or untracked (and not ignored)."""
    # "normal" stops at the first untracked directory instead of listing every file in it.
    return bool(_status_records(repo, "normal"))


def uncommitted_paths(repo: Path | str) -> set[str]:
    """Paths with staged, unstaged or untracked changes; a rename contributes both of its paths."""
    return {path for _, path in _status_records(repo, "all")}


def snapshot_commit(
    repo: Path | str, parent: str, scratch_dir: Path, known_dirty: bool | None = None
) -> str | None:
    """A commit of the user's working tree on top of ``parent``, or None when there is nothing to carry.

    Nothing the user can see changes: the index used is a copy, and no ref points at the commit
    (the caller points the worker's branch at it). ``known_dirty`` skips the status scan when the
    caller has just made one.
    """
    if known_dirty is False or (known_dirty is None and not is_dirty(repo)):
        return None
    scratch_dir.mkdir(parents=True, exist_ok=True)
    index = scratch_dir / "snapshot.index"
    _remove_index(index)
    env = {"GIT_INDEX_FILE": str(index)}
    user_index = git_path(repo, "index")
    if user_index.is_file():
        # copy2 keeps the mtime too: git compares entry times with the index file's own mtime to
        # spot racily-clean files, and a fresh mtime would hide edits made just after the last write.
        shutil.copy2(user_index, index)
    else:
        git([*NO_SPLIT_INDEX, "read-tree", parent], repo, env=env)
    try:
        git([*NO_SPLIT_INDEX, "add", "-A"], repo, env=env)
        tree = git(["write-tree"], repo, env=env).stdout.strip()
        if tree == tree_of(repo, parent):
            return None
        res = git(
            ["commit-tree", tree, "-p", parent, "-m", SNAPSHOT_MESSAGE], repo, env={**env, **BOSUN_IDENTITY}
        )
        return res.stdout.strip()
    finally:
        _remove_index(index)


def _remove_index(index: Path) -> None:
    for p in (index, index.with_name(index.name + ".lock")):
        p.unlink(missing_ok=True)


def user_state(repo: Path | str) -> dict[str, Any]:
    """A fingerprint of everything bosun must never change in the user's repository.

    Read-only: git runs with GIT_OPTIONAL_LOCKS=0, so even ``status`` does not refresh the index.
    """
    index = git_path(repo, "index")
    branch = git(["symbolic-ref", "--quiet", "--short", "HEAD"], repo, check=False)
    head = git(["rev-parse", "--verify", "--quiet", "HEAD"], repo, check=False)
    refs = git(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"], repo)
    stash = git(["stash", "list"], repo, check=False)
    paths = uncommitted_state(repo)
    return {
        "branch": branch.stdout.strip() if branch.returncode == 0 else None,
        "head": head.stdout.strip() if head.returncode == 0 else None,
        "index_sha256": _file_digest(index) if index.is_file() else None,
        "stash": stash.stdout,
        "branches": dict(line.split(" ", 1) for line in refs.stdout.splitlines() if line),
        "paths": paths,
    }


# Past this many paths a pathspec costs more than it saves (and argv has limits).
MAX_PATHSPEC = 500


def uncommitted_state(repo: Path | str, only: list[str] | None = None) -> dict[str, dict[str, str]]:
    """``path -> {status, sha256}`` for every uncommitted or untracked path (or only those of ``only``)."""
    if only is not None and not only:
        return {}
    limit = only if only is not None and len(only) <= MAX_PATHSPEC else None
    paths: dict[str, dict[str, str]] = {}
    for xy, path in _status_records(repo, "all", limit):
        if only is not None and limit is None and path not in only:
            continue
        paths[path] = {"status": xy, "sha256": _content_digest(Path(repo) / path)}
    return paths


def _content_digest(path: Path) -> str:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return "deleted"
    if stat.S_ISLNK(st.st_mode):
        return "symlink:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    if stat.S_ISDIR(st.st_mode):
        # An untracked nested repository is reported as a directory.
        return "directory"
    return _file_digest(path)


def _file_digest(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
