"""What the sandbox holds on this machine, property by property, in bosun's own words.

One sentence per property a worker is promised (what it may write, read, see, start, do as root,
and reach), each either what holds or "not enforced: why". ``bosun doctor`` prints them, every run's
``sandbox`` record keeps them, and ``sandbox = "required"`` refuses a worker when one it asks for is
"not enforced" (``missing``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bosun.sandbox.policy import Support

NOT = "not enforced"
PROPERTIES = ("writes", "reads", "process_view", "containment", "privilege", "network")


def held(support: Support, *, reads: str = "worktree", network: str = "provider-only",
         ports: Sequence[int] | None = None) -> dict[str, str]:
    """What holds for a worker under ``support`` with the settings ``reads`` and ``network``."""
    ns, ll = support.namespaces, support.landlock_abi > 0
    out = {"writes": _writes(ns, ll), "reads": _reads(ns, ll, reads),
           "process_view": "private: its own PID namespace and /proc" if ns else
           f"{NOT}: no user namespaces (or no bwrap) here, so it can list processes and read theirs",
           "containment": "everything it starts dies with it (PID namespace)" if ns else
           "every process it leaves is stopped and killed when its step ends (child subreaper)"
           if support.containment == "subreaper" else f"{NOT}: no subreaper here",
           "privilege": "none: a user namespace with every capability dropped, the rest of the disk read-only"
           if ns else f"{NOT}: without namespaces a worker keeps its user's privileges (chmod of its files; "
           "as root, chattr and mounts)",
           "network": _network(support, network, ports)}
    return out


def _writes(ns: bool, ll: bool) -> str:
    if ns:
        return "only its worktree, HOME and TMPDIR: everything else is mounted read-only"
    if ll:
        return "only its worktree, HOME and TMPDIR (Landlock)"
    return f"{NOT}: the kernel has no Landlock and bwrap cannot run here"


def _reads(ns: bool, ll: bool, reads: str) -> str:
    if reads == "all":
        return "everything (sandbox_reads = \"all\")"
    what = "bosun's state, your repository outside the worktree and your credential stores"
    if ns:
        return f"{what} hidden"
    if ll:
        return f"{what} unreadable (Landlock)"
    return f"{NOT}: the kernel has no Landlock and bwrap cannot run here"


def _network(support: Support, network: str, ports: Sequence[int] | None) -> str:
    if network == "any":
        return "any (network = \"any\")"
    if not support.network:
        return f"{NOT}: the kernel has no Landlock network rules (ABI 4)"
    if not ports:
        return "provider-only: TCP connects to its provider's port(s) and network_ports only"
    return f"provider-only: TCP connects to port(s) {', '.join(map(str, ports))} only"


def missing(found: dict[str, str]) -> list[str]:
    """The properties that do not hold, as ``name (why)``."""
    return [f"{name.replace('_', ' ')} ({found[name][len(NOT) + 2:]})" for name in PROPERTIES
            if found.get(name, "").startswith(NOT)]
