"""Landlock through ctypes: probe the ABI, build a ruleset, restrict the calling process.

Landlock only ever grants: a ruleset names the access rights it *handles* (everything the running
ABI knows), and each rule allows some of them beneath one file or directory. Whatever is handled and
not allowed by a rule is denied, for the process that calls ``restrict_self`` and for everything it
starts later. It cannot be lifted, and it applies to root too.

Only the access rights the running ABI knows are handled (a ruleset naming an unknown right fails).
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable
from pathlib import Path

# Syscall numbers: the same on every architecture since these syscalls were added (5.13).
SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights, by the ABI that introduced them.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
# Network rights (ABI 4).
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
# Scopes (ABI 6): no connecting to abstract unix sockets, no signals, outside the sandbox.
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

FILE_ONLY_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
# Device nodes are never created, even in writable directories: root could mknod the raw disk.
NEVER_GRANTED = MAKE_CHAR | MAKE_BLOCK


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_prctl = _libc.prctl
_prctl.restype = ctypes.c_int
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def abi_version() -> int:
    """The Landlock ABI of the running kernel: 0 when Landlock is missing or disabled."""
    ret = _syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_long(0), ctypes.c_long(CREATE_RULESET_VERSION))
    return int(ret) if ret > 0 else 0


def fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def scopes(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock {what}: {os.strerror(err)}")
    return ret


class Ruleset:
    """An open ruleset fd, built in the parent; ``restrict_self`` is all the child has to do."""

    def __init__(self, abi: int, *, network: bool = False, files: bool = True) -> None:
        self.abi = abi
        # Without ``files`` the ruleset handles no file access: mounts stay allowed (bubblewrap builds
        # the file system view after it), and only the TCP rules and the scopes apply.
        self.handled_fs = fs_rights(abi) if files else 0
        self.handled_net = NET_CONNECT_TCP if network and abi >= 4 else 0
        attr = _RulesetAttr(self.handled_fs, self.handled_net, scopes(abi))
        # Pass only the fields this ABI knows: older kernels refuse a larger struct.
        size = 24 if abi >= 6 else 16 if abi >= 4 else 8
        self.fd = _check(
            _syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_long(0)),
            "create_ruleset",
        )

    def allow_path(self, path: Path | str, rights: int) -> bool:
        """Allow ``rights`` beneath ``path``; False when the path does not exist."""
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ELOOP):
                return False
            raise
        try:
            rights &= self.handled_fs
            if not os.path.isdir(f"/proc/self/fd/{pfd}"):
                rights &= FILE_ONLY_RIGHTS
            if not rights:
                return True
            attr = _PathBeneathAttr(rights, pfd)
            _check(
                _syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_long(self.fd), ctypes.c_long(RULE_PATH_BENEATH),
                         ctypes.byref(attr), ctypes.c_long(0)),
                f"add_rule {path}",
            )
        finally:
            os.close(pfd)
        return True

    def allow_connect(self, ports: Iterable[int]) -> None:
        if not self.handled_net:
            return
        for port in ports:
            attr = _NetPortAttr(NET_CONNECT_TCP, int(port))
            _check(
                _syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_long(self.fd), ctypes.c_long(RULE_NET_PORT),
                         ctypes.byref(attr), ctypes.c_long(0)),
                f"add_rule port {port}",
            )

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def no_new_privs() -> None:
    """``PR_SET_NO_NEW_PRIVS`` alone: no setuid program may raise the caller's privilege again."""
    if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def restrict_self(ruleset_fd: int) -> None:
    """``no_new_privs`` then ``landlock_restrict_self``: two syscalls and nothing else, so it is fit
    to run between fork and exec (no allocation beyond small ints, no locks, no imports)."""
    if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if _syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_long(ruleset_fd), ctypes.c_long(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
