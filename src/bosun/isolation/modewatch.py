"""Modes, owners and flags of the user's files, saved before a worker turn and put back after it.

Invariant: **after every worker turn, every file and directory of the user's repository (its working
tree and its git dir) has the permission bits, owner, group and immutable / append-only flags it had
before.** A worker running as root could otherwise leave ``README.md`` or ``.git/index`` immutable
(``FS_IOC_SETFLAGS``: the user's next ``git`` fails to write its index) or ``.git/hooks`` writable to
anyone. The sandbox's read-only mounts refuse all of it; this holds where they are missing (Landlock
does not cover chmod, chown or flags) and catches a gap: what changed is put back, and the run is
refused (``USER_FILES_TAMPERED``, like ``isolation/gitwatch.py``'s ``USER_GIT_TAMPERED``).

Only what existed before and still exists is compared: files the user adds or removes meanwhile
are theirs. bosun's own state (worktrees included) is never walked.

One ``statx`` per entry (mode, owner and the file attributes in one call, no open): about 5 µs an
entry, so a repository of 50,000 entries (a ``.venv`` or ``node_modules`` inside counts) costs about
a quarter of a second before a turn and as much after it.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

_AT_FDCWD = -100
_AT_SYMLINK_NOFOLLOW = 0x100
_STATX_WANTED = 0x1 | 0x2 | 0x8 | 0x10  # type, mode, uid, gid
# The two flags that change what the user can do with a file (chattr +i, +a), as statx reports them
# and as FS_IOC_SETFLAGS takes them (the same bit values).
IMMUTABLE, APPEND = 0x10, 0x20
FLAGS = IMMUTABLE | APPEND
_FS_IOC_GETFLAGS, _FS_IOC_SETFLAGS = 0x80086601, 0x40086602

_libc = ctypes.CDLL(None, use_errno=True)
_statx = getattr(_libc, "statx", None)


@dataclass(frozen=True)
class Meta:
    mode: int
    uid: int
    gid: int
    flags: int

    def describe(self) -> str:
        flags = "".join(c for bit, c in ((IMMUTABLE, "i"), (APPEND, "a")) if self.flags & bit)
        return f"{stat.filemode(self.mode)} {self.uid}:{self.gid}" + (f" +{flags}" if flags else "")


Snapshot = dict[str, Meta]


def _meta(path: bytes, buf: ctypes.Array[ctypes.c_char]) -> Meta | None:
    if _statx is not None:
        if _statx(_AT_FDCWD, path, _AT_SYMLINK_NOFOLLOW, _STATX_WANTED, buf) != 0:
            return None
        attributes, _nlink, uid, gid, mode = struct.unpack_from("=QIIIH", buf, 8)
        return Meta(mode, uid, gid, attributes & FLAGS)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return Meta(st.st_mode, st.st_uid, st.st_gid, 0)


def take(roots: tuple[Path, ...], skip: tuple[Path, ...] = ()) -> Snapshot:
    """Mode, owner and flags of every entry beneath ``roots`` (the user's working tree and git common
    dir), ``skip`` (and anything inside it) left out. Keys are absolute paths."""
    buf = ctypes.create_string_buffer(256)
    skipped = {os.fsencode(os.path.realpath(p)) for p in skip}
    found: dict[bytes, Meta] = {}
    todo = list(dict.fromkeys(os.fsencode(os.path.realpath(r)) for r in roots))
    while todo:
        path = todo.pop()
        if path in skipped or path in found:
            continue
        meta = _meta(path, buf)
        if meta is None:
            continue
        found[path] = meta
        if meta.mode & 0o170000 == stat.S_IFDIR:
            try:
                names = os.listdir(path)
            except OSError:
                continue
            prefix = path + b"/"
            todo.extend([prefix + name for name in names])
    return {os.fsdecode(p): m for p, m in found.items()}


def changes(before: Snapshot) -> dict[str, Meta]:
    """Paths whose mode, owner or flags differ now, with what they are now (added and removed entries
    are not changes)."""
    buf = ctypes.create_string_buffer(256)
    found = {}
    for path, was in before.items():
        now = _meta(os.fsencode(path), buf)
        if now is not None and now != was:
            found[path] = now
    return found


def restore(before: Snapshot, changed: dict[str, Meta]) -> list[str]:
    """Put the saved mode, owner and flags back on each changed path; returns what could not be."""
    failed = []
    for path in sorted(changed, key=len):  # a directory before its content: it may have been made untraversable
        try:
            _put_back(path, before[path])
        except OSError:
            failed.append(path)
    return failed


def _put_back(path: str, was: Meta) -> None:
    buf = ctypes.create_string_buffer(256)
    now = _meta(os.fsencode(path), buf)
    if now is None:
        return
    if stat.S_IFMT(now.mode) != stat.S_IFMT(was.mode):
        raise OSError(errno.EEXIST, "replaced by another kind of file", path)
    link = stat.S_ISLNK(now.mode)
    if now.flags and not link:
        _set_flags(path, 0)  # an immutable file takes no chmod or chown
    if (now.uid, now.gid) != (was.uid, was.gid):
        os.chown(path, was.uid, was.gid, follow_symlinks=False)
    if not link:
        os.chmod(path, stat.S_IMODE(was.mode))  # after chown, which clears set-id bits
        if was.flags:
            _set_flags(path, was.flags)
    if _meta(os.fsencode(path), buf) != was:
        raise OSError(errno.EPERM, "could not be put back", path)


def _set_flags(path: str, wanted: int) -> None:
    """Set the watched flags of ``path`` to ``wanted``, its other flags as they are."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        current = struct.unpack("=i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, b"\0" * 8)[:4])[0]
        fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("=i", (current & ~FLAGS) | wanted) + b"\0" * 4)
    finally:
        os.close(fd)


def tampering(before: Snapshot, changed: dict[str, Meta], failed: list[str], root: Path) -> dict[str, list[str]]:
    """What a turn changed, for the run's record: ``path (was -> now)``, relative to ``root``."""

    def rel(path: str) -> str:
        return os.path.relpath(path, root)

    return {"changed": [f"{rel(p)} ({before[p].describe()} -> {now.describe()})" for p, now in sorted(changed.items())],
            "restored": [rel(p) for p in sorted(changed) if p not in failed], "failed": [rel(p) for p in failed]}
