"""Kernel confinement for untrusted processes (workers and the commands that run their code).

``Confinement`` says what a process may write (and, optionally, what it may not read and which TCP
ports it may connect to). ``prepare`` turns it into a Landlock ruleset in the parent and returns the
function to run in the child between fork and exec; ``probe`` says what this kernel enforces.

Why ``preexec_fn`` and not a re-exec wrapper (``python -m ...``): the wrapper costs a Python start
(20-40 ms) per worker, over the 10 ms budget. Everything that allocates, opens paths or can fail in
an interesting way (the ruleset, every rule) is done in the parent; the child only makes two
syscalls through ctypes objects built beforehand (``prctl(PR_SET_NO_NEW_PRIVS)`` and
``landlock_restrict_self``), which take no locks another thread could hold at fork time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bosun.errors import BosunError
from bosun.sandbox import landlock as ll

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
    beneath ``deny_read``; connect over TCP only to ``connect_ports`` (None: any port)."""

    writable: tuple[Path, ...]
    deny_read: tuple[Path, ...] = ()
    connect_ports: tuple[int, ...] | None = None


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
        return ll.abi_version()
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
    """A ruleset built in the parent. ``preexec`` runs in the child; ``close`` in the parent after
    the child started (the child holds its own copy of the fd until exec closes it)."""

    ruleset: ll.Ruleset
    preexec: Callable[[], None]

    def close(self) -> None:
        self.ruleset.close()


def prepare(confine: Confinement, abi: int | None = None) -> Prepared:
    """Build the Landlock ruleset for ``confine``. Raises OSError when the kernel refuses it."""
    abi = probe().landlock_abi if abi is None else abi
    if abi <= 0:
        raise OSError("Landlock is not available on this kernel")
    rs = ll.Ruleset(abi, network=confine.connect_ports is not None)
    try:
        _add_read_rules(rs, confine.deny_read)
        for dev in DEVICES_RW:
            rs.allow_path(dev, ll.READ_FILE | ll.WRITE_FILE | ll.TRUNCATE | ll.IOCTL_DEV | ll.READ_DIR)
        write = rs.handled_fs & ~ll.NEVER_GRANTED
        for path in confine.writable:
            rs.allow_path(path, write)
        if confine.connect_ports is not None:
            rs.allow_connect(confine.connect_ports)
    except BaseException:
        rs.close()
        raise
    fd = rs.fd
    restrict = ll.restrict_self

    def preexec() -> None:
        restrict(fd)

    return Prepared(rs, preexec)


def _add_read_rules(rs: ll.Ruleset, deny_read: Iterable[Path]) -> None:
    """Read everywhere, or everywhere except beneath ``deny_read``.

    Landlock can only grant, so a denied path is carved out by granting read on every sibling of
    every directory on the way down to it. Listing directories stays allowed everywhere (READ_DIR on
    /), so names beneath a denied path are visible; their contents are not.
    """
    denied = [Path(os.path.realpath(p)) for p in deny_read]
    if not denied:
        rs.allow_path("/", ll.READ_RIGHTS)
        return
    rs.allow_path("/", ll.READ_DIR)

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
            rs.allow_path(entry, ll.READ_RIGHTS)


def apply_to_self(confine: Confinement) -> None:
    """Confine the calling process for good (tests and the benchmark use it in a forked child)."""
    prepared = prepare(confine)
    try:
        prepared.preexec()
    finally:
        prepared.close()
