"""A holdout run's repository for its worker: the start tree's objects and nothing that leads further."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bosun.isolation.worker_git import worker_git
from tests.conftest import git, make_repo

SECRET = "assert add(10, 20) == 30  # held-out-9931"


def test_it_holds_the_start_tree_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "tests" / "test_hidden.py").write_text(SECRET + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hidden test")
    git(repo, "rm", "-q", "tests/test_hidden.py")
    git(repo, "commit", "-qm", "the start: hidden test taken out")
    start = git(repo, "rev-parse", "HEAD").strip()
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(worktree), start)
    gitdir, pointer = worker_git(repo, tmp_path / "run", worktree, start, "bosun/run-1")

    assert pointer.read_text() == f"gitdir: {gitdir}\n"
    mine = ["git", "--git-dir", str(gitdir), "--work-tree", str(worktree)]

    def out(*args: str) -> str:
        return subprocess.run([*mine, *args], capture_output=True, text=True, check=True, cwd=worktree).stdout

    objects = subprocess.run([*mine, "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True,
                             cwd=worktree).stdout
    assert b"calc" in objects and b"held-out-9931" not in objects
    assert len(out("log", "--all", "--format=%H").split()) == 1
    assert out("status", "--porcelain") == ""  # its index is the worktree as it starts
    assert out("rev-parse", "HEAD^{tree}").strip() == git(repo, "rev-parse", f"{start}^{{tree}}").strip()
    assert out("symbolic-ref", "HEAD").strip() == "refs/heads/bosun/run-1"
    # Made once: a resumed run keeps the repository its worker already used.
    assert worker_git(repo, tmp_path / "run", worktree, start, "bosun/run-1") == (gitdir, pointer)
