"""Kernel confinement for untrusted processes (workers and the commands that run their code).

``Confinement`` says what a process may write (and, optionally, what it may not read and which TCP
ports it may connect to). ``prepare`` turns it into a Landlock ruleset in the parent; ``spawn``
starts the child confined; ``probe`` says what this kernel enforces.

How the child gets confined: neither ``preexec_fn`` nor a re-exec wrapper. ``landlock_restrict_self``
and ``PR_SET_NO_NEW_PRIVS`` apply to the calling *thread* (Landlock ABI < 8 has no other mode, and
bosun asks for none), and a child inherits the credentials of the thread that forked it. So
``spawn`` restricts a short-lived thread of its own and calls ``subprocess.Popen`` from it: the
child starts already confined, through the ordinary vfork path, with no Python code between fork
and exec (``preexec_fn`` forces a full fork and runs Python in the child: about 6 ms more per start
and unsafe with threads; a ``python -m`` wrapper costs a Python start, 20-40 ms). The thread ends
right after the spawn, so nothing else in bosun ever runs confined.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, cast

from bosun.core.errors import BosunError
from bosun.sandbox import landlock

# Tests set this to "none" to simulate a kernel without Landlock: the `required` refusal path runs
# in a real `bosun` subprocess there, which a monkeypatch cannot reach. It can only take protection
# away, never claim more than the kernel has.
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
                         "enabled (`bosun doctor` shows what this machine enforces)")


@dataclass(frozen=True)
class Confinement:
    """What a confined process may do: write beneath ``writable`` only; read everything except
    beneath ``deny_read`` (``readable`` re-opens paths inside a denied one); connect over TCP only
    to ``connect_ports`` (None: any port)."""

    writable: tuple[Path, ...]
    deny_read: tuple[Path, ...] = ()
    connect_ports: tuple[int, ...] | None = None
    readable: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Support:
    """What this machine enforces."""

    landlock_abi: int
    containment: str  # "subreaper" | "none"

    @property
    def mechanism(self) -> str:
        return "landlock" if self.landlock_abi > 0 else "none"

    @property
    def network(self) -> bool:
        """TCP connect rules (Landlock ABI 4)."""
        return self.landlock_abi >= 4

    @property
    def deny_read(self) -> bool:
        return self.landlock_abi > 0

    def to_dict(self) -> dict[str, object]:
        return {
            "mechanism": self.mechanism,
            "abi": self.landlock_abi,
            "network": "tcp-connect-rules" if self.network else "not enforced",
            "containment": self.containment,
        }


@lru_cache(maxsize=1)
def _kernel_abi() -> int:
    try:
        return landlock.abi_version()
    except (OSError, AttributeError):
        return 0


def probe() -> Support:
    """What the running kernel can enforce (Landlock ABI, process containment)."""
    forced = os.environ.get(PROBE_ENV, "").strip().lower()
    abi = 0 if forced == "none" else _kernel_abi()
    from bosun.sandbox import reaper

    return Support(landlock_abi=abi, containment="subreaper" if reaper.supported() else "none")


@dataclass
class Prepared:
    """A ruleset built in the parent, ready for ``spawn``; ``close`` it once the child started."""

    ruleset: landlock.Ruleset

    def close(self) -> None:
        self.ruleset.close()


T = TypeVar("T")


def spawn(prepared: Prepared, start: Callable[[], T]) -> T:
    """Call ``start`` (which forks and execs, e.g. ``subprocess.Popen``) from a thread confined by
    ``prepared``, so the child and everything it starts are confined. Raises ``SandboxFailed`` when
    the kernel refuses the ruleset (the child never starts)."""
    box: dict[str, Any] = {}
    fd = prepared.ruleset.fd

    def confined() -> None:
        try:
            landlock.restrict_self(fd)
        except OSError as exc:
            box["refused"] = exc
            return
        try:
            box["value"] = start()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=confined, name="bosun-sandbox-spawn")
    thread.start()
    thread.join()
    if "refused" in box:
        raise SandboxFailed(f"the kernel refused the sandbox: {box['refused']}")
    if "error" in box:
        raise box["error"]
    return cast(T, box["value"])


def prepare(confine: Confinement, abi: int | None = None) -> Prepared:
    """Build the Landlock ruleset for ``confine``. Raises OSError when the kernel refuses it."""
    abi = probe().landlock_abi if abi is None else abi
    if abi <= 0:
        raise OSError("Landlock is not available on this kernel")
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
    return Prepared(rs)


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
    """Confine the calling thread for good (a forked test child uses it)."""
    prepared = prepare(confine)
    try:
        landlock.restrict_self(prepared.ruleset.fd)
    finally:
        prepared.close()
