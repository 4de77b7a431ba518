"""bosun.isolation.snapshot: the user's uncommitted work, carried without touching anything of theirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bosun import proc
from bosun.isolation.snapshot import is_dirty, snapshot_commit, uncommitted_paths, user_state

IDENTITY = "[user]\n\tname = Test\n\temail = test@example.com\n"


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests must not depend on the machine's git config or identity."""
    cfg = tmp_path_factory.mktemp("gitconfig") / "config"
    cfg.write_text(IDENTITY + "[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.delenv(var, raising=False)
    return cfg


def run(cwd: Path, *args: str) -> str:
    res = proc.run_quick(["git", *args], cwd=cwd)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def tree_files(repo: Path, commit: str) -> dict[str, bytes]:
    """path -> content of every blob in ``commit``."""
    listing = proc.run_quick(["git", "ls-tree", "-r", "-z", "--name-only", commit], cwd=repo, text=False)
    names = [os.fsdecode(n) for n in listing.stdout.split(b"\0") if n]  # type: ignore[union-attr]
    out = {}
    for name in names:
        blob = proc.run_quick(["git", "cat-file", "blob", f"{commit}:{name}"], cwd=repo, text=False)
        out[name] = blob.stdout
    return out  # type: ignore[return-value]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    run(r, "init", "-q")
    (r / ".gitignore").write_text("build/\n*.log\n")
    (r / "modified.txt").write_text("one\n")
    (r / "deleted.txt").write_text("bye\n")
    (r / "staged_then_edited.txt").write_text("v1\n")
    (r / "same.txt").write_text("unchanged\n")
    run(r, "add", "-A")
    run(r, "commit", "-qm", "base")
    return r


def make_dirty(r: Path) -> None:
    (r / "modified.txt").write_text("one\ntwo\n")
    (r / "deleted.txt").unlink()
    (r / "staged new.txt").write_text("new and staged\n")
    run(r, "add", "staged new.txt")
    (r / "staged_then_edited.txt").write_text("v2 staged\n")
    run(r, "add", "staged_then_edited.txt")
    (r / "staged_then_edited.txt").write_text("v3 in the working tree\n")
    (r / "dir" / "sub").mkdir(parents=True)
    (r / "dir" / "sub" / "untracked ü.txt").write_text("untracked\n")
    (r / "build").mkdir()
    (r / "build" / "out.o").write_bytes(b"\0ignored")
    (r / "debug.log").write_text("ignored\n")
    run(r, "stash", "list")  # nothing stashed; the fingerprint still records it


def test_snapshot_tree_is_the_working_tree(repo: Path, tmp_path: Path) -> None:
    head = run(repo, "rev-parse", "HEAD")
    make_dirty(repo)
    before = user_state(repo)
    index_bytes = (repo / ".git" / "index").read_bytes()

    commit = snapshot_commit(repo, head, tmp_path / "scratch")

    assert commit is not None
    assert tree_files(repo, commit) == {
        ".gitignore": b"build/\n*.log\n",
        "modified.txt": b"one\ntwo\n",
        "same.txt": b"unchanged\n",
        "staged new.txt": b"new and staged\n",
        "staged_then_edited.txt": b"v3 in the working tree\n",
        "dir/sub/untracked ü.txt": b"untracked\n",
    }
    assert run(repo, "rev-parse", f"{commit}^") == head
    assert run(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", commit) == (
        "bosun <bosun@localhost>|bosun <bosun@localhost>"
    )
    # Nothing of the user's moved: index bytes, refs, stash, HEAD, every dirty file.
    assert user_state(repo) == before
    assert (repo / ".git" / "index").read_bytes() == index_bytes
    assert run(repo, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    # Staged stays staged, unstaged stays unstaged.
    assert run(repo, "diff", "--cached", "--name-only").splitlines() == [
        "staged new.txt",
        "staged_then_edited.txt",
    ]
    assert run(repo, "diff", "--name-only").splitlines() == [
        "deleted.txt",
        "modified.txt",
        "staged_then_edited.txt",
    ]
    assert not (tmp_path / "scratch" / "snapshot.index").exists()


def test_clean_repository_has_no_snapshot(repo: Path, tmp_path: Path) -> None:
    head = run(repo, "rev-parse", "HEAD")
    (repo / "ignored.log").write_text("ignored files do not make a repo dirty\n")
    assert not is_dirty(repo)
    assert snapshot_commit(repo, head, tmp_path / "scratch") is None
    assert uncommitted_paths(repo) == set()


def test_changes_that_cancel_out_give_no_snapshot(repo: Path, tmp_path: Path) -> None:
    head = run(repo, "rev-parse", "HEAD")
    (repo / "same.txt").write_text("staged\n")
    run(repo, "add", "same.txt")
    (repo / "same.txt").write_text("unchanged\n")
    assert is_dirty(repo)
    assert snapshot_commit(repo, head, tmp_path / "scratch") is None


def test_untracked_file_alone_is_dirty(repo: Path, tmp_path: Path) -> None:
    (repo / "new.txt").write_text("x\n")
    assert is_dirty(repo)
    commit = snapshot_commit(repo, run(repo, "rev-parse", "HEAD"), tmp_path / "s")
    assert commit is not None
    assert tree_files(repo, commit)["new.txt"] == b"x\n"


def test_snapshot_without_any_configured_identity(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_git: Path
) -> None:
    isolated_git.write_text("")
    monkeypatch.setenv("EMAIL", "")
    (repo / "modified.txt").write_text("changed\n")
    commit = snapshot_commit(repo, run(repo, "rev-parse", "HEAD"), tmp_path / "s")
    assert commit is not None
    assert run(repo, "log", "-1", "--format=%an", commit) == "bosun"


def test_snapshot_without_an_index_file(repo: Path, tmp_path: Path) -> None:
    head = run(repo, "rev-parse", "HEAD")
    (repo / ".git" / "index").unlink()
    (repo / "modified.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    commit = snapshot_commit(repo, head, tmp_path / "s")
    assert commit is not None
    files = tree_files(repo, commit)
    assert files["modified.txt"] == b"changed\n"
    assert files["new.txt"] == b"new\n"
    assert files["same.txt"] == b"unchanged\n"
    assert not (repo / ".git" / "index").exists()


def test_uncommitted_paths_covers_renames_and_odd_names(repo: Path) -> None:
    run(repo, "mv", "same.txt", "renamed.txt")
    (repo / "modified.txt").write_text("x\n")
    odd = "new\nline ü.txt"
    (repo / odd).write_text("odd\n")
    (repo / "d").mkdir()
    (repo / "d" / "deep.txt").write_text("deep\n")
    assert uncommitted_paths(repo) == {"same.txt", "renamed.txt", "modified.txt", odd, "d/deep.txt"}


def test_user_state_sees_every_sacred_change(repo: Path) -> None:
    base = user_state(repo)
    assert base["branch"] == "main"
    assert base["head"] == run(repo, "rev-parse", "HEAD")
    assert base["branches"] == {"refs/heads/main": base["head"]}
    assert base["stash"] == "" and base["paths"] == {}

    (repo / "modified.txt").write_text("edited\n")
    edited = user_state(repo)
    assert edited["paths"]["modified.txt"]["status"] == " M"
    (repo / "modified.txt").write_text("edited again\n")
    assert user_state(repo)["paths"] != edited["paths"]  # content, not just status

    run(repo, "add", "modified.txt")
    staged = user_state(repo)
    assert staged["index_sha256"] != base["index_sha256"]

    run(repo, "stash", "-q")
    stashed = user_state(repo)
    assert stashed["stash"] and stashed["paths"] == {}

    run(repo, "branch", "other")
    assert "refs/heads/other" in user_state(repo)["branches"]
    (repo / "deleted.txt").unlink()
    assert user_state(repo)["paths"]["deleted.txt"] == {"status": " D", "sha256": "deleted"}
    (repo / "link").symlink_to("modified.txt")
    assert user_state(repo)["paths"]["link"]["sha256"].startswith("symlink:")


def test_user_state_leaves_a_stale_index_alone(repo: Path) -> None:
    index = repo / ".git" / "index"
    os.utime(repo / "same.txt", (1_000_000_000, 1_000_000_000))
    before = index.read_bytes(), index.stat().st_mtime_ns
    user_state(repo)
    is_dirty(repo)
    uncommitted_paths(repo)
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
