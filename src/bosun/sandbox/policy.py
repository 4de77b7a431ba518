"""What a confined process may do (``Confinement``) and what this machine can enforce (``Support``).

Plain values, apart from the code that enforces them (``bosun.sandbox``, ``sandbox/bubblewrap.py``,
``sandbox/landlock.py``) and the words that report them (``sandbox/held.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Confinement:
    """What a confined process may do: write beneath ``writable`` only; read everything except
    beneath ``deny_read`` (``readable`` re-opens paths inside a denied one); connect over TCP only
    to ``connect_ports`` (None: any port). With namespaces only: ``private_network`` (a loopback
    of its own, nothing else reachable) and ``replace`` ((path, source): ``source`` shown read-only
    at ``path``)."""

    writable: tuple[Path, ...]
    deny_read: tuple[Path, ...] = ()
    connect_ports: tuple[int, ...] | None = None
    readable: tuple[Path, ...] = ()
    private_network: bool = False
    replace: tuple[tuple[Path, Path], ...] = ()


@dataclass(frozen=True)
class Support:
    """What this machine enforces."""

    landlock_abi: int
    containment: str  # "pid-namespace" | "subreaper" | "none"
    bwrap: str | None = None  # the bwrap program when namespaces work here
    userns_disabled: bool = False  # bwrap can forbid further user namespaces inside

    @property
    def namespaces(self) -> bool:
        return self.bwrap is not None

    @property
    def mechanism(self) -> str:
        if self.namespaces:
            return "namespaces"
        return "landlock" if self.landlock_abi > 0 else "none"

    @property
    def network(self) -> bool:
        """TCP connect rules (Landlock ABI 4)."""
        return self.landlock_abi >= 4

    @property
    def deny_read(self) -> bool:
        return self.namespaces or self.landlock_abi > 0

    def to_dict(self) -> dict[str, object]:
        return {
            "mechanism": self.mechanism,
            "abi": self.landlock_abi,
            "network": "tcp-connect-rules" if self.network else "not enforced",
            "containment": self.containment,
        }
