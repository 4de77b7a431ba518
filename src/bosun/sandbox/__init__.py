"""Kernel confinement for untrusted processes (workers and the commands that run their code).

``Confinement`` says what a process may write, what it may not read, which TCP ports it may connect
to and whether it gets a network of its own. ``prepare`` turns it into what the kernel enforces on
this machine; ``spawn`` starts the child confined; ``probe`` says what this machine can enforce.

Two mechanisms, the strongest the machine has:

* **namespaces** (bubblewrap, ``sandbox/bubblewrap.py``): the child gets its own mount, PID, IPC and
  user namespaces with every capability dropped: a read-only root with the writable set bound on
  top, hidden paths covered, a private process view, and an end that kills everything it started.
  Landlock adds its TCP port rules and scopes, applied before bwrap starts (they allow mounts).
* **Landlock** alone, where user namespaces or bwrap are missing: writes and reads by path rules,
  TCP ports, scopes; processes are contained by bosun as child subreaper (``sandbox/reaper.py``).
  What this cannot enforce (a private process view, no privilege for root) is said, not claimed.

How the child gets confined: neither ``preexec_fn`` nor a Python re-exec wrapper. ``landlock_restrict_self``
and ``PR_SET_NO_NEW_PRIVS`` apply to the calling *thread* (Landlock ABI < 8 has no other mode, and
bosun asks for none), and a child inherits the credentials of the thread that forked it. So
``spawn`` restricts a short-lived thread of its own and calls ``subprocess.Popen`` from it: the
child starts already confined, through the ordinary vfork path, with no Python code between fork
and exec (``preexec_fn`` forces a full fork and runs Python in the child: about 6 ms more per start
and unsafe with threads; a ``python -m`` wrapper costs a Python start, 20-40 ms). The thread ends
right after the spawn, so nothing else in bosun ever runs confined. With namespaces the program it
starts is ``bwrap``, whose argv carries the view (``Prepared.command``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, cast

from bosun.core.errors import BosunError
from bosun.sandbox import landlock
from bosun.sandbox.policy import Confinement, Support

__all__ = ["PROBE_ENV", "Confinement", "Prepared", "SandboxFailed", "Support", "prepare", "probe", "spawn"]

# Tests set this to "none" to simulate a kernel without Landlock, or to "landlock" to simulate a
# machine without user namespaces or bwrap: the `required` refusal path runs in a real `bosun`
# subprocess there, which a monkeypatch cannot reach. It can only take protection away, never claim
# more than the machine has.
PROBE_ENV = "BOSUN_SANDBOX_PROBE"

# Devices every program expects to open for writing. /dev/ptmx and /dev/pts serve CLIs that run
# their shell tool in a pseudo-terminal.
DEVICES_RW = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
              "/dev/ptmx", "/dev/pts")


class SandboxFailed(BosunError):
    """The kernel refused the confinement, or it is required and this machine cannot enforce it."""

    code = "SANDBOX_UNAVAILABLE"

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message, hint or "set sandbox = \"off\" (or \"auto\") in bosun.toml to run "
                         "workers without a kernel sandbox, or run bosun on Linux 5.13+ with Landlock "
                         "enabled and bubblewrap installed (`bosun doctor` shows what this machine enforces)")


@lru_cache(maxsize=1)
def _kernel_abi() -> int:
    try:
        return landlock.abi_version()
    except (OSError, AttributeError):
        return 0


def probe() -> Support:
    """What this machine can enforce: Landlock's ABI, and namespaces through bwrap.

    ``BOSUN_SANDBOX_PROBE`` can only take protection away: ``none`` (no Landlock, no namespaces),
    ``landlock`` (no namespaces: a machine without user namespaces or bwrap)."""
    forced = os.environ.get(PROBE_ENV, "").strip().lower()
    abi = 0 if forced == "none" else _kernel_abi()
    from bosun.sandbox import bubblewrap, reaper

    found = None if forced in ("none", "landlock") else bubblewrap.probe()
    if found is not None:
        return Support(landlock_abi=abi, containment="pid-namespace", bwrap=found[0], userns_disabled=found[1])
    return Support(landlock_abi=abi, containment="subreaper" if reaper.supported() else "none")


@dataclass
class Prepared:
    """A confinement ready for ``spawn``: the Landlock ruleset to apply in the spawning thread (None:
    none needed) and, with namespaces, the bwrap command around the child's. ``close`` it once the
    child started."""

    ruleset: landlock.Ruleset | None
    confine: Confinement
    support: Support
    # Set once the child has exited: the spawning thread, its parent for the kernel, may end (``spawn``).
    released: threading.Event = field(default_factory=threading.Event)

    @property
    def contained(self) -> bool:
        """Everything the child starts dies with it (PID namespace): no subreaper sweep needed."""
        return self.support.namespaces

    def command(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """What to start for ``argv`` in ``cwd``: itself (Landlock), or bwrap around it."""
        if not self.support.namespaces:
            return list(argv)
        from bosun.sandbox import bubblewrap

        assert self.support.bwrap is not None
        return bubblewrap.argv(self.confine, cwd, argv, self.support.bwrap, self.support.userns_disabled)

    def close(self) -> None:
        if self.ruleset is not None:
            self.ruleset.close()

    def release(self) -> None:
        """The child has exited (or is being given up): its spawning thread may end."""
        self.released.set()


T = TypeVar("T")


def spawn(prepared: Prepared, start: Callable[[], T]) -> T:
    """Call ``start`` (which forks and execs, e.g. ``subprocess.Popen``) from a thread confined by
    ``prepared``, so the child and everything it starts are confined. Raises ``SandboxFailed`` when
    the kernel refuses the ruleset (the child never starts).

    With namespaces the thread then stays, idle, until ``prepared.release()``: bwrap's
    ``--die-with-parent`` is a parent-death signal, which the kernel sends when the *thread* that
    forked the child ends, not its process."""
    box: dict[str, Any] = {}
    fd = prepared.ruleset.fd if prepared.ruleset is not None else None
    started = threading.Event()

    def confined() -> None:
        try:
            if fd is None:
                landlock.no_new_privs()
            else:
                landlock.restrict_self(fd)
        except OSError as exc:
            box["refused"] = exc
            started.set()
            return
        try:
            box["value"] = start()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc
            started.set()
            return
        started.set()
        if prepared.contained:
            prepared.released.wait()

    thread = threading.Thread(target=confined, name="bosun-sandbox-spawn", daemon=True)
    thread.start()
    started.wait()
    if "refused" in box:
        raise SandboxFailed(f"the kernel refused the sandbox: {box['refused']}")
    if "error" in box:
        raise box["error"]
    return cast(T, box["value"])


def prepare(confine: Confinement, support: Support | None = None) -> Prepared:
    """Build what enforces ``confine`` here. Raises OSError when the kernel refuses it or this machine
    has neither namespaces nor Landlock."""
    support = probe() if support is None else support
    if support.namespaces:
        return Prepared(_network_ruleset(confine, support.landlock_abi), confine, support)
    if support.landlock_abi <= 0:
        raise OSError("Landlock is not available on this kernel")
    return Prepared(_file_ruleset(confine, support.landlock_abi), confine, support)


def _network_ruleset(confine: Confinement, abi: int) -> landlock.Ruleset | None:
    """Under namespaces, Landlock keeps only what bwrap cannot do: TCP port rules and the scopes
    (no abstract unix sockets, no signals, outside the sandbox). None when this ABI has neither."""
    network = confine.connect_ports is not None and abi >= 4
    if not network and not landlock.scopes(abi):
        return None
    rs = landlock.Ruleset(abi, network=network, files=False)
    try:
        if network and confine.connect_ports is not None:
            rs.allow_connect(confine.connect_ports)
    except BaseException:
        rs.close()
        raise
    return rs


def _file_ruleset(confine: Confinement, abi: int) -> landlock.Ruleset:
    rs = landlock.Ruleset(abi, network=confine.connect_ports is not None)
    try:
        _add_read_rules(rs, confine.deny_read)
        for path in confine.readable if confine.deny_read else ():
            rs.allow_path(path, landlock.READ_RIGHTS)
        for dev in DEVICES_RW:
            rs.allow_path(dev, landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV | landlock.READ_DIR)
        write = rs.handled_fs & ~landlock.NEVER_GRANTED
        for path in confine.writable:
            rs.allow_path(path, write)
        if confine.connect_ports is not None:
            rs.allow_connect(confine.connect_ports)
    except BaseException:
        rs.close()
        raise
    return rs


def _add_read_rules(rs: landlock.Ruleset, deny_read: Iterable[Path]) -> None:
    """Read everywhere, or everywhere except beneath ``deny_read``.

    Landlock can only grant, so a denied path is carved out by granting read on every sibling of
    every directory on the way down to it. Listing directories stays allowed everywhere (READ_DIR on
    /), so names beneath a denied path are visible; their contents are not.
    """
    denied = [Path(os.path.realpath(p)) for p in deny_read]
    if not denied:
        rs.allow_path("/", landlock.READ_RIGHTS)
        return
    rs.allow_path("/", landlock.READ_DIR)

    def is_denied(p: Path) -> bool:
        return any(p == d or d in p.parents for d in denied)

    def leads_to_denied(p: Path) -> bool:
        return any(p in d.parents for d in denied)

    todo = [Path("/")]
    while todo:
        directory = todo.pop()
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            entry = directory / name
            if is_denied(entry):
                continue
            if leads_to_denied(entry):
                todo.append(entry)
                continue
            # A symlink is granted as its target: never one inside a denied path or above one
            # (a link to an ancestor would grant the whole subtree, the denied path included).
            target = Path(os.path.realpath(entry))
            if target != entry and (is_denied(target) or leads_to_denied(target)):
                continue
            rs.allow_path(entry, landlock.READ_RIGHTS)


def apply_to_self(confine: Confinement) -> None:
    """Confine the calling thread for good with Landlock's file rules (a forked test child uses it)."""
    abi = probe().landlock_abi
    if abi <= 0:
        raise OSError("Landlock is not available on this kernel")
    ruleset = _file_ruleset(confine, abi)
    try:
        landlock.restrict_self(ruleset.fd)
    finally:
        ruleset.close()
