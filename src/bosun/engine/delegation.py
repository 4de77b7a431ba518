"""A delegation: prepare, work and verify a task in one go, and land it when its verdict is landable.

The task is parsed once (the caller's) and each repository's config read once, for the whole loop;
a run whose verdict needs review stays verified and waits for a person (engine/verdict.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import states
from bosun.core.contract import Mode, TaskContract
from bosun.core.errors import BosunError
from bosun.engine import locks
from bosun.engine.context import RunContext
from bosun.engine.lifecycle import approve, integrate, prepare, report, verify, work

if TYPE_CHECKING:
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
) -> Run:
    """prepare + work + verify; with auto_approve also approve + integrate + report when all green.

    The task is parsed once (the caller's) and each repository's config read once, for the whole loop."""
    from bosun.core.quick_exit import skip_final_collection

    skip_final_collection()  # the process that delegates exits without collecting what it loaded
    ctx = ctx.pinned()
    run = prepare(ctx, task, repo_path, profile_name, wait=wait, task_source=task_source)
    run_id = run.id
    if on_prepared is not None:
        on_prepared(run_id)
    try:
        return _delegate_loop(ctx, run_id, task, auto_approve, on_event)
    finally:
        from bosun.engine.notify import notify_run

        notify_run(ctx, run_id)


def _delegate_loop(ctx: RunContext, run_id: str, task: TaskContract, auto_approve: bool, on_event: Any) -> Run:
    from bosun.engine.baseline import settle, stop_running

    with locks.run_lock(run_id):
        try:
            run = _work_verify_land(ctx, run_id, task, auto_approve, on_event)
        except BaseException:
            stop_running(run_id)  # nothing of the baseline outlives a delegation that failed
            raise
        settle(run_id)  # a baseline that verification did not need (a refused change) is still recorded
        return run


def _work_verify_land(ctx: RunContext, run_id: str, task: TaskContract, auto_approve: bool, on_event: Any) -> Run:
    try:
        # The baseline goes on while the change is verified: a fast worker does not wait for it.
        run = work(ctx, run_id, on_event=on_event, task=task, defer_baseline=True, warm_up=True)
    except BosunError:
        _safe_report(ctx, run_id)
        raise
    if run.state == states.CANCELLED:  # `bosun cancel` stopped the worker: nothing to verify
        _safe_report(ctx, run_id)
        return ctx.store.require_run(run_id)
    run = verify(ctx, run_id, task)
    if run.state == states.VERIFIED and auto_approve and task.mode == Mode.code and _landable(run):
        approve(ctx, run_id, task=task)
        integrate(ctx, run_id, task=task)
        return report(ctx, run_id)
    _safe_report(ctx, run_id)
    return ctx.store.require_run(run_id)


def _landable(run: Run) -> bool:
    """Only a landable verdict lands without a person: one that needs review waits for them."""
    from bosun.engine import verdict

    judged = verdict.of_run(run)
    return judged is not None and judged["outcome"] == verdict.LANDABLE


def _safe_report(ctx: RunContext, run_id: str) -> None:
    from bosun.engine.run_report import write_report

    write_report(ctx, ctx.store.require_run(run_id))
