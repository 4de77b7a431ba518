"""bosun.isolation.worktree: the worker's worktree, its change as a patch, and landing it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bosun import proc
from bosun.core.changes import FileChange
from bosun.core.errors import BadInput, Conflict
from bosun.isolation.change import View, create_view, read_change
from bosun.isolation.snapshot import user_state
from bosun.isolation.worktree import (
    apply_patch_to_commit,
    branch_exists,
    create_worktree,
    fast_forward_user_branch,
    is_ancestor,
    remove_worktree,
)

IDENTITY = "[user]\n\tname = Test\n\temail = test@example.com\n"
LONG_TEXT = "".join(f"line {n} of a file long enough for rename detection\n" for n in range(40))


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


_VIEWS: dict[Path, View] = {}


def view(wt: Path, start: str, scratch: Path) -> View:
    """bosun's view of ``wt``, made the first time a test scans (before any index tampering)."""
    if scratch not in _VIEWS:
        repo = Path(run(wt, "rev-parse", "--path-format=absolute", "--git-common-dir")).parent
        _VIEWS[scratch] = create_view(scratch, wt, repo, start)
    return _VIEWS[scratch]


def worktree_diff(wt: Path, start: str, scratch: Path) -> bytes:
    return read_change(view(wt, start, scratch)).diff


def changed_files(wt: Path, start: str, scratch: Path) -> list[FileChange]:
    return read_change(view(wt, start, scratch)).changes


def tree_of_worktree(wt: Path, start: str, scratch: Path) -> str:
    return read_change(view(wt, start, scratch)).tree


def run(cwd: Path, *args: str, ok: bool = True) -> str:
    res = proc.run_quick(["git", *args], cwd=cwd)
    if ok:
        assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    run(repo, "add", "-A")
    run(repo, "commit", "-qm", message)
    return run(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    run(r, "init", "-q")
    (r / ".gitignore").write_text("*.log\n")
    (r / "keep.txt").write_text("keep\n")
    (r / "edit.txt").write_text("a\nb\nc\n")
    (r / "gone.txt").write_text("to delete\n")
    (r / "old name.txt").write_text(LONG_TEXT)
    (r / "script.sh").write_text("#!/bin/sh\necho hi\n")
    (r / "other.txt").write_text("other\n")
    commit_all(r, "base")
    return r


@pytest.fixture
def wt(repo: Path, tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "r1" / "wt"
    create_worktree(repo, path, "bosun/r1", run(repo, "rev-parse", "HEAD"))
    return path


def do_work(wt: Path) -> None:
    """A worker's change touching every kind of path git can record."""
    (wt / "edit.txt").write_text("a\nB\nc\nd\n")
    (wt / "gone.txt").unlink()
    (wt / "old name.txt").rename(wt / "new näme.txt")
    (wt / "script.sh").chmod(0o755)
    (wt / "dir with space").mkdir()
    (wt / "dir with space" / "ünïcode ✓.txt").write_text("hello\n")
    (wt / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (wt / "link").symlink_to("keep.txt")
    (wt / "new\nline.txt").write_text("newline in name\n")
    (wt / "debug.log").write_text("ignored: never part of the change\n")


def test_create_worktree(repo: Path, wt: Path) -> None:
    head = run(repo, "rev-parse", "HEAD")
    assert (wt / "keep.txt").read_text() == "keep\n"
    assert run(wt, "rev-parse", "HEAD") == head
    assert run(wt, "symbolic-ref", "--short", "HEAD") == "bosun/r1"
    assert branch_exists(repo, "bosun/r1")
    assert run(repo, "config", "--get-regexp", "^branch\\.", ok=False) == ""  # no upstream written
    assert run(repo, "symbolic-ref", "--short", "HEAD") == "main"


def test_worktrees_created_at_once_all_succeed(repo: Path, tmp_path: Path) -> None:
    # Concurrent `git worktree add -b` calls make git die reading each other's half-written admin
    # files (a plan adds a worktree per task at once); each one must still end with its worktree.
    from concurrent.futures import ThreadPoolExecutor

    head = run(repo, "rev-parse", "HEAD")
    names = [f"bosun/c{i}" for i in range(16)]
    for round_ in range(2):
        with ThreadPoolExecutor(len(names)) as pool:
            futures = [pool.submit(create_worktree, repo, tmp_path / f"wt{round_}-{i}", f"{name}-{round_}", head)
                       for i, name in enumerate(names)]
            for f in futures:
                f.result()
        for i, name in enumerate(names):
            wt = tmp_path / f"wt{round_}-{i}"
            assert run(wt, "symbolic-ref", "--short", "HEAD") == f"{name}-{round_}"
            assert (wt / "keep.txt").read_text() == "keep\n"
    assert run(repo, "config", "--get-regexp", "^branch\\.", ok=False) == ""  # no upstream written


def test_a_worktree_being_created_while_the_git_dir_is_saved_is_not_watched(repo: Path, tmp_path: Path) -> None:
    # Another run's `git worktree add`, caught between creating its admin files and writing them:
    # the rest of its creation is not tampering, and must not be "restored" to empty files.
    from bosun.isolation import gitwatch

    admin = repo / ".git" / "worktrees" / "other"
    admin.mkdir(parents=True)
    (admin / "gitdir").write_text(f"{tmp_path / 'other' / '.git'}\n")
    (admin / "commondir").write_text("")
    common, before = gitwatch.take(repo)
    (admin / "commondir").write_text("../..\n")
    assert gitwatch.changes(common, before) == []
    # Complete, it is watched: a planted change is found and put back.
    common, before = gitwatch.take(repo)
    (admin / "commondir").write_text("/elsewhere\n")
    assert gitwatch.changes(common, before) == ["worktrees/other/commondir"]
    assert gitwatch.restore(common, before, ["worktrees/other/commondir"]) == []
    assert (admin / "commondir").read_text() == "../..\n"


def test_create_worktree_refuses_existing_branch_or_path(repo: Path, wt: Path, tmp_path: Path) -> None:
    head = run(repo, "rev-parse", "HEAD")
    with pytest.raises(BadInput, match="branch 'bosun/r1' already exists"):
        create_worktree(repo, tmp_path / "elsewhere", "bosun/r1", head)
    with pytest.raises(BadInput, match="already exists"):
        create_worktree(repo, wt, "bosun/r2", head)
    with pytest.raises(BadInput, match="not a valid branch name"):
        create_worktree(repo, tmp_path / "x", "bad..name", head)
    assert not branch_exists(repo, "bosun/r2")


def test_changed_files_reports_every_kind_of_change(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    do_work(wt)
    changes = {c.path: c for c in changed_files(wt, start, tmp_path / "scratch")}
    assert set(changes) == {
        "edit.txt",
        "gone.txt",
        "new näme.txt",
        "script.sh",
        "dir with space/ünïcode ✓.txt",
        "blob.bin",
        "link",
        "new\nline.txt",
    }
    assert changes["edit.txt"] == FileChange("edit.txt", "M", 2, 1, False, None, "100644", "100644")
    assert changes["gone.txt"] == FileChange("gone.txt", "D", 0, 1, False, None, "100644", "000000")
    assert changes["new näme.txt"] == FileChange(
        "new näme.txt", "R", 0, 0, False, "old name.txt", "100644", "100644"
    )
    assert changes["script.sh"] == FileChange("script.sh", "M", 0, 0, False, None, "100644", "100755")
    assert changes["dir with space/ünïcode ✓.txt"].status == "A"
    assert changes["dir with space/ünïcode ✓.txt"].added == 1
    assert changes["blob.bin"] == FileChange("blob.bin", "A", 0, 0, True, None, "000000", "100644")
    assert changes["link"].is_symlink and changes["link"].new_mode == "120000"
    assert changes["new\nline.txt"].added == 1


def test_diff_round_trips_through_apply(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    do_work(wt)
    before = user_state(repo)
    patch = worktree_diff(wt, start, tmp_path / "scratch")
    assert patch == worktree_diff(wt, start, tmp_path / "scratch")  # deterministic
    assert b"GIT binary patch" in patch and b"rename from old name.txt" in patch
    assert b"debug.log" not in patch

    commit = apply_patch_to_commit(repo, start, patch, "worker change", tmp_path / "scratch")

    assert run(repo, "rev-parse", f"{commit}^{{tree}}") == tree_of_worktree(wt, start, tmp_path / "scratch")
    assert run(repo, "rev-parse", f"{commit}^") == start
    assert run(repo, "log", "-1", "--format=%s|%an", commit) == "worker change|Test"
    assert user_state(repo) == before  # no ref, index or file of the user's moved


def test_diff_ignores_what_the_worker_did_to_its_index(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    do_work(wt)
    expected = worktree_diff(wt, start, tmp_path / "s")
    run(wt, "add", "-A")
    run(wt, "rm", "-q", "--cached", "keep.txt")
    run(wt, "add", "-f", "debug.log")
    assert worktree_diff(wt, start, tmp_path / "s") == expected
    index = Path(run(wt, "rev-parse", "--path-format=absolute", "--git-path", "index"))
    index.write_bytes(b"garbage, not an index")
    assert worktree_diff(wt, start, tmp_path / "s") == expected
    index.unlink()
    assert worktree_diff(wt, start, tmp_path / "s") == expected


def test_diff_output_does_not_depend_on_user_diff_config(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    do_work(wt)
    expected = worktree_diff(wt, start, tmp_path / "s")
    for key, value in [
        ("diff.noprefix", "true"),
        ("diff.mnemonicPrefix", "true"),
        ("diff.algorithm", "patience"),
        ("diff.context", "7"),
        ("diff.renames", "false"),
        ("core.quotePath", "false"),
        ("color.ui", "always"),
    ]:
        run(repo, "config", key, value)
    assert worktree_diff(wt, start, tmp_path / "s") == expected


def test_unchanged_worktree_has_empty_diff(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    assert worktree_diff(wt, start, tmp_path / "s") == b""
    assert changed_files(wt, start, tmp_path / "s") == []
    assert tree_of_worktree(wt, start, tmp_path / "s") == run(repo, "rev-parse", "HEAD^{tree}")
    with pytest.raises(BadInput, match="nothing to commit"):
        apply_patch_to_commit(repo, start, b"", "empty", tmp_path / "s")


def test_apply_conflict_names_the_paths(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    (wt / "edit.txt").write_text("a\nworker\nc\n")
    (wt / "other.txt").write_text("other, edited by the worker\n")
    (wt / "added.txt").write_text("worker adds\n")
    patch = worktree_diff(wt, start, tmp_path / "s")
    (repo / "edit.txt").write_text("a\nuser\nc\n")
    (repo / "added.txt").write_text("user adds\n")
    moved = commit_all(repo, "user moved on")
    before = user_state(repo)
    with pytest.raises(Conflict) as exc:
        apply_patch_to_commit(repo, moved, patch, "worker", tmp_path / "s")
    assert "edit.txt" in exc.value.message and "added.txt" in exc.value.message
    assert "other.txt" not in exc.value.message
    assert exc.value.hint
    assert user_state(repo) == before


def test_apply_on_a_moved_base_that_does_not_conflict(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    (wt / "edit.txt").write_text("a\nworker\nc\n")
    patch = worktree_diff(wt, start, tmp_path / "s")
    (repo / "other.txt").write_text("user edit\n")
    moved = commit_all(repo, "user moved on")
    commit = apply_patch_to_commit(repo, moved, patch, "worker", tmp_path / "s", author=("Ann", "ann@x.org"))
    assert run(repo, "show", f"{commit}:edit.txt") == "a\nworker\nc"
    assert run(repo, "show", f"{commit}:other.txt") == "user edit"
    assert run(repo, "log", "-1", "--format=%an <%ae>|%cn", commit) == "Ann <ann@x.org>|Test"
    assert is_ancestor(repo, moved, commit) and not is_ancestor(repo, commit, moved)


def test_apply_without_configured_identity(
    repo: Path, wt: Path, tmp_path: Path, isolated_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = run(repo, "rev-parse", "HEAD")
    (wt / "edit.txt").write_text("x\n")
    patch = worktree_diff(wt, start, tmp_path / "s")
    isolated_git.write_text("")
    monkeypatch.setenv("EMAIL", "")
    commit = apply_patch_to_commit(repo, start, patch, "m", tmp_path / "s")
    assert run(repo, "log", "-1", "--format=%an|%cn", commit) == "bosun|bosun"


def test_remove_worktree_is_idempotent(repo: Path, wt: Path) -> None:
    (wt / "untracked.txt").write_text("dirty worktrees are removed too\n")
    (wt / "edit.txt").write_text("modified\n")
    remove_worktree(repo, wt, "bosun/r1", delete_branch=True)
    assert not wt.exists()
    assert not branch_exists(repo, "bosun/r1")
    assert len(run(repo, "worktree", "list").splitlines()) == 1
    remove_worktree(repo, wt, "bosun/r1", delete_branch=True)


def test_remove_worktree_whose_directory_is_gone(repo: Path, wt: Path) -> None:
    shutil.rmtree(wt)
    remove_worktree(repo, wt, "bosun/r1", delete_branch=False)
    assert len(run(repo, "worktree", "list").splitlines()) == 1
    assert branch_exists(repo, "bosun/r1")
    remove_worktree(repo, wt, "bosun/r1", delete_branch=True)
    assert not branch_exists(repo, "bosun/r1")


def worker_commit(repo: Path, tmp_path: Path, files: dict[str, str]) -> tuple[str, str]:
    """``(old, new)``: a descendant of HEAD changing ``files``, made without touching the work tree."""
    old = run(repo, "rev-parse", "HEAD")
    wt = tmp_path / "ff-wt"
    create_worktree(repo, wt, "bosun/ff", old)
    for name, text in files.items():
        (wt / name).write_text(text)
    new = apply_patch_to_commit(repo, old, worktree_diff(wt, old, tmp_path / "s"), "worker", tmp_path / "s")
    remove_worktree(repo, wt, "bosun/ff", delete_branch=True)
    return old, new


def test_fast_forward_keeps_unrelated_local_work(repo: Path, tmp_path: Path) -> None:
    old, new = worker_commit(repo, tmp_path, {"edit.txt": "worker\n", "brand new.txt": "from worker\n"})
    (repo / "keep.txt").write_text("staged by user\n")
    run(repo, "add", "keep.txt")
    (repo / "other.txt").write_text("unstaged by user\n")
    (repo / "script.sh").write_text("staged\n")
    run(repo, "add", "script.sh")
    (repo / "script.sh").write_text("then edited\n")
    (repo / "notes.txt").write_text("untracked\n")

    fast_forward_user_branch(repo, "main", old, new)

    assert run(repo, "rev-parse", "HEAD") == new
    assert run(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert (repo / "edit.txt").read_text() == "worker\n"
    assert (repo / "brand new.txt").read_text() == "from worker\n"
    assert (repo / "keep.txt").read_text() == "staged by user\n"
    assert (repo / "other.txt").read_text() == "unstaged by user\n"
    assert (repo / "script.sh").read_text() == "then edited\n"
    assert (repo / "notes.txt").read_text() == "untracked\n"
    assert run(repo, "diff", "--cached", "--name-only").splitlines() == ["keep.txt", "script.sh"]
    assert run(repo, "diff", "--name-only").splitlines() == ["other.txt", "script.sh"]
    assert run(repo, "show", ":script.sh") == "staged"
    assert run(repo, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        "M  keep.txt",
        " M other.txt",
        "MM script.sh",
        "?? notes.txt",
    ]
    assert "bosun: fast-forward" in run(repo, "reflog", "-1", "main")


@pytest.mark.parametrize("local", ["unstaged", "staged", "untracked in the way", "touched only"])
def test_fast_forward_refuses_to_overwrite_local_changes(repo: Path, tmp_path: Path, local: str) -> None:
    old, new = worker_commit(repo, tmp_path, {"edit.txt": "worker\n", "brand new.txt": "from worker\n"})
    if local == "unstaged":
        (repo / "edit.txt").write_text("user edit\n")
    elif local == "staged":
        (repo / "edit.txt").write_text("user edit\n")
        run(repo, "add", "edit.txt")
    elif local == "untracked in the way":
        (repo / "brand new.txt").write_text("the user's own file\n")
    else:
        # Same content, new mtime: a stale stat cache must not read as a local change.
        (repo / "edit.txt").write_text((repo / "edit.txt").read_text())
        fast_forward_user_branch(repo, "main", old, new)
        assert run(repo, "rev-parse", "HEAD") == new
        return
    (repo / "other.txt").write_text("unrelated\n")
    before = user_state(repo)
    index = (repo / ".git" / "index").read_bytes()
    with pytest.raises(Conflict) as exc:
        fast_forward_user_branch(repo, "main", old, new)
    assert "edit.txt" in exc.value.message or "brand new.txt" in exc.value.message
    assert user_state(repo) == before
    assert (repo / ".git" / "index").read_bytes() == index


def test_fast_forward_refuses_when_the_branch_moved_or_is_not_checked_out(repo: Path, tmp_path: Path) -> None:
    old, new = worker_commit(repo, tmp_path, {"edit.txt": "worker\n"})
    (repo / "other.txt").write_text("user commits meanwhile\n")
    moved = commit_all(repo, "meanwhile")
    with pytest.raises(Conflict, match="moved"):
        fast_forward_user_branch(repo, "main", old, new)
    with pytest.raises(Conflict, match="not a fast-forward"):
        fast_forward_user_branch(repo, "main", moved, new)
    run(repo, "checkout", "-q", "-b", "elsewhere")
    with pytest.raises(Conflict, match="no longer checked out"):
        fast_forward_user_branch(repo, "main", moved, new)
    assert run(repo, "rev-parse", "main") == moved


def test_type_change_and_invalid_branch_names(repo: Path, wt: Path, tmp_path: Path) -> None:
    start = run(repo, "rev-parse", "HEAD")
    (wt / "keep.txt").unlink()
    (wt / "keep.txt").symlink_to("other.txt")
    [change] = changed_files(wt, start, tmp_path / "s")
    assert (change.path, change.status, change.old_mode, change.new_mode) == (
        "keep.txt",
        "T",
        "100644",
        "120000",
    )
    for bad in ("-x", "@{-1}", "a b"):
        with pytest.raises(BadInput, match="not a valid branch name"):
            create_worktree(repo, tmp_path / "never", bad, start)


def test_fast_forward_refuses_during_a_merge_in_progress(repo: Path, tmp_path: Path) -> None:
    run(repo, "checkout", "-q", "-b", "side")
    (repo / "other.txt").write_text("side\n")
    commit_all(repo, "side")
    run(repo, "checkout", "-q", "main")
    (repo / "other.txt").write_text("main\n")
    run(repo, "commit", "-qam", "main edit")
    old, new = worker_commit(repo, tmp_path, {"edit.txt": "worker\n"})
    run(repo, "merge", "side", ok=False)  # conflicts: unmerged entries in the index
    before = user_state(repo)
    with pytest.raises(Conflict, match="could not update your working tree"):
        fast_forward_user_branch(repo, "main", old, new)
    assert user_state(repo) == before


def test_a_gitlink_the_worker_moves_is_refused(repo: Path, tmp_path: Path) -> None:
    """A submodule entry of the start tree whose directory the worker makes a repository at another
    commit: ``add -u`` records the new commit as the gitlink, and the scan refuses it."""
    sub = tmp_path / "sub"
    sub.mkdir()
    run(sub, "init", "-q")
    (sub / "x").write_text("x\n")
    first = commit_all(sub, "one")
    run(repo, "update-index", "--add", "--cacheinfo", f"160000,{first},vendored")
    run(repo, "commit", "-qm", "a submodule entry")
    start = run(repo, "rev-parse", "HEAD")
    wt = tmp_path / "runs" / "r2" / "wt"
    create_worktree(repo, wt, "bosun/r2", start)
    assert read_change(view(wt, start, tmp_path / "scratch-clean")).problems == []
    (wt / "vendored").rmdir()
    shutil.copytree(sub, wt / "vendored")
    (wt / "vendored" / "x").write_text("moved\n")
    commit_all(wt / "vendored", "two")
    problems = read_change(view(wt, start, tmp_path / "scratch-clean")).problems
    assert [p.code for p in problems] == ["NESTED_REPOSITORY"]
    assert "vendored" in problems[0].detail


def test_the_start_trees_ignore_files_decide_what_is_left_out(repo: Path, tmp_path: Path) -> None:
    """Every ``.gitignore`` of the start tree counts, each anchored at its own directory, deeper ones
    winning; one the worker writes counts for nothing."""
    (repo / "sub" / "deep").mkdir(parents=True)
    (repo / "sub" / ".gitignore").write_text("*.tmp\n/only-here.txt\n")
    (repo / "sub" / "deep" / ".gitignore").write_text("!wanted.tmp\n")
    (repo / "sub" / "deep" / "tracked.txt").write_text("t\n")
    start = commit_all(repo, "nested ignore files")
    wt = tmp_path / "runs" / "r3" / "wt"
    create_worktree(repo, wt, "bosun/r3", start)
    for rel in ("a.log", "sub/b.tmp", "c.tmp", "sub/only-here.txt", "sub/deep/only-here.txt",
                "sub/deep/x.tmp", "sub/deep/wanted.tmp", "new/.gitignore", "new/hidden.txt"):
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text("written by the worker\n")
    (wt / "new" / ".gitignore").write_text("hidden.txt\n")
    paths = sorted(c.path for c in changed_files(wt, start, tmp_path / "scratch-ignore"))
    assert paths == ["c.tmp", "new/.gitignore", "new/hidden.txt", "sub/deep/only-here.txt", "sub/deep/wanted.tmp"]
