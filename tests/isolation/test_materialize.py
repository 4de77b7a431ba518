"""bosun.isolation.change.materialize: whatever was done to the worktree, afterwards it holds exactly the tree.

Each case damages a materialized worktree the way a worker or a verify command could (contents changed
behind unchanged stat times, files gone or of another type, directories swapped for symlinks that lead
out, untracked, ignored and ``.git`` entries planted), then materializes, then compares the disk,
walked independently, with the tree's own entries and blobs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from bosun import proc
from bosun.isolation.change import View, create_view, materialize, read_change

IDENTITY = "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path_factory.mktemp("gitconfig") / "config"
    cfg.write_text(IDENTITY)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    res = proc.run_quick(["git", *args], cwd=cwd, input=input, text=False)
    assert res.returncode == 0, res.stderr
    return res.stdout  # type: ignore[return-value]


@pytest.fixture
def view(tmp_path: Path) -> View:
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "README.md").write_text("readme\n")
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(repo / "run.sh", 0o755)
    (repo / "link").symlink_to("README.md")
    for n in range(6):
        (repo / "src" / "pkg" / f"m{n}.py").write_text(f"VALUE = {n}\n")
    (repo / "src" / "top.py").write_text("import pkg\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    start = git(repo, "rev-parse", "HEAD").decode().strip()
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(wt), start)
    v = create_view(tmp_path / "run", wt, repo, start)
    # A change of the worker's, scanned: the tree every case materializes back to.
    (wt / "src" / "pkg" / "m0.py").write_text("VALUE = 'fixed'\n")
    (wt / "src" / "new.py").write_text("NEW = 1\n")
    change = read_change(v)
    assert change.problems == []
    return View(v.git_dir, v.worktree, v.objects, change.tree)  # ``start`` carries the tree to compare with


def disk(root: Path) -> dict[str, tuple[str, object]]:
    """Every entry under ``root`` but its top ``.git``: path -> (kind, content, link target or x bit)."""
    out: dict[str, tuple[str, object]] = {}
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d != ".git"]
            files = [f for f in files if f != ".git"]
        for name in [*dirs, *files]:
            path = Path(dirpath) / name
            key = os.path.normpath(os.path.join(rel, name))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[key] = ("dir", None)
            elif stat.S_ISREG(st.st_mode):
                out[key] = ("file", (path.read_bytes(), bool(st.st_mode & 0o100)))
            else:
                out[key] = ("other", st.st_mode)
        dirs[:] = [d for d in dirs if not (Path(dirpath) / d).is_symlink()]
    return out


def tree(v: View) -> dict[str, tuple[str, object]]:
    """What the tree ``v.start`` holds, in the form of :func:`disk`."""
    out: dict[str, tuple[str, object]] = {}
    for rec in v.git(["ls-tree", "-r", "-z", "--full-tree", v.start]).split(b"\0"):
        if not rec:
            continue
        meta, raw = rec.split(b"\t", 1)
        mode, _kind, sha = meta.decode().split(" ")
        path = os.fsdecode(raw)
        blob = v.git(["cat-file", "blob", sha])
        out[path] = ("link", os.fsdecode(blob)) if mode == "120000" else ("file", (blob, mode == "100755"))
        parent = os.path.dirname(path)
        while parent:
            out[parent] = ("dir", None)
            parent = os.path.dirname(parent)
    return out


def same_stat_times(path: Path, write: Callable[[], None]) -> None:
    st = os.lstat(path)
    write()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def edit_keeping_size_and_times(wt: Path, outside: Path) -> None:
    target = wt / "src" / "pkg" / "m1.py"
    same_stat_times(target, lambda: target.write_text("VALUE = 9\n"))


def delete_files_and_a_directory(wt: Path, outside: Path) -> None:
    (wt / "README.md").unlink()
    for f in (wt / "src" / "pkg").iterdir():
        f.unlink()
    (wt / "src" / "pkg").rmdir()


def change_modes(wt: Path, outside: Path) -> None:
    os.chmod(wt / "run.sh", 0o644)
    os.chmod(wt / "src" / "top.py", 0o755)


def file_becomes_directory(wt: Path, outside: Path) -> None:
    (wt / "src" / "top.py").unlink()
    (wt / "src" / "top.py").mkdir()
    (wt / "src" / "top.py" / "inner.py").write_text("planted\n")


def file_becomes_symlink_out(wt: Path, outside: Path) -> None:
    (outside / "elsewhere.py").write_text("outside\n")
    (wt / "src" / "new.py").unlink()
    (wt / "src" / "new.py").symlink_to(outside / "elsewhere.py")
    (wt / "link").unlink()
    (wt / "link").symlink_to("src/top.py")


def directory_becomes_symlink_out(wt: Path, outside: Path) -> None:
    for n in range(6):
        (outside / f"m{n}.py").write_text("VALUE = 'from outside'\n")
    for f in (wt / "src" / "pkg").iterdir():
        f.unlink()
    (wt / "src" / "pkg").rmdir()
    (wt / "src" / "pkg").symlink_to(outside)


def file_becomes_fifo(wt: Path, outside: Path) -> None:
    (wt / "README.md").unlink()
    os.mkfifo(wt / "README.md")


def plant_untracked_ignored_and_git_entries(wt: Path, outside: Path) -> None:
    (wt / "untracked.py").write_text("import os\n")
    (wt / "src" / "pkg" / "shadow.py").write_text("planted\n")
    (wt / "debug.log").write_text("ignored\n")
    (wt / "build" / "lib").mkdir(parents=True)
    (wt / "build" / "lib" / "out.so").write_bytes(b"\0elf")
    (wt / "src" / ".git").write_text("gitdir: /nowhere\n")
    (wt / "src" / "pkg" / ".git").mkdir()
    (wt / "src" / "pkg" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


DAMAGE = [edit_keeping_size_and_times, delete_files_and_a_directory, change_modes, file_becomes_directory,
          file_becomes_symlink_out, directory_becomes_symlink_out, file_becomes_fifo,
          plant_untracked_ignored_and_git_entries]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__)
def test_materialize_undoes_any_damage(view: View, tmp_path: Path, damage: Callable[[Path, Path], None]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    materialize(view, view.start)
    assert disk(view.worktree) == tree(view)
    damage(view.worktree, outside)
    assert disk(view.worktree) != tree(view)
    before_outside = disk(outside)

    materialize(view, view.start)

    assert disk(view.worktree) == tree(view)
    assert disk(outside) == before_outside  # nothing was written through a symlink


def test_every_damage_at_once_and_a_second_materialize_is_a_no_op(view: View, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for damage in (edit_keeping_size_and_times, change_modes, file_becomes_directory, file_becomes_symlink_out,
                   plant_untracked_ignored_and_git_entries):
        damage(view.worktree, outside)
    materialize(view, view.start)
    assert disk(view.worktree) == tree(view)
    materialize(view, view.start)
    assert disk(view.worktree) == tree(view)


def test_materialize_to_another_tree_and_back(view: View, tmp_path: Path) -> None:
    """The holdout's way: to a tree the index does not hold (the disk damaged on the way), and back."""
    wt = view.worktree
    base = view.git(["rev-parse", "HEAD^{tree}"]).decode().strip()
    other = View(view.git_dir, wt, view.objects, base)
    (wt / "src" / "pkg" / "m2.py").write_text("VALUE = 'damaged'\n")
    (wt / "stray.txt").write_text("stray\n")
    materialize(other, base)
    assert disk(wt) == tree(other)
    plant_untracked_ignored_and_git_entries(wt, tmp_path)
    materialize(view, view.start)
    assert disk(wt) == tree(view)
