"""The verbs that advance a run through its states: each is short wiring of the phases.

Each public function is one CLI verb. It takes the run lock, loads the run once, checks its state
against the transition table, and runs phases of :mod:`bosun.engine.phases` (prepare → attempt →
verify → verdict) on the run it holds; a phase that ends the run raises ``RunStopped``, handled once
per verb (``stops.stopping``). Failures the user must act on are raised as ``BosunError`` after
the run's state has been recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import states
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput, InvalidTransition
from bosun.engine import locks, phases
from bosun.engine.context import RunContext, load_task, read_run_change
from bosun.engine.stops import clear_error, stopping
from bosun.engine.teardown import cleanup, kill_orphan_worker

if TYPE_CHECKING:
    from bosun.store.run import Run

prepare = phases.prepare  # the first phase is a verb of its own (`bosun prepare`)

# ---------------------------------------------------------------------------------------------
# work


RESUMABLE_FROM = (states.PREPARED, states.VERIFIED, states.REJECTED, states.FAILED, states.BLOCKED, states.WORKED)


def work(
    ctx: RunContext,
    run_id: str,
    resume: str | None = None,
    profile_name: str | None = None,
    on_event: Any = None,
    task: TaskContract | None = None,
) -> Run:
    """The attempt phase: the worker (with fallbacks) in the run's worktree. Ends worked, failed,
    blocked or cancelled. ``task`` is the run's task when the caller holds it; else task.json is read."""
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        workable(run, resume)
        try:
            with stopping(ctx, run):
                phases.attempt(ctx, run, task or load_task(run_id), resume=resume, profile_name=profile_name,
                               on_event=on_event)
        finally:
            refresh_receipt(ctx, run_id)
        return ctx.store.require_run(run_id)


def workable(run: Run, resume: str | None = None) -> None:
    """Refuse unless the run's state lets a worker (or a revise turn) start."""
    if run.state not in RESUMABLE_FROM:
        raise InvalidTransition(
            f"run {run.id} is {run.state!r}; work needs a prepared run (or verified/rejected/failed to revise)",
            "`bosun show` the run",
        )
    if resume is not None and run.state == states.PREPARED:
        raise BadInput("--resume continues an earlier worker session; this run has none yet", "run `bosun work` first")


# ---------------------------------------------------------------------------------------------
# verify


def verify(ctx: RunContext, run_id: str, task: TaskContract | None = None) -> Run:
    """The verify phase again: re-run verification and all gates, then the cross-review when the task
    asks for one; ends verified or rejected."""
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run.state in (states.VERIFIED, states.REJECTED, states.APPROVED):
            ctx.store.move(run, states.WORKED, "re-verification requested")
        elif run.state != states.WORKED:
            raise InvalidTransition(
                f"run {run_id} is {run.state!r}; verification needs a worked run", "run `bosun work` first"
            )
        return _verify_held(ctx, run, task)


def verify_and_repair(ctx: RunContext, run_id: str) -> Run:
    """A worked run's verification with its repair rounds and escalation ladder, then its cross-review
    (engine/repair.py): what a delegation does after the worker's turn, for plans. ``bosun verify``
    stays one verification: a person who runs it is not spending on repair turns unasked."""
    from bosun.engine.repair import verify_repair_review

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run.state != states.WORKED:
            raise InvalidTransition(f"run {run_id} is {run.state!r}; verification needs a worked run",
                                    "run `bosun work` first")
        try:
            verify_repair_review(ctx, run, load_task(run.id))
        finally:
            refresh_receipt(ctx, run.id)  # the repair turns cost too
        return ctx.store.require_run(run.id)


def _verify_held(ctx: RunContext, run: Run, task: TaskContract | None = None) -> Run:
    task = task or load_task(run.id)
    try:
        with stopping(ctx, run):
            phases.review(ctx, run, task, phases.verify(ctx, run, task))  # a changed tree is reviewed again
    finally:
        refresh_receipt(ctx, run.id)  # a review's revise turns cost too
    return ctx.store.require_run(run.id)


def refresh_receipt(ctx: RunContext, run_id: str) -> None:
    """A receipt written before this verb (metrics.json, report.md) is written again: it counts every
    worker turn the run took, so its cost (and the saving after it) covers the turns just taken."""
    from bosun.core import paths
    from bosun.engine import record
    from bosun.engine.run_report import write_report

    if (paths.run_dir(run_id) / record.METRICS).exists():
        write_report(ctx, ctx.store.require_run(run_id))


# ---------------------------------------------------------------------------------------------
# approve


def approve(ctx: RunContext, run_id: str, review: dict[str, Any] | None = None, waivers: dict[str, str] | None = None,
            task: TaskContract | None = None, acknowledge: Any = None, by: str = "person") -> Run:
    """Approve a green, unchanged diff; a run that needs review only with its reasons acknowledged
    (:func:`bosun.engine.approval.approve`)."""
    from bosun.engine.approval import approve as approve_run

    return approve_run(ctx, run_id, review, waivers, task, acknowledge, by)


# ---------------------------------------------------------------------------------------------
# integrate / report / cleanup


def integrate(ctx: RunContext, run_id: str, reverify: bool | None = None, task: TaskContract | None = None) -> Run:
    from bosun.engine.integration import integrate_run

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        merged = run.merged_commit
        if merged:
            raise InvalidTransition(f"run {run_id} is already merged, as commit {merged[:12]}",
                                    f"nothing to do; `bosun show {run_id}` has its record")
        if run.state != states.APPROVED:
            raise InvalidTransition(f"run {run_id} is {run.state!r}; only an approved run can be integrated",
                                    not_approved_hint(run))
        from bosun.engine.approval import ensure_landable, ensure_may_land

        task = task or load_task(run_id)
        ensure_landable(run, task)  # read-only modes never land a change
        ensure_may_land(run)  # landable, or its review reasons acknowledged
        settings = ctx.settings(Path(run.repo))
        do_reverify = settings.reverify_on_integrate if reverify is None else reverify
        integrate_run(ctx, run, task, do_reverify)
        clear_error(ctx.store, run_id)
        return ctx.store.require_run(run_id)


def land(ctx: RunContext, run_id: str, reverify: bool | None = None, before_report: Any = None) -> Run:
    """``integrate``, then ``report`` (which cleans up), under one hold of the run lock: the run is
    never seen resting in ``integrated`` on its way to ``cleaned`` (``bosun watch``'s ``done``).
    ``before_report`` runs between the two (the parent's review ends there)."""
    with locks.run_lock(run_id):
        integrate(ctx, run_id, reverify=reverify)
        if before_report is not None:
            before_report()
        return report(ctx, run_id)
def not_approved_hint(run: Run) -> str:
    """What to do with a run integrate refused because nobody approved it: approve it only when its
    verdict lets it land; a refused or failed one is revised or thrown away."""
    from bosun.engine.verdict import NEEDS_REVIEW, of_run

    rid = run.id
    if run.state == states.VERIFIED:
        judged = of_run(run)
        if judged and judged["outcome"] == NEEDS_REVIEW:
            return f"read the reasons (`bosun show {rid}`), then `bosun approve {rid}`; integrate lands it after"
        return f"`bosun approve {rid}` first"
    if run.state == states.REJECTED:
        return (f"it was refused: `bosun show {rid}` says why; revise it with `bosun work {rid} --resume "
                f"\"what to fix\"`, or `bosun discard {rid}`")
    if run.state in (states.FAILED, states.BLOCKED):
        return f"its worker did not finish: `bosun show {rid}` says why; `bosun work {rid}` tries again, or discard it"
    if run.state == states.CANCELLED:
        return f"it was cancelled; `bosun discard {rid}` removes it"
    if run.state in (states.PREPARED, states.WORKING, states.WORKED, states.INTERRUPTED):
        return f"it is not verified yet: `bosun show {rid}` says what it waits for"
    return f"nothing to land: `bosun show {rid}` has its record"


def report(ctx: RunContext, run_id: str) -> Run:
    from bosun.engine.run_report import write_report

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        landed = run.state == states.INTEGRATED
        write_report(ctx, run)
        if states.can_transition(run.state, states.REPORTED):
            ctx.store.transition(run_id, run.state, states.REPORTED, "report written")
        if landed and ctx.settings(Path(run.repo)).cleanup_after_integrate:
            # The change is on the user's branch and the record is written: the worktree and the
            # bosun/<id> branch are clutter in their repo now. show/diff read the run directory.
            return cleanup(ctx, run_id)
        return ctx.store.require_run(run_id)


def recover(ctx: RunContext, run_id: str) -> Run:
    """After a crash: a run stuck in ``working`` goes to verification if the worker left a diff,
    back to ``prepared`` otherwise. Nothing the worker wrote is touched."""
    run = ctx.store.require_run(run_id)
    owner = locks.read_owner(run_id)
    if run.state == states.WORKING and locks.owner_alive(owner):
        raise BadInput(
            f"run {run_id} is still being worked by a live bosun process (pid {owner['pid']})",  # type: ignore[index]
            "wait for it, or `bosun cancel` it",
        )
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        kill_orphan_worker(run)
        _clear_what_the_dead_left(run)
        if run.state == states.WORKING:
            ctx.store.transition(run_id, states.WORKING, states.INTERRUPTED, "recover: the bosun process died during work")
            run.state = states.INTERRUPTED
        if run.state == states.INTERRUPTED:
            diff = read_run_change(run).diff
            if diff:
                ctx.store.move(run, states.WORKED, "recover: the worker left a diff")
                _retake_baseline(ctx, run)
                return _verify_held(ctx, run)
            ctx.store.transition(run_id, states.INTERRUPTED, states.PREPARED, "recover: no diff; ready to work again")
            return ctx.store.require_run(run_id)
        if run.state == states.WORKED:
            _retake_baseline(ctx, run)
            return _verify_held(ctx, run)
        raise BadInput(f"run {run_id} is {run.state!r}; nothing to recover", "`bosun show` the run")


def _clear_what_the_dead_left(run: Run) -> None:
    """What the dead process was using for its baseline and verification (checkouts registered in the
    user's repository, their HOMEs) is replaced by what recover runs now, or by a cached baseline that
    never touches it: it goes first."""
    import shutil

    from bosun.core.paths import run_dir
    from bosun.isolation.checkouts import registered_under, remove_checkout

    rdir = run_dir(run.id)
    if Path(run.repo).is_dir():
        for path in registered_under(run.repo, rdir):
            remove_checkout(run.repo, path)
    for left in [rdir / "baseline", *rdir.glob("verify-home*")]:
        shutil.rmtree(left, ignore_errors=True)


def _retake_baseline(ctx: RunContext, run: Run) -> None:
    """The process that died took the baseline with it: without one the change is not proven."""
    from bosun.engine.baseline import start_baseline

    start_baseline(run, load_task(run.id), ctx.settings(Path(run.repo)).baseline)  # verification settles it
