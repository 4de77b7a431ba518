"""The mode watch on real files: what a worker running as root could do to them, seen and put back."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bosun.isolation import modewatch

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chattr and chown of another's files need root")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "index").write_bytes(b"DIRC")
    (root / "README.md").write_text("read me\n")
    (root / "src").mkdir()
    (root / "src" / "calc.py").write_text("x = 1\n")
    os.chmod(root / ".git" / "hooks", 0o755)
    return root


def chattr(flags: str, path: Path) -> None:
    subprocess.run(["chattr", flags, str(path)], check=True, capture_output=True)


def lsattr(path: Path) -> str:
    return subprocess.run(["lsattr", "-d", str(path)], check=True, capture_output=True, text=True).stdout.split()[0]


def test_a_changed_mode_is_seen_and_put_back(tree: Path) -> None:
    before = modewatch.take((tree,))
    os.chmod(tree / ".git" / "hooks", 0o777)
    os.chmod(tree / "README.md", 0o600)
    changed = modewatch.changes(before)
    assert sorted(changed) == [str(tree / ".git" / "hooks"), str(tree / "README.md")]
    assert modewatch.restore(before, changed) == []
    assert (tree / ".git" / "hooks").stat().st_mode & 0o777 == 0o755
    assert (tree / "README.md").stat().st_mode & 0o777 == 0o644
    assert modewatch.changes(before) == {}
    found = modewatch.tampering(before, changed, [], tree)
    assert ".git/hooks (drwxr-xr-x 0:0 -> drwxrwxrwx 0:0)" in found["changed"][0].replace(
        f"{os.getuid()}:{os.getgid()}", "0:0")
    assert found["restored"] == [".git/hooks", "README.md"] and found["failed"] == []


def test_files_added_or_removed_meanwhile_are_not_changes(tree: Path) -> None:
    before = modewatch.take((tree,))
    (tree / "new.txt").write_text("the user's new file\n")
    (tree / "src" / "calc.py").unlink()
    assert modewatch.changes(before) == {}


def test_skipped_paths_are_not_walked(tree: Path) -> None:
    before = modewatch.take((tree,), skip=(tree / "src",))
    assert str(tree / "src" / "calc.py") not in before and str(tree / "README.md") in before


@as_root
def test_immutable_and_append_only_flags_are_seen_and_cleared(tree: Path) -> None:
    index, readme = tree / ".git" / "index", tree / "README.md"
    before = modewatch.take((tree,))
    try:
        chattr("+i", index)
        chattr("+i", readme)
        chattr("+a", tree / "src")
        changed = modewatch.changes(before)
        assert set(changed) == {str(index), str(readme), str(tree / "src")}
        assert modewatch.restore(before, changed) == []
        for path in (index, readme, tree / "src"):
            assert "i" not in lsattr(path) and "a" not in lsattr(path)
        index.write_bytes(b"DIRC2")  # git can write its index again
        assert modewatch.changes(before) == {}
    finally:
        for path in (index, readme, tree / "src"):
            subprocess.run(["chattr", "-i", "-a", str(path)], capture_output=True)


@as_root
def test_a_flag_the_user_had_is_kept_and_owners_are_put_back(tree: Path) -> None:
    readme = tree / "README.md"
    chattr("+a", readme)
    try:
        before = modewatch.take((tree,))
        chattr("-a", readme)
        os.chown(tree / "src" / "calc.py", 12345, 12345)
        changed = modewatch.changes(before)
        assert modewatch.restore(before, changed) == []
        assert "a" in lsattr(readme)
        st = (tree / "src" / "calc.py").stat()
        assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    finally:
        subprocess.run(["chattr", "-a", str(readme)], capture_output=True)


def test_a_path_replaced_by_another_kind_cannot_be_put_back(tree: Path) -> None:
    before = modewatch.take((tree,))
    shutil.rmtree(tree / "src")
    (tree / "src").write_text("now a file\n")
    changed = modewatch.changes(before)
    assert str(tree / "src") in changed
    assert modewatch.restore(before, changed) == [str(tree / "src")]
