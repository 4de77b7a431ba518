"""bosun.isolation.git against real repositories in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bosun import proc
from bosun.core.errors import BadInput
from bosun.isolation.git import (
    GitError,
    current_branch,
    git,
    head_commit,
    repo_root,
    resolve_commit,
)


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not depend on the machine's git config or identity."""
    cfg = tmp_path_factory.mktemp("gitconfig") / "config"
    cfg.write_text("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(cfg.parent.parent))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.delenv(var, raising=False)


def run(cwd: Path, *args: str) -> str:
    res = proc.run_quick(["git", *args], cwd=cwd)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    run(path, "init", "-q")
    (path / "a.txt").write_text("a\n")
    run(path, "add", "a.txt")
    run(path, "commit", "-qm", "first")
    return path


def test_git_runs_and_raises_with_command_and_last_stderr_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    assert git(["rev-parse", "--abbrev-ref", "HEAD"], repo).stdout.strip() == "main"
    with pytest.raises(GitError) as exc:
        git(["rev-parse", "--verify", "no-such-ref"], repo)
    assert "git rev-parse --verify no-such-ref" in exc.value.message
    assert "fatal: Needed a single revision" in exc.value.message
    assert exc.value.hint
    assert git(["rev-parse", "--verify", "no-such-ref"], repo, check=False).returncode == 128


def test_git_env_is_pinned_and_overridable(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    out = git(["var", "GIT_EDITOR"], repo, env={"GIT_EDITOR": "my-editor"}).stdout.strip()
    assert out == "my-editor"
    res = git(["rev-parse", "--verify", "nope"], repo, check=False)
    assert "fatal: Needed a single revision" in res.stderr  # LC_ALL=C keeps messages parseable
    raw = git(["cat-file", "-p", "HEAD:a.txt"], repo, text=False).stdout
    assert raw == b"a\n"


def test_git_ignores_leaked_repository_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "r")
    other = make_repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "bogus.index"))
    assert Path(git(["rev-parse", "--show-toplevel"], repo).stdout.strip()) == repo


def test_git_never_runs_user_hooks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    marker = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    hook.chmod(0o755)
    git(["commit", "--allow-empty", "-qm", "no hooks"], repo)
    assert not marker.exists()


def test_status_does_not_rewrite_the_index(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    index = repo / ".git" / "index"
    # Make the stat cache stale so a normal status would refresh and rewrite the index.
    os.utime(repo / "a.txt", (1_000_000_000, 1_000_000_000))
    before = index.read_bytes(), index.stat().st_mtime_ns
    git(["status", "--porcelain"], repo)
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


def test_repo_root_finds_top_level_from_a_subdirectory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    sub = repo / "x" / "y"
    sub.mkdir(parents=True)
    assert repo_root(sub) == repo
    assert repo_root(str(repo)) == repo


@pytest.mark.parametrize("kind", ["plain dir", "missing", "bare", "inside .git"])
def test_repo_root_refuses_non_work_trees(tmp_path: Path, kind: str) -> None:
    if kind == "plain dir":
        target = tmp_path / "plain"
        target.mkdir()
    elif kind == "missing":
        target = tmp_path / "missing"
    elif kind == "bare":
        target = tmp_path / "bare.git"
        run(tmp_path, "init", "-q", "--bare", str(target))
    else:
        target = make_repo(tmp_path / "r") / ".git"
    with pytest.raises(BadInput) as exc:
        repo_root(target)
    assert exc.value.message == f"not a git repository: {target}"
    assert exc.value.hint == "run bosun inside a git repository, or pass --repo"


def test_current_branch_and_detached_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    assert current_branch(repo) == "main"
    run(repo, "checkout", "-q", "-b", "feature/x")
    assert current_branch(repo) == "feature/x"
    run(repo, "checkout", "-q", "--detach")
    with pytest.raises(BadInput) as exc:
        current_branch(repo)
    assert "check out a branch first" in exc.value.hint


def test_resolve_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    head = run(repo, "rev-parse", "HEAD")
    run(repo, "tag", "-a", "-m", "annotated", "v1")
    assert head_commit(repo) == head
    assert resolve_commit(repo, "main") == head
    assert resolve_commit(repo, "v1") == head  # peeled to the commit, not the tag object
    assert resolve_commit(repo, head[:8]) == head
    for bad in ("nope", "-x", "HEAD:a.txt", ""):
        with pytest.raises(BadInput) as exc:
            resolve_commit(repo, bad)
        assert exc.value.message == f"base ref '{bad}' does not exist"


def test_resolve_commit_in_an_empty_repository(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    run(repo, "init", "-q")
    with pytest.raises(BadInput) as exc:
        head_commit(repo)
    assert "make a first commit" in exc.value.hint
    assert current_branch(repo) == "main"  # an unborn branch still has a name


def test_resolving_a_commit_that_exists_is_one_git_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every delegation resolves its base and HEAD: whether the repository has commits at all is asked
    # only to explain a failure. run_quick is wrapped to count processes (the reason).
    repo = make_repo(tmp_path / "r")
    head = run(repo, "rev-parse", "HEAD")
    calls: list[list[str]] = []
    run_quick = proc.run_quick
    monkeypatch.setattr(proc, "run_quick", lambda argv, *a, **k: calls.append(list(argv)) or run_quick(argv, *a, **k))
    assert resolve_commit(repo, "main") == head
    assert len(calls) == 1, calls
