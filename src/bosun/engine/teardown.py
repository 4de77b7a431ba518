"""The verbs that stop a run or take it apart: cancel, discard, cleanup; and the diff saved before a
worktree goes (nothing the worker wrote is lost)."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths, states
from bosun.core.errors import BadInput, BosunError
from bosun.core.fileio import write_bytes_atomic
from bosun.engine import locks
from bosun.engine.context import RunContext, leftover_diff
from bosun.engine.stops import RunStopped, clear_error, stopping

if TYPE_CHECKING:
    from bosun.store.db import Store
    from bosun.store.run import Run

CLEANABLE = (states.INTEGRATED, states.REPORTED, states.CANCELLED)


def cleanup(ctx: RunContext, run_id: str, force: bool = False) -> Run:
    """Remove the worktree and branch of an integrated or discarded run."""
    from bosun.isolation.workspace import close_worktree
    from bosun.isolation.worktree import remove_worktree

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run.state == states.CLEANED:
            return run
        if run.state not in CLEANABLE and not force:
            raise BadInput(
                f"run {run_id} is {run.state!r}: its work is not merged; cleanup would delete it",
                "integrate it, `bosun discard` it, or pass --force (the diff stays in the run directory)",
            )
        if not states.can_transition(run.state, states.CLEANED):
            # Forced cleanup of an unfinished run goes through cancelled, so the history says so.
            ctx.store.transition(run_id, run.state, states.CANCELLED, "forced cleanup")
            run.state = states.CANCELLED
        saved = preserve_diff(run)
        _restore_worktree_pointer(run)
        close_worktree(ctx.store, ctx.settings(Path(run.repo)), run, diff_saved=saved)  # to the pool, or removed
        from bosun.isolation.verify_commands import verify_worktree

        baseline_wt = verify_worktree(paths.run_dir(run_id) / "baseline")
        if baseline_wt.exists():  # a baseline that bosun was killed in the middle of (or a crash)
            remove_worktree(Path(run.repo), baseline_wt, None, delete_branch=False)
        shutil.rmtree(paths.run_dir(run_id) / "scratch", ignore_errors=True)
        shutil.rmtree(paths.run_dir(run_id) / "home", ignore_errors=True)
        for home in paths.run_dir(run_id).glob("verify-home*"):
            shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(paths.run_dir(run_id) / "view.git", ignore_errors=True)
        shutil.rmtree(paths.run_dir(run_id) / "baseline", ignore_errors=True)
        own_wt = verify_worktree(paths.run_dir(run_id) / "own-tests")
        if own_wt.exists():  # the own-tests run bosun was killed in the middle of
            remove_worktree(Path(run.repo), own_wt, None, delete_branch=False)
        shutil.rmtree(paths.run_dir(run_id) / "own-tests", ignore_errors=True)
        ctx.store.transition(run_id, run.state, states.CLEANED, "worktree and branch removed")
        return ctx.store.require_run(run_id)


def _restore_worktree_pointer(run: Run) -> None:
    """A worker may have replaced the worktree's ``.git`` file; git needs bosun's to remove it."""
    from bosun.isolation.change import restore_pointer
    from bosun.isolation.run_env import view_of

    if Path(run.worktree).is_dir() and (paths.run_dir(run.id) / "view.git").is_dir():
        restore_pointer(view_of(run))


def preserve_diff(run: Run) -> bool:
    """Save what the worker wrote before its worktree goes away (nothing is lost). True when the
    worktree's diff is known now (empty, or saved to ``final.patch``)."""
    wt = Path(run.worktree)
    if not wt.exists():
        return False
    try:
        diff = leftover_diff(run)
    except BosunError:
        return False  # a worktree bosun cannot read (a refused change): there is no diff to save, only the record
    if diff:
        write_bytes_atomic(paths.run_dir(run.id) / "final.patch", diff)
    return True


CANCEL_WAIT_S = 10.0  # how long `bosun cancel` waits for the owner of a working run to stop its worker


KILL_WAIT_S = 3.0  # how long a worker group gets after SIGTERM before SIGKILL, when no bosun owns it


def cancelled_error(run_id: str) -> dict[str, str]:
    """The ``error`` of a cancelled run (a cancelled run carries one: it did not finish)."""
    return {
        "code": "CANCELLED",
        "message": "the run was cancelled",
        "hint": f"`bosun discard {run_id}` removes its worktree and branch (its diff stays in the run directory)",
    }


def request_cancel(store: Store, run_id: str, requested: bool = True) -> None:
    """Ask the process driving a working run to stop it (or, at the start of work, clear an old ask).
    This module is the one writer of ``cancel_requested``; the worker loop polls it."""
    store.merge_data(run_id, cancel_requested=requested)


def cancel(ctx: RunContext, run_id: str) -> Run:
    """Stop a running worker (its whole process group) and mark the run cancelled.

    Returns once the worker is gone. When the bosun process that owns a working run has not stopped
    its worker within ``CANCEL_WAIT_S``, raises ``Busy`` (CANCEL_PENDING): the request stands, and
    `bosun show` confirms the cancellation when it lands."""
    run = ctx.store.require_run(run_id)
    if run.state == states.WORKING:
        request_cancel(ctx.store, run_id)
        pid = run.data.worker_pid
        owner = locks.read_owner(run_id)
        _signal_group(pid, signal.SIGTERM)
        # The bosun process driving the worker records the cancellation itself; if it is dead we do.
        if not locks.owner_alive(owner):
            _reap_group(pid)
            locks.forget_worker(ctx.store, run_id)
            with stopping(ctx, run):
                raise RunStopped(states.CANCELLED, BosunError(**cancelled_error(run_id)),
                                 "cancelled (no live bosun process)", raises=False)
            return ctx.store.require_run(run_id)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while time.monotonic() < deadline and ctx.store.require_run(run_id).state == states.WORKING:
            time.sleep(0.05)
        run = ctx.store.require_run(run_id)
        if run.state == states.WORKING:
            from bosun.core.errors import Busy

            raise Busy(
                f"cancel of {run_id} requested; its worker is still stopping",
                f"`bosun show {run_id}` confirms when it is cancelled",
                code="CANCEL_PENDING",
            )
        return run
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        with stopping(ctx, run):
            raise RunStopped(states.CANCELLED, BosunError(**cancelled_error(run_id)), "cancelled", raises=False)
        return ctx.store.require_run(run_id)


def _signal_group(pid: Any, sig: int) -> bool:
    """Signal a worker's process group; False when it is gone."""
    if not pid:
        return False
    try:
        os.killpg(int(pid), sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _reap_group(pid: Any) -> None:
    """Wait for a signalled worker group to exit; SIGKILL it when it takes longer than KILL_WAIT_S."""
    deadline = time.monotonic() + KILL_WAIT_S
    while _signal_group(pid, 0):
        if time.monotonic() > deadline:
            _signal_group(pid, signal.SIGKILL)
            return
        time.sleep(0.05)


def discard(ctx: RunContext, run_id: str) -> Run:
    run = ctx.store.require_run(run_id)
    if run.state in (states.INTEGRATED, states.REPORTED):
        raise BadInput(f"run {run_id} is already integrated; nothing to discard", "use `bosun cleanup`")
    if run.state == states.WORKING:
        cancel(ctx, run_id)  # the process working it records the cancellation, then lets go of it
    with locks.run_lock(run_id):  # held from cancelled to cleaned: the run does not rest in between
        if ctx.store.require_run(run_id).state not in (states.CANCELLED, states.CLEANED):
            cancel(ctx, run_id)
        cleanup(ctx, run_id, force=True)
        clear_error(ctx.store, run_id)  # discarded on purpose: nothing is wrong with the run now
    return ctx.store.require_run(run_id)


def kill_orphan_worker(run: Run) -> None:
    pid = run.data.worker_pid
    if pid:
        try:
            os.killpg(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
