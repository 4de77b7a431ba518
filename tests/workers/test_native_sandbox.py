"""The native worker's file tools never leave the worktree."""

from __future__ import annotations

import os

import pytest

from bosun.workers.native import Sandbox, ToolError


@pytest.fixture
def box(tmp_path):
    root = tmp_path / "wt"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "secret.txt").write_text("outside")
    return Sandbox(root, read_only=False)


@pytest.mark.parametrize("path", ["../secret.txt", "src/../../secret.txt", "/etc/passwd", ".git/config", ""])
def test_paths_outside_are_refused(box, path):
    with pytest.raises(ToolError):
        box.call("read_file", {"path": path})


def test_symlink_escape_is_refused(box, tmp_path):
    os.symlink(tmp_path / "secret.txt", box.root / "src" / "link.txt")
    with pytest.raises(ToolError):
        box.call("read_file", {"path": "src/link.txt"})
    with pytest.raises(ToolError):
        box.call("write_file", {"path": "src/link.txt", "content": "pwned"})
    assert (tmp_path / "secret.txt").read_text() == "outside"


def test_absolute_path_inside_is_fine(box):
    assert box.call("read_file", {"path": str(box.root / "src" / "a.py")}).startswith("x = 1")


def test_edit_requires_exactly_one_match(box):
    with pytest.raises(ToolError, match="exactly once"):
        box.call("edit_file", {"path": "src/a.py", "old": "nope", "new": "z"})
    box.call("edit_file", {"path": "src/a.py", "old": "y = 2", "new": "y = 3"})
    assert (box.root / "src" / "a.py").read_text() == "x = 1\ny = 3\n"


def test_read_only_mode_refuses_writes(box):
    ro = Sandbox(box.root, read_only=True)
    with pytest.raises(ToolError, match="read-only"):
        ro.call("write_file", {"path": "src/b.py", "content": ""})
    assert "a.py" in ro.call("list_dir", {"path": "src"})
    assert "src/a.py:2" in ro.call("grep", {"pattern": "y =", "path": "."})


def test_bad_arguments_are_reported(box):
    with pytest.raises(ToolError, match="bad arguments"):
        box.call("read_file", {"file": "src/a.py"})
    with pytest.raises(ToolError, match="unknown tool"):
        box.call("rm_rf", {})
