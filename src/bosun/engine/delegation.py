"""A delegation: the phases of :mod:`bosun.engine.phases` in one go (the cross-review's rounds too,
when the task asks for one), and the landing of a run whose verdict is landable.

The task is parsed once (the caller's) and each repository's config read once, for the whole loop;
a run whose verdict needs review stays verified and waits for a person (engine/verdict.py). The MCP
server's background driver runs a prepared run through the same :func:`drive`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import states
from bosun.core.contract import Mode, TaskContract
from bosun.core.errors import BosunError
from bosun.engine import locks, phases
from bosun.engine.context import RunContext
from bosun.engine.lifecycle import approve, integrate, report, workable
from bosun.engine.stops import stopping

if TYPE_CHECKING:
    from bosun.engine.verdict import Verdict
    from bosun.store.run import Run


def delegate(
    ctx: RunContext,
    task: TaskContract,
    repo_path: Path,
    profile_name: str | None = None,
    auto_approve: bool = False,
    wait: bool = False,
    on_event: Any = None,
    task_source: str | None = None,
    on_prepared: Any = None,
    wait_limit_s: float | None = None,
) -> Run:
    """prepare, then :func:`drive`: attempt + verify + verdict; with auto_approve a landable run is also
    approved, integrated and reported. ``wait`` queues for a slot at the cap (at most ``wait_limit_s``)."""
    from bosun.core.quick_exit import skip_final_collection

    skip_final_collection()  # the process that delegates exits without collecting what it loaded
    ctx = ctx.pinned()
    run = phases.prepare(ctx, task, repo_path, profile_name, wait=wait, task_source=task_source,
                         wait_limit_s=wait_limit_s)
    if on_prepared is not None:
        on_prepared(run.id)
    return drive(ctx, run, task, auto_approve, on_event)


def drive(ctx: RunContext, run: Run, task: TaskContract, auto_approve: bool, on_event: Any = None) -> Run:
    """A prepared run through the phases, under its lock, in one process: attempt, verify and the
    verdict; land it when ``auto_approve`` and the verdict is landable; the receipt is written and the
    parent notified whatever happened."""
    from bosun.engine.baseline import settle, stop_running
    from bosun.engine.notify import notify_run

    try:
        with locks.run_lock(run.id):
            workable(ctx.store.reload(run))  # not moved by another process since it was read
            try:
                judged = _attempt_verify_judge(ctx, run, task, on_event)
            except BaseException:
                stop_running(run.id)  # nothing of the baseline outlives a delegation that failed
                raise
            settle(run.id)  # a baseline that verification did not need (a refused change) is still recorded
            if auto_approve and task.mode == Mode.code and judged is not None and judged.landable:
                # Only a landable verdict lands without a person: one that needs review waits for them.
                try:
                    approve(ctx, run.id, task=task)
                    integrate(ctx, run.id, task=task)
                except BosunError:
                    _write_report(ctx, run.id)  # the receipt says why it did not land
                    raise
                return report(ctx, run.id)
            _write_report(ctx, run.id)
            return ctx.store.require_run(run.id)
    finally:
        notify_run(ctx, run.id)


def _attempt_verify_judge(ctx: RunContext, run: Run, task: TaskContract, on_event: Any) -> Verdict | None:
    """The phases after prepare, with the one handler of a stop: a failed worker's error reaches the
    caller once the receipt is written; a cancelled or rejected run is judged as it stands."""
    from bosun.engine import repair

    try:
        with stopping(ctx, run):
            # The baseline goes on while the change is verified: a fast worker does not wait for it.
            phases.attempt(ctx, run, task, on_event=on_event, defer_baseline=True, warm_up=True)
        if run.state == states.WORKED:
            # Refused for the work itself: repair rounds, then the ladder's next rung (engine/repair.py).
            repair.verify_repair_review(ctx, run, task, on_event)
    except BosunError:
        _write_report(ctx, run.id)
        raise
    return phases.judge(run)


def _write_report(ctx: RunContext, run_id: str) -> None:
    from bosun.engine.run_report import write_report

    write_report(ctx, ctx.store.require_run(run_id))
