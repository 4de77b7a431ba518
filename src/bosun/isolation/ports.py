"""Ports for a run's dev servers and tests: a block per run that no other live run holds.

A run asks for ``[worktree] ports`` ports; it gets the first block of ``port_range`` that no live run
has leased (the lease is a row in the store, taken in one ``BEGIN IMMEDIATE`` transaction) and that
nothing on the host is listening on. The block is the run's until the run ends (integrated, reported,
cancelled, cleaned): then the next allocation takes it back. The worker and the verify commands see
``BOSUN_PORT`` (the first port) and ``BOSUN_PORT_RANGE`` ("first-last").
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from bosun.core.errors import Busy
from bosun.store.db import Store


@dataclass(frozen=True)
class PortBlock:
    first: int
    size: int

    @property
    def last(self) -> int:
        return self.first + self.size - 1

    def env(self) -> dict[str, str]:
        return {"BOSUN_PORT": str(self.first), "BOSUN_PORT_RANGE": f"{self.first}-{self.last}"}

    def to_dict(self) -> dict[str, int]:
        return {"first": self.first, "size": self.size}


def _free_on_host(first: int, size: int) -> bool:
    """Nothing listens on any port of the block (on 127.0.0.1, where dev servers bind)."""
    for port in range(first, first + size):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def allocate(store: Store, run_id: str, size: int, port_range: tuple[int, int]) -> PortBlock:
    from bosun.store.worktrees import lease_ports

    lo, hi = port_range
    first = lease_ports(store, run_id, size, lo, hi, lambda f: _free_on_host(f, size))
    if first is None:
        raise Busy(
            f"no block of {size} free ports left in {lo}-{hi}",
            "finish or clean up runs (`bosun gc`), or widen [worktree] port_range",
            code="NO_FREE_PORTS",
        )
    return PortBlock(first, size)


def release(store: Store, run_id: str) -> None:
    from bosun.store.worktrees import release_ports

    release_ports(store, run_id)


def block_of(raw: object) -> PortBlock | None:
    """The block recorded in a run's data (``ports``), if it has one."""
    if isinstance(raw, dict) and "first" in raw and "size" in raw:
        return PortBlock(int(raw["first"]), int(raw["size"]))
    return None
