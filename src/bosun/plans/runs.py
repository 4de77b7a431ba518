"""The engine's verbs as a plan applies them to its task runs, and the priority of its book-keeping threads."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import states
from bosun.core.errors import BosunError
from bosun.store.db import Store

if TYPE_CHECKING:
    from bosun.engine.context import RunContext


def discard_run(ctx: RunContext, run_id: str, report: bool = True) -> None:
    """Remove a run's worktree and branch, keeping its record (and its diff, as final.patch)."""
    from bosun.engine import lifecycle, teardown

    run = ctx.store.get_run(run_id)
    if run is None or run.state == states.CLEANED:
        return
    try:
        if run.state == states.WORKING:
            teardown.cancel(ctx, run_id)
        elif report and states.can_transition(run.state, states.REPORTED):
            lifecycle.report(ctx, run_id)
        teardown.cleanup(ctx, run_id, force=True)
    except BosunError as exc:
        # The run keeps its worktree (`plan abort` removes it); its event log says why.
        note_on_run(run_id, "could not discard this plan task's run", exc)


def note_on_run(run_id: str, what: str, exc: BosunError) -> None:
    """A warning in the run's event log: a step the plan tried on it failed, and the plan went on."""
    from bosun.core.paths import run_dir
    from bosun.engine import record

    try:
        record.EventLog(run_dir(run_id) / record.EVENTS).append(
            {"type": "warning", "message": f"{what}: {exc.code}: {exc.message}"})
    except (OSError, BosunError):
        pass  # the run directory is gone: there is no log left to warn in


def lower_priority() -> None:
    """Run this thread (and the git processes it starts) at a lower CPU priority: book-keeping that
    is off the critical path (reports, clean-ups, landing commits) yields to the tasks' own steps."""
    if not sys.platform.startswith("linux"):
        return  # elsewhere PRIO_PROCESS with a thread id would name a process, not this thread
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass  # not permitted here: the thread keeps the normal priority, which is only slower


def finish_run(db_path: Path, overrides: Any, run_id: str) -> None:
    """Background: report a merged run and remove its worktree (its work is in the integration branch)."""
    from bosun.engine import lifecycle, teardown
    from bosun.engine.context import RunContext

    store = Store(db_path)
    try:
        ctx = RunContext(store, overrides)
        run = store.get_run(run_id)
        if run and run.state == states.INTEGRATED:
            lifecycle.report(ctx, run_id)
        teardown.cleanup(ctx, run_id)
    except BosunError as exc:
        # Its work is merged already; only its report or worktree removal is left undone.
        note_on_run(run_id, "could not report or clean up this merged run", exc)
    finally:
        store.close()
