"""Per-run locks and the global concurrency cap.

A run lock is a file holding the owner's pid and kernel start time. It is taken with O_EXCL and
reclaimed only when its owner is provably dead (no such pid, or the pid was reused by a process with
another start time), so two processes never advance one run, and a crashed bosun never wedges one.
Re-entrant within one process: ``delegate`` takes it once and calls prepare/work/verify under it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.errors import Busy
from bosun.core.fileio import FORMAT_VERSION, write_text_atomic
from bosun.core.paths import check_run_id, locks_dir
from bosun.proc import pid_alive, process_start_time

if TYPE_CHECKING:
    from bosun.store.db import Store

_held: dict[str, int] = {}  # run id -> re-entrancy depth in this process


def _me() -> dict[str, Any]:
    pid = os.getpid()
    return {"format_version": FORMAT_VERSION, "pid": pid, "start": process_start_time(pid)}


def lock_path(run_id: str) -> Path:
    return locks_dir() / f"{check_run_id(run_id)}.lock"


def read_owner(run_id: str) -> dict[str, Any] | None:
    try:
        return json.loads(lock_path(run_id).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def owner_alive(owner: dict[str, Any] | None) -> bool:
    if not owner:
        return False
    return pid_alive(int(owner["pid"]), owner.get("start"))


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``, released when the block ends or the process dies."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


@contextmanager
def _reclaim_guard() -> Iterator[None]:
    with _flock(locks_dir() / ".reclaim.lock"):
        yield


def acquire(run_id: str) -> None:
    if _held.get(run_id):
        _held[run_id] += 1
        return
    path = lock_path(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    me = _me()
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        with _reclaim_guard():
            owner = read_owner(run_id)
            if owner_alive(owner):
                assert owner is not None
                raise Busy(
                    f"run {run_id} is being advanced by another bosun process (pid {owner['pid']})",
                    "wait for it to finish, or `bosun cancel` the run",
                ) from None
            # The owner is dead (crash, SIGKILL): take the lock over atomically.
            write_text_atomic(path, json.dumps(me))
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(me))
    _held[run_id] = 1


def release(run_id: str) -> None:
    depth = _held.get(run_id, 0)
    if depth > 1:
        _held[run_id] = depth - 1
        return
    _held.pop(run_id, None)
    owner = read_owner(run_id)
    if owner and owner.get("pid") == os.getpid():
        try:
            lock_path(run_id).unlink()
        except FileNotFoundError:
            pass  # already gone: released is released


@contextmanager
def run_lock(run_id: str) -> Iterator[None]:
    acquire(run_id)
    try:
        yield
    finally:
        release(run_id)


@contextmanager
def concurrency_slot(
    count_active: Callable[[], int], cap: int, wait: bool, poll_s: float = 0.5, max_wait_s: float | None = None
) -> Iterator[None]:
    """Hold the global cap lock while the caller registers a new active run.

    Raises Busy when ``cap`` runs are active, unless ``wait`` (then polls until a slot frees).
    """
    started = time.monotonic()
    while True:
        with _flock(locks_dir() / ".cap.lock"):
            active = count_active()
            if active < cap:
                yield
                return
        if not wait or (max_wait_s is not None and time.monotonic() - started > max_wait_s):
            raise Busy(
                f"{active} runs are active, the cap is max_concurrent_runs = {cap}",
                "pass --wait to queue, finish or cancel a run (`bosun list --state working`), "
                "or raise max_concurrent_runs (1..32)",
            )
        time.sleep(poll_s)


# The worker's process group, next to the lock's owner: `bosun cancel` signals it and recovery after a
# crash kills it. This module is the one writer of ``worker_pid``.
def record_worker(store: Store, run_id: str, pid: int) -> None:
    store.merge_data(run_id, worker_pid=pid)


def forget_worker(store: Store, run_id: str) -> None:
    """The group is gone: a pid kept past it could name someone else's process later."""
    store.merge_data(run_id, worker_pid=None)
