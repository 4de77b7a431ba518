"""The confined process's own view of the machine, built by bubblewrap (``bwrap``) from a ``Confinement``.

Invariant: a confined process reaches exactly what this argv mounts, and it holds for root too:

* ``/`` read-only. Outside the writable set, writes, ``chmod``, ``chown``, ``chattr``
  (``FS_IOC_SETFLAGS``), new hooks and new files all fail with EROFS, whatever the caller's uid.
* a fresh ``/dev`` and the ``/proc`` of its own PID namespace: it lists no other process, and
  bosun's ``/proc/<pid>/environ`` is not there to read.
* hidden paths: an empty tmpfs over a directory (made read-only once everything inside it is
  mounted), ``/dev/null`` over a file. Then the writable set bound read-write, then what must stay
  readable inside a hidden path bound read-only, then files shown in place of others (read-only).
  Mounts are ordered by depth, so a deeper rule always wins over the one it sits in.
* a user namespace with every capability dropped (and, where bwrap can, no further user
  namespace): a worker started as root has no privilege; the mounts above are locked to it.
* its own session (no terminal to inject input into), killed when bosun dies. When its first
  process exits, the kernel kills every other member of the PID namespace before the step's wait
  returns: nothing it started outlives it, by construction, however it forked or detached.
* with ``private_network``, its own network namespace with only a loopback of its own.

Landlock cannot run *before* bwrap here for the file system (a Landlock domain that handles file
access forbids mounts); its TCP port rules and scopes can, and are applied by the caller's spawning
thread (``bosun.sandbox``), so the network rules hold for everything inside.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bosun.sandbox.policy import Confinement

# Always passed: a session of its own, death with bosun, user + PID namespaces, a fresh /dev, no
# capabilities. `--disable-userns` (bwrap 0.8+) is added where the probe found it works.
BASE = ("--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc",
        "--cap-drop", "ALL")
PROBE_ARGV = ("/bin/true",)
PROBE_TIMEOUT_S = 10


def binary() -> str | None:
    """The bwrap program on bosun's PATH (or where Debian installs it)."""
    return shutil.which("bwrap") or (("/usr/bin/bwrap") if os.access("/usr/bin/bwrap", os.X_OK) else None)


@lru_cache(maxsize=1)
def probe() -> tuple[str, bool] | None:
    """``(bwrap, userns_disabled)`` when bwrap can build a sandbox on this machine (user and PID
    namespaces, a fresh /proc), else None. Tried once per process, with ``--disable-userns`` first."""
    program = binary()
    if program is None:
        return None
    for disable in (True, False):
        argv = [program, *BASE, *(("--disable-userns",) if disable else ()), "--ro-bind", "/", "/",
                "--dev", "/dev", "--proc", "/proc", "--", *PROBE_ARGV]
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0:
            return program, disable
    return None


def _real(path: Path) -> str:
    return os.path.realpath(path)


def argv(confine: Confinement, cwd: Path, command: Sequence[str], program: str, userns_disabled: bool) -> list[str]:
    """The bwrap command line that runs ``command`` in ``cwd`` under ``confine``."""
    out = [program, *BASE]
    if userns_disabled:
        out.append("--disable-userns")
    if confine.private_network:
        out.append("--unshare-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    out += mounts(confine)
    out += ["--chdir", _real(cwd), "--", *command]
    return out


# Rank of a rule at the same depth: the later one wins.
_HIDE, _WRITE, _READ, _REPLACE = range(4)


def mounts(confine: Confinement) -> list[str]:
    """The mount arguments of ``confine``, deepest last (see the module docstring)."""
    rules: list[tuple[int, int, str, list[str]]] = []

    def add(path: str, rank: int, args: list[str]) -> None:
        rules.append((path.count("/"), rank, path, args))

    hidden_dirs = []
    for p in confine.deny_read:
        real = _real(p)
        if os.path.isdir(real):
            add(real, _HIDE, ["--tmpfs", real])
            hidden_dirs.append(real)
        elif os.path.lexists(real):
            add(real, _HIDE, ["--ro-bind", "/dev/null", real])
    writable = [_real(p) for p in confine.writable if os.path.exists(p)]
    for real in writable:
        add(real, _WRITE, ["--bind", real, real])
    for p in confine.readable:
        # Only what a hidden directory covers needs binding again; what is writable is readable already.
        real = _real(p)
        if os.path.exists(real) and _inside_any(real, hidden_dirs) and not _inside_any(real, writable):
            add(real, _READ, ["--ro-bind", real, real])
    for shown_at, source in confine.replace:
        add(_real(shown_at), _REPLACE, ["--ro-bind", _real(source), _real(shown_at)])
    rules.sort(key=lambda r: (r[0], r[1]))
    out = [arg for rule in rules for arg in rule[3]]
    # Hidden directories become read-only last: bwrap makes the mount points of the rules inside them.
    for real in hidden_dirs:
        out += ["--remount-ro", real]
    return out


def _inside_any(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def find_program(program: str, cwd: str | Path, env: Mapping[str, str]) -> None:
    """Raise FileNotFoundError (PermissionError) as ``Popen`` would for ``program`` in ``cwd`` with
    ``env``'s PATH: a sandbox wrapper around it would otherwise turn that into its own exit code."""
    if "/" in program:
        path = Path(cwd) / program
        if not path.exists():
            raise FileNotFoundError(2, "No such file or directory", program)
        if not os.access(path, os.X_OK) or path.is_dir():
            raise PermissionError(13, "Permission denied", program)
        return
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(2, "No such file or directory", program)
