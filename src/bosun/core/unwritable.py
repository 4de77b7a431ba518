"""A write that the filesystem refused, as the ``BosunError`` a person can act on.

bosun writes its state (the store, run records, worktrees) under its home, and objects and refs into
the user's repository. A full disk or a read-only filesystem makes those writes fail deep in SQLite,
``os`` or git, as exceptions that say nothing of what to do. ``unwritable`` recognises them (by
errno, by SQLite's and git's own words) and names the path and the fix: ``DISK_FULL`` or
``READ_ONLY``. The CLI's and the MCP server's boundaries turn such a failure into this error; the
run is left where the failure found it, for ``bosun recover`` (or the verb that was cut short) once
the filesystem takes writes again.
"""

from __future__ import annotations

import errno

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from bosun.core.errors import BosunError

FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
READ_ONLY = frozenset({errno.EROFS})
# SQLite's and git's words for the same failures (git: "No space left on device" is strerror(ENOSPC)).
FULL_WORDS = ("database or disk is full", "no space left on device", "disk quota exceeded")
READ_ONLY_WORDS = ("readonly database", "read-only file system")


def unwritable(exc: BaseException) -> BosunError | None:
    """The user-facing error for ``exc`` when it is a write the filesystem refused; None otherwise."""
    from bosun.core.paths import bosun_home

    text = _text_of(exc).lower()
    where = getattr(exc, "filename", None) or _where(exc)
    code = getattr(exc, "errno", None) if isinstance(exc, OSError) else None
    if code in FULL or any(w in text for w in FULL_WORDS):
        if where is None:  # git's failure: its own words say which write it was
            return _error("DISK_FULL", f"no space left on a filesystem bosun writes to: {exc}",
                          f"free space on it (`df -h {bosun_home()} .` shows bosun's and this directory's)")
        return _error("DISK_FULL", f"no space left on the filesystem of {where}", f"free space there (`df -h {where}`)")
    if code in READ_ONLY or any(w in text for w in READ_ONLY_WORDS) or _denied_in_home(exc):
        return _error(
            "READ_ONLY", f"bosun cannot write {where or exc}: the filesystem or directory is read-only",
            "make it writable (remount it read-write, or fix its permissions), or point BOSUN_HOME at a "
            "writable directory")
    return None


def _error(code: str, message: str, hint: str) -> BosunError:
    from bosun.core.errors import BosunError

    return BosunError(message, hint, code=code)


def _text_of(exc: BaseException) -> str:
    """What SQLite or git said of the failure (a git failure's stderr too); nothing for other exceptions,
    whose text is not the filesystem's word."""
    if type(exc).__module__ == "sqlite3" or getattr(exc, "stderr", None) is not None:
        return f"{exc} {getattr(exc, 'stderr', '') or ''}"
    return ""


def _where(exc: BaseException) -> str | None:
    """SQLite names no path: a store error is about bosun's home (its ``bosun.db``)."""
    if type(exc).__module__ == "sqlite3":
        from bosun.core.paths import bosun_home

        return str(bosun_home())
    return None


def _denied_in_home(exc: BaseException) -> bool:
    """A permission refused inside bosun's own home: the home was made read-only (as root, only a
    read-only mount stops a write; as anyone else, permissions do)."""
    if not isinstance(exc, PermissionError) or not exc.filename:
        return False
    import os

    from bosun.core.paths import bosun_home

    home = os.path.realpath(bosun_home())
    return os.path.realpath(str(exc.filename)).startswith(home + os.sep)
