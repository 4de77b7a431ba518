"""The worker's own repository for a run with holdout files: the start tree's objects and nothing else.

Invariant: **nothing the worker's git can reach leads to a held-out file.** A worktree's git data
lives in the user's repository (its admin dir, and every object of every branch), where the
held-out tests are one ``git show main:tests/test_hidden.py`` away. So for such a run the worker
never sees the user's ``.git`` at all: the sandbox shows, in place of the worktree's ``.git``
pointer, one to a repository made here that holds exactly the objects of the run's start tree (the
tree with the holdout files taken out), one parentless commit of it on the run's branch, and an
index of it. ``git status``, ``diff``, ``add`` and ``grep`` work; there is no history to read.

Made once per run, beside its records; nothing of bosun's ever reads it after (the change is read
from the bytes on disk through bosun's own view, ``isolation/change.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bosun.isolation.git import git

DIR = "worker-git"
POINTER = "worker-git.pointer"
# A fixed identity and date: the commit says what it is, and is the same whenever it is remade.
_IDENTITY = {"GIT_AUTHOR_NAME": "bosun", "GIT_AUTHOR_EMAIL": "bosun@localhost", "GIT_COMMITTER_NAME": "bosun",
             "GIT_COMMITTER_EMAIL": "bosun@localhost", "GIT_AUTHOR_DATE": "1700000000 +0000",
             "GIT_COMMITTER_DATE": "1700000000 +0000"}


def worker_git(repo: Path, run_dir: Path, worktree: Path, start_commit: str, branch: str) -> tuple[Path, Path]:
    """The worker's repository for this run and the ``.git`` pointer file that names it: made on
    first use (a resumed run keeps the one it has)."""
    gitdir, pointer = run_dir / DIR, run_dir / POINTER
    if pointer.is_file() and (gitdir / "HEAD").is_file():
        return gitdir, pointer
    shutil.rmtree(gitdir, ignore_errors=True)  # half made by a crash
    tree = git(["rev-parse", f"{start_commit}^{{tree}}"], repo).stdout.strip()
    git(["init", "--quiet", "--bare", "--template=", str(gitdir)], repo)
    mine = ["--git-dir", str(gitdir)]
    git([*mine, "config", "core.bare", "false"], repo)
    objects = git(["rev-list", "--objects", tree], repo).stdout
    (gitdir / "objects" / "pack").mkdir(parents=True, exist_ok=True)
    # --window=0: no delta search (the pack is read once or twice; speed matters more than its size).
    git(["pack-objects", "--quiet", "--window=0", str(gitdir / "objects" / "pack" / "pack")], repo, input=objects)
    commit = git([*mine, "commit-tree", tree, "-m", "the task's start (its history is not part of this task)"],
                 repo, env=_IDENTITY).stdout.strip()
    git([*mine, "update-ref", f"refs/heads/{branch}", commit], repo)
    git([*mine, "symbolic-ref", "HEAD", f"refs/heads/{branch}"], repo)
    git([*mine, "--work-tree", str(worktree), "read-tree", tree], repo)
    git([*mine, "--work-tree", str(worktree), "update-index", "-q", "--refresh"], repo, check=False)
    pointer.write_text(f"gitdir: {gitdir}\n")
    return gitdir, pointer
