"""Per-run locks and the global concurrency cap.

A run lock is a file holding the owner's pid and kernel start time. It is taken with O_EXCL and
reclaimed only when its owner is provably dead (no such pid, or the pid was reused by a process with
another start time), so two processes never advance one run, and a crashed bosun never wedges one.
Re-entrant within one process: ``delegate`` takes it once and calls prepare/work/verify under it.

The same proof of death frees a slot of the cap: an active run whose lock names a dead process (or a
``working`` or ``interrupted`` run that no live process holds: work only ever happens under the lock,
and interrupted says its process died) holds no slot,
so crashed runs never keep live ones waiting until someone runs ``recover``. A verb that waits (for a
slot, for another landing) says what it waits for through ``SAY_WAITING``, which the CLI points at
stderr.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.errors import Busy
from bosun.core.fileio import FORMAT_VERSION, write_text_atomic
from bosun.core.paths import check_run_id, locks_dir
from bosun.core.states import INTERRUPTED, WORKING
from bosun.proc import pid_alive, process_start_time

if TYPE_CHECKING:
    from bosun.store.db import Store

_held: dict[str, int] = {}  # run id -> re-entrancy depth in this process

# Told, in one line, what a verb waits for whenever that changes (a run slot, another landing): the CLI
# sets it to write on stderr; unset (a plan's threads, the MCP server), waits are silent.
SAY_WAITING: ContextVar[Callable[[str], None] | None] = ContextVar("SAY_WAITING", default=None)


def say_waiting(text: str) -> None:
    say = SAY_WAITING.get()
    if say is not None:
        say(text)


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


def holds_slot(run_id: str, state: str) -> bool:
    """Whether an active run counts against the cap: not when its lock names a dead process, nor when
    it is ``working`` or ``interrupted`` with no live process holding it (the process that worked it
    is gone). A prepared or worked run nobody holds waits for its next verb, and keeps its slot."""
    owner = read_owner(run_id)
    if owner is not None:
        return owner_alive(owner)
    return state not in (WORKING, INTERRUPTED)


def slot_holders(runs: list[tuple[str, str]]) -> list[str]:
    """The ids, among active ``(id, state)`` runs, of those that hold a slot (:func:`holds_slot`)."""
    return [run_id for run_id, state in runs if holds_slot(run_id, state)]


@contextmanager
def concurrency_slot(
    holders: Callable[[], list[str]], cap: int, wait: bool, poll_s: float = 0.5, max_wait_s: float | None = None
) -> Iterator[None]:
    """Hold the global cap lock while the caller registers a new active run.

    ``holders()`` names the runs that hold a slot. Raises Busy when ``cap`` of them do, unless ``wait``:
    then polls until a slot frees, saying what it waits for, and raises Busy after ``max_wait_s``.
    """
    started = time.monotonic()
    said: list[str] | None = None
    while True:
        with _flock(locks_dir() / ".cap.lock"):
            held = holders()
            if len(held) < cap:
                yield
                return
        waited = time.monotonic() - started
        if not wait or (max_wait_s is not None and waited >= max_wait_s):
            raise _cap_reached(held, cap, waited if wait else None)
        if sorted(held) != said:
            said = sorted(held)
            limit = f", for at most {max_wait_s:g} s" if max_wait_s is not None else ""
            say_waiting(f"waiting for a run slot{limit}: {_named(held)} all {cap} (max_concurrent_runs)")
        time.sleep(poll_s if max_wait_s is None else max(0.0, min(poll_s, max_wait_s - waited)))


def _named(runs: list[str]) -> str:
    """``runs a, b hold`` / ``run a holds``: who holds the slots, as the subject of a sentence."""
    shown = ", ".join(sorted(runs)[:4]) + (f" and {len(runs) - 4} more" if len(runs) > 4 else "")
    return f"runs {shown} hold" if len(runs) != 1 else f"run {shown} holds"


def _cap_reached(held: list[str], cap: int, waited: float | None) -> Busy:
    if waited is None:
        return Busy(
            f"{len(held)} runs are active, the cap is max_concurrent_runs = {cap}",
            "pass --wait to queue, finish or cancel a run (`bosun list --state working`), "
            "or raise max_concurrent_runs (1..32)",
        )
    return Busy(
        f"waited {waited:.0f} s for a run slot and none freed: {_named(held)} all {cap} (max_concurrent_runs)",
        "wait longer (--wait-limit), finish or cancel one of those runs, or raise max_concurrent_runs (1..32)",
        code="WAIT_LIMIT",
    )


# The worker's process group, next to the lock's owner: `bosun cancel` signals it and recovery after a
# crash kills it. This module is the one writer of ``worker_pid``.
def record_worker(store: Store, run_id: str, pid: int) -> None:
    store.merge_data(run_id, worker_pid=pid)


def forget_worker(store: Store, run_id: str) -> None:
    """The group is gone: a pid kept past it could name someone else's process later."""
    store.merge_data(run_id, worker_pid=None)
