"""Writes a filesystem refused are recognised, whoever made them (the OS, SQLite, git), and nothing else is."""

from __future__ import annotations

import errno
import sqlite3

import pytest

from bosun.core.unwritable import unwritable
from bosun.isolation.git import GitError


def test_a_full_disk_is_disk_full_with_the_path_and_what_to_do(isolated_home):
    err = unwritable(OSError(errno.ENOSPC, "No space left on device", str(isolated_home / "runs" / "x")))
    assert err is not None and err.code == "DISK_FULL" and err.exit_code == 1
    assert err.message == f"no space left on the filesystem of {isolated_home / 'runs' / 'x'}"
    assert "df -h" in err.hint


def test_sqlite_saying_the_disk_is_full_names_bosuns_home(isolated_home):
    err = unwritable(sqlite3.OperationalError("database or disk is full"))
    assert err is not None and err.code == "DISK_FULL" and str(isolated_home) in err.message


def test_git_out_of_space_keeps_gits_own_words():
    failure = GitError.from_failure(["worktree", "add"], 128, "fatal: write error: No space left on device", "/r")
    err = unwritable(failure)
    assert err is not None and err.code == "DISK_FULL" and "worktree add" in err.message


@pytest.mark.parametrize("exc", [
    OSError(errno.EROFS, "Read-only file system", "/somewhere"),
    sqlite3.OperationalError("attempt to write a readonly database"),
])
def test_a_read_only_filesystem_is_read_only(exc, isolated_home):
    err = unwritable(exc)
    assert err is not None and err.code == "READ_ONLY" and "writable" in err.hint


def test_permission_refused_inside_bosuns_home_is_read_only_and_elsewhere_a_bug_to_show(isolated_home):
    inside = PermissionError(errno.EACCES, "Permission denied", str(isolated_home / "bosun.db"))
    outside = PermissionError(errno.EACCES, "Permission denied", "/etc/shadow")
    assert unwritable(inside).code == "READ_ONLY"  # type: ignore[union-attr]
    assert unwritable(outside) is None


@pytest.mark.parametrize("exc", [
    OSError(errno.ENOENT, "No such file or directory", "/x"),
    sqlite3.OperationalError("no such table: runs"),
    ValueError("database or disk is full"),  # not a write failure, whatever it says
    KeyError("x"),
])
def test_other_failures_are_not_mistaken_for_a_refused_write(exc):
    assert unwritable(exc) is None
