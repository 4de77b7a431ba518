"""The port allocator: a block per run, never one port to two live runs, taken back when a run ends."""

from __future__ import annotations

import socket
import threading

import pytest

from bosun.core.errors import Busy
from bosun.isolation.ports import allocate, release
from bosun.store.db import open_store
from bosun.store.run import Run


def _run(store, run_id: str, state: str = "working") -> None:
    store.insert_run(Run.from_row({"id": run_id, "state": state, "title": "t", "repo": "/r", "source_branch": "main",
                                   "base": "b", "start_commit": "b", "branch": f"bosun/{run_id}", "worktree": f"/w/{run_id}"}))


def _free_range(size: int) -> tuple[int, int]:
    for lo in range(30000, 60000, 500):
        ok = True
        for port in range(lo, lo + size):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return lo, lo + size - 1
    raise AssertionError("no free range")


def test_live_runs_never_share_a_port_and_ended_runs_give_theirs_back():
    store = open_store()
    lo, hi = _free_range(12)
    for i in range(3):
        _run(store, f"run-{i}")
    blocks = [allocate(store, f"run-{i}", 4, (lo, hi)) for i in range(3)]
    ports = [p for b in blocks for p in range(b.first, b.last + 1)]
    assert len(ports) == len(set(ports)) == 12
    assert allocate(store, "run-1", 4, (lo, hi)) == blocks[1]  # asking again: the same block
    _run(store, "run-3")
    with pytest.raises(Busy) as exc:
        allocate(store, "run-3", 4, (lo, hi))
    assert exc.value.code == "NO_FREE_PORTS"
    store.transition("run-0", "working", "cancelled", "test")  # an ended run's block is taken back
    assert allocate(store, "run-3", 4, (lo, hi)) == blocks[0]
    release(store, "run-2")
    _run(store, "run-4")
    assert allocate(store, "run-4", 4, (lo, hi)) == blocks[2]


def test_a_port_something_listens_on_is_skipped():
    store = open_store()
    lo, hi = _free_range(6)
    _run(store, "run-a")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", lo + 1))
        busy.listen()
        block = allocate(store, "run-a", 3, (lo, hi))
    assert block.first == lo + 3


def test_concurrent_allocations_get_disjoint_blocks(tmp_path):
    lo, hi = _free_range(40)
    store = open_store()
    for i in range(10):
        _run(store, f"par-{i}")
    got: list[int] = []

    def one(i: int) -> None:
        got.append(allocate(open_store(), f"par-{i}", 4, (lo, hi)).first)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(lo, lo + 40, 4))
