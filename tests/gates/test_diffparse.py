"""bosun.gates.diffparse, on diffs made by a real git and on hand-written edge cases."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bosun.gates.diffparse import FileDiff, parse_diff

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> bytes:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True).stdout


@pytest.fixture(scope="module")
def real_diff(tmp_path_factory: pytest.TempPathFactory) -> dict[str, FileDiff]:
    """One commit, then a working tree with every kind of change, diffed the way bosun diffs."""
    repo = tmp_path_factory.mktemp("repo")
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("line1\nline2\nline3\n")
    (repo / "bin.dat").write_bytes(b"\x00\x01\x02")
    (repo / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 31)))
    (repo / "tool.sh").write_text("echo hi\n")
    (repo / "sp ace.txt").write_text("keep\n")
    (repo / "gone.txt").write_text("bye\n")
    (repo / "dashes.txt").write_text("-- a comment\n++ odd\nplain\n")
    os.symlink("a.txt", repo / "link")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")

    (repo / "a.txt").write_text("line1\nLINE2\nline3")  # and no newline at the end any more
    (repo / "bin.dat").write_bytes(b"\x00\x05\x02\x03")
    (repo / "new.bin").write_bytes(b"\x89PNG\x00\x00")
    _git(repo, "mv", "big.txt", "moved.txt")
    with (repo / "moved.txt").open("a") as fh:
        fh.write("row 31\n")
    (repo / "tool.sh").chmod(0o755)
    (repo / "sp ace.txt").write_text("keep\nmore\n")
    (repo / 'nëw "q".txt').write_text("new\n")
    (repo / "gone.txt").unlink()
    (repo / "dashes.txt").write_text("plain\n")
    (repo / "link").unlink()
    os.symlink("moved.txt", repo / "link")
    _git(repo, "add", "-A")
    diff = _git(repo, "diff", "--cached", "--binary", "-M", "HEAD")
    return {f.path: f for f in parse_diff(diff)}


@needs_git
def test_every_file_is_parsed_once(real_diff: dict[str, FileDiff]) -> None:
    assert set(real_diff) == {
        "a.txt",
        "bin.dat",
        "new.bin",
        "moved.txt",
        "tool.sh",
        "sp ace.txt",
        'nëw "q".txt',
        "gone.txt",
        "dashes.txt",
        "link",
    }


@needs_git
def test_modified_lines_carry_new_file_line_numbers(real_diff: dict[str, FileDiff]) -> None:
    a = real_diff["a.txt"]
    assert a.status == "M"
    assert a.added == [(2, "LINE2"), (3, "line3")]  # "line3" lost its newline: removed and re-added
    assert a.removed == [(2, "line2"), (3, "line3")]


@needs_git
def test_binary_changes(real_diff: dict[str, FileDiff]) -> None:
    assert real_diff["bin.dat"].binary and real_diff["bin.dat"].status == "M"
    assert real_diff["new.bin"].binary and real_diff["new.bin"].status == "A"
    assert real_diff["new.bin"].added == []
    assert not real_diff["a.txt"].binary


@needs_git
def test_rename_with_an_edit(real_diff: dict[str, FileDiff]) -> None:
    moved = real_diff["moved.txt"]
    assert (moved.status, moved.old_path) == ("R", "big.txt")
    assert moved.added == [(31, "row 31")] and moved.removed == []


@needs_git
def test_mode_change_without_content(real_diff: dict[str, FileDiff]) -> None:
    tool = real_diff["tool.sh"]
    assert (tool.old_mode, tool.new_mode) == ("100644", "100755")
    assert tool.added == tool.removed == []


@needs_git
def test_quoted_and_spaced_paths(real_diff: dict[str, FileDiff]) -> None:
    assert real_diff['nëw "q".txt'].status == "A"
    assert real_diff['nëw "q".txt'].added == [(1, "new")]
    assert real_diff["sp ace.txt"].added == [(2, "more")]


@needs_git
def test_deleted_file(real_diff: dict[str, FileDiff]) -> None:
    gone = real_diff["gone.txt"]
    assert gone.status == "D" and gone.removed == [(1, "bye")] and gone.added == []


@needs_git
def test_removed_lines_that_look_like_headers(real_diff: dict[str, FileDiff]) -> None:
    dashes = real_diff["dashes.txt"]
    assert dashes.removed == [(1, "-- a comment"), (2, "++ odd")]
    assert dashes.added == []


@needs_git
def test_symlink_modes(real_diff: dict[str, FileDiff]) -> None:
    link = real_diff["link"]
    assert link.old_mode == link.new_mode == "120000"
    assert link.added == [(1, "moved.txt")]


def test_binary_files_differ_form() -> None:
    diff = b"diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\nBinary files /dev/null and b/logo.png differ\n"
    (f,) = parse_diff(diff)
    assert (f.path, f.status, f.binary, f.new_mode) == ("logo.png", "A", True, "100644")


def test_no_newline_marker_between_removed_and_added() -> None:
    diff = (
        b"diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n"
        b"-old\n\\ No newline at end of file\n+new\n\\ No newline at end of file\n"
        b"diff --git a/y b/y\nindex 1..2 100644\n--- a/y\n+++ b/y\n@@ -1,0 +2 @@\n+tail\n"
    )
    x, y = parse_diff(diff)
    assert x.removed == [(1, "old")] and x.added == [(1, "new")]
    assert y.added == [(2, "tail")]


def test_multiple_hunks_and_crlf() -> None:
    diff = (
        b"diff --git a/w.txt b/w.txt\nindex 1..2 100644\n--- a/w.txt\n+++ b/w.txt\n"
        b"@@ -1,2 +1,3 @@\n a\r\n+b\r\n c\r\n@@ -10,2 +11,2 @@ def f():\n-x\r\n+y\r\n z\r\n"
    )
    (f,) = parse_diff(diff)
    assert f.added == [(2, "b"), (11, "y")]
    assert f.removed == [(10, "x")]


def test_unquoted_path_containing_b_slash() -> None:
    diff = b"diff --git a/x b/y.txt b/x b/y.txt\nold mode 100644\nnew mode 100755\n"
    (f,) = parse_diff(diff)
    assert f.path == "x b/y.txt"


def test_quoted_rename_and_octal_escapes() -> None:
    diff = (
        b'diff --git "a/caf\\303\\251.py" "b/t\\303\\251st \\"1\\".py"\nsimilarity index 100%\n'
        b'rename from "caf\\303\\251.py"\nrename to "t\\303\\251st \\"1\\".py"\n'
    )
    (f,) = parse_diff(diff)
    assert (f.status, f.old_path, f.path) == ("R", "café.py", 'tést "1".py')


def test_empty_and_noise() -> None:
    assert parse_diff(b"") == []
    assert parse_diff("warning: something\n") == []


def test_invalid_utf8_content_does_not_raise() -> None:
    diff = b"diff --git a/l.txt b/l.txt\n--- a/l.txt\n+++ b/l.txt\n@@ -0,0 +1 @@\n+caf\xe9\n"
    (f,) = parse_diff(diff)
    assert f.added == [(1, "caf\ufffd")]
