"""The loop that advances a run through its states.

Each public function is one CLI verb. It takes the run lock, checks the current state against the
transition table (via ``Store.transition``), does its work, and records the outcome on disk and in
the store. Phase failures that the user must act on are raised as ``BosunError`` after the run's
state has been recorded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths, states
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput, BosunError, InvalidTransition, TimedOut
from bosun.core.fileio import write_bytes_atomic
from bosun.engine import locks, record
from bosun.engine.budget import check_before_dispatch
from bosun.engine.context import RunContext, load_task, new_run_id, read_run_change
from bosun.engine.stops import RunStopped, clear_error, recorded
from bosun.engine.teardown import cancelled_error, cleanup, kill_orphan_worker, request_cancel
from bosun.isolation import gitwatch
from bosun.isolation.lingering import boot_clock
from bosun.store.run import Run

if TYPE_CHECKING:
    from bosun.core.config import Settings

# ---------------------------------------------------------------------------------------------
# prepare


def prepare(
    ctx: RunContext,
    task: TaskContract,
    repo_path: Path,
    profile_name: str | None = None,
    wait: bool = False,
    plan_id: str | None = None,
    task_source: str | None = None,
    carry_uncommitted: bool = True,
    remote_cap: int | None = None,
) -> Run:
    """Validate everything, then create the run, its snapshot and its worktree.

    ``remote_cap`` bounds the active runs whose worker is on a remote pool (default
    ``max_concurrent_runs``); see :func:`active_cap`.

    ``carry_uncommitted=False`` starts the worktree from ``task.base`` exactly (plans do this: their
    tasks start from the integration branch, which already holds the user's snapshot).
    """
    from bosun.engine.preflight import check_task
    from bosun.engine.worktrees import open_worktree, set_up_run
    from bosun.isolation.change import create_view
    from bosun.isolation.git import current_branch, head_commit
    from bosun.isolation.snapshot import snapshot_commit, uncommitted_state

    # Everything that can be known to fail is checked before anything is created (exit 2, all problems).
    pf = check_task(task, repo_path, profile_name, ctx.store, overrides=ctx.settings_overrides)
    pf.raise_if_failed()
    assert pf.repo is not None and pf.base is not None and pf.settings is not None and pf.choice is not None
    repo, base, settings, choice = pf.repo, pf.base, pf.settings, pf.choice
    ctx.remember_settings(repo, settings)
    source_branch = current_branch(repo)
    check_before_dispatch(ctx.store, settings, task, str(repo), plan_id)
    # The pre-flight resolved the base moments ago; with the default base that is HEAD already.
    head = base if task.base == "HEAD" else head_commit(repo)

    if task.holdout and not _holdout_paths(repo, base, task.holdout):
        raise BadInput(f"holdout {task.holdout} matches no file at {task.base}",
                       "name files committed in the repository (globs as in scope and locked)")

    run_id = new_run_id()
    rdir = paths.run_dir(run_id)
    wt = paths.worktree_dir(run_id)
    branch = f"bosun/{run_id}"
    scratch = rdir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)

    # One scan of the user's tree serves both the snapshot decision and SOURCE_CHANGED later.
    uncommitted = uncommitted_state(repo)
    # The user's uncommitted work only makes sense on top of their HEAD.
    carry = carry_uncommitted and base == head and bool(uncommitted)
    snapshot = snapshot_commit(repo, base, scratch, known_dirty=True) if carry else None
    full_start = snapshot or base
    start, hidden = _strip_holdout(repo, full_start, task.holdout, scratch) if task.holdout else (full_start, [])

    run = Run.from_row({
        "id": run_id,
        "state": states.PREPARED,
        "title": task.title,
        "repo": str(repo),
        "source_branch": source_branch,
        "base": base,
        "start_commit": start,
        "branch": branch,
        "worktree": str(wt),
        "profile": choice.profile.name,
        "profile_reason": choice.reason,
        "plan_id": plan_id,
        "data": {
            "snapshot": bool(snapshot),
            "mode": task.mode.value,
            "task_source": task_source,
            "source_head_at_start": head,
            "uncommitted_at_start": uncommitted,
            "routing": choice.to_dict(),
            **({"holdout": {"paths": hidden, "full_start": full_start}} if hidden else {}),
            "caller": os.environ.get("PARENT_AGENT") or None,
            **({"remote": True} if choice.profile.adapter == "remote" else {}),
        },
    })
    record.write_doc(run_id, record.TASK, {"run_id": run_id, "task": task.model_dump(mode="json")})
    remote, cap = active_cap(settings, choice.profile.adapter, remote_cap)
    with locks.concurrency_slot(lambda: ctx.store.count_active(remote=remote), cap, wait):
        ctx.store.insert_run(run, prompt=task.prompt)
    with recorded(ctx, run_id, states.PREPARED):
        try:
            wt = open_worktree(ctx.store, settings, task, repo, run_id, branch, start, wt)
            view = create_view(rdir, wt, repo, start)
            set_up_run(ctx.store, settings, task, repo, run_id, wt, start, view)
        except BosunError as exc:
            reason = f"worktree creation failed: {exc.message}"
            raise RunStopped(states.FAILED, BosunError(reason, "", code="FAILED"), reason, cause=exc) from exc
    ctx.store.merge_data(run_id, view_objects=str(view.objects))
    return ctx.store.require_run(run_id)


def active_cap(settings: Settings, adapter: str, remote_cap: int | None = None) -> tuple[bool, int]:
    """Which active runs a new run of ``adapter`` counts against, and their cap.

    ``max_concurrent_runs`` exists for this machine's cores and its providers' rate limits. A remote
    run's worker uses neither: it waits in the pool's queue and runs on an agent, so remote runs are
    counted apart, against ``remote_cap`` (a plan passes its pool's live capacity), and do not take
    local runs' slots.
    """
    remote = adapter == "remote"
    return remote, (remote_cap or settings.max_concurrent_runs) if remote else settings.max_concurrent_runs


# Holdout files need the gates' notion of a test path. Imported only for a task that has them: the gates
# package is the largest import of a delegation, and until the worker stops nothing else needs it.
def _holdout_paths(repo: Path, base: str, holdout: list[str]) -> list[str]:
    from bosun.engine.heldout import holdout_paths

    return holdout_paths(repo, base, holdout)


def _strip_holdout(repo: Path, start: str, holdout: list[str], scratch: Path) -> tuple[str, list[str]]:
    from bosun.engine.heldout import strip_holdout

    return strip_holdout(repo, start, holdout, scratch)


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
    defer_baseline: bool = False,
    warm_up: bool = False,
) -> Run:
    """Run the worker (with fallbacks) in the run's worktree. Ends worked, failed, blocked or cancelled.

    ``task`` is the run's task when the caller holds it already (delegate); else task.json is read.
    ``defer_baseline``: a caller that verifies next in this process (delegate) does not wait for the
    baseline here; verification overlaps it and the proof waits for it (``baseline.settle``).
    ``warm_up``: once the worker process runs, a background thread imports what verification needs and
    loads the receipt's tokenizer. Done earlier (the tokenizer holds the
    interpreter lock for about 50 ms) it delayed bosun's own steps before the worker starts; while the
    worker runs, bosun has nothing else to do."""
    from bosun.engine.attempts import run_attempts
    from bosun.engine.baseline import start_baseline
    from bosun.engine.warm_up import warm_up_after_worker

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run.state not in RESUMABLE_FROM:
            raise InvalidTransition(
                f"run {run_id} is {run.state!r}; work needs a prepared run (or verified/rejected/failed to revise)",
                "`bosun show` the run",
            )
        if resume is not None and run.state == states.PREPARED:
            raise BadInput("--resume continues an earlier worker session; this run has none yet", "run `bosun work` first")
        repo = Path(run.repo)
        settings = ctx.settings(repo)
        task = task or load_task(run_id)
        check_before_dispatch(ctx.store, settings, task, run.repo, run.plan_id, run_id)
        ctx.store.transition(run_id, run.state, states.WORKING, "revise: " + resume[:200] if resume else "worker started")
        ctx.store.merge_data(run_id, bosun_pid=os.getpid())
        _starts_afresh(ctx, run_id)
        watch = gitwatch.take(repo)
        began = boot_clock()
        baseline = start_baseline(run, task, settings.baseline)
        try:
            outcome = run_attempts(ctx, settings, run, task, resume=resume, profile_name=profile_name, on_event=on_event,
                                   on_worker_start=warm_up_after_worker if warm_up else None)
            ctx.store.merge_data(run_id, worker_window=[began, boot_clock()])
            _check_user_git(ctx, run_id, watch)
            if baseline is not None and outcome.result.status == "ok":
                if not defer_baseline:
                    baseline.wait()
            elif baseline is not None:
                # Only a change that will be verified needs the proof: a failed or cancelled worker's
                # baseline is stopped (cancel stays prompt, and nothing of it outlives the run).
                baseline.stop()
        except BaseException as exc:
            # bosun itself is going down (KeyboardInterrupt, a bug): leave the run recoverable.
            if baseline is not None:
                baseline.stop()
            current = ctx.store.require_run(run_id).state
            if current == states.WORKING:
                reason = "interrupted: " + (type(exc).__name__)
                ctx.store.transition(run_id, states.WORKING, states.INTERRUPTED, reason)
            raise
        with recorded(ctx, run_id, states.WORKING):
            return _finish_work(ctx, run_id, outcome)
        return ctx.store.require_run(run_id)  # cancelled


def _starts_afresh(ctx: RunContext, run_id: str) -> None:
    """Work starts again: no error stands, no old cancel request, no acknowledgment of an old change
    (each field is written by its one owner)."""
    from bosun.engine.approval import forget_acknowledgment

    clear_error(ctx.store, run_id)
    request_cancel(ctx.store, run_id, requested=False)
    forget_acknowledgment(ctx.store, run_id)


def _check_user_git(ctx: RunContext, run_id: str, watch: tuple[Path, gitwatch.Snapshot]) -> None:
    """Compare the user's git dir with what it was before the worker; put back what changed.

    The run is marked: verification turns the finding into the USER_GIT_TAMPERED gate."""
    common, before = watch
    changed = gitwatch.changes(common, before)
    if not changed:
        return
    failed = gitwatch.restore(common, before, changed)
    restored = [c for c in changed if c not in failed]
    message = "the worker changed the repository's git dir: " + ", ".join(changed[:8])
    if restored:
        message += "; bosun restored " + ", ".join(restored[:8])
    if failed:
        message += "; could NOT restore " + ", ".join(failed[:8]) + " (check them by hand)"
    from bosun.workers.base import ev_message

    record.EventLog(paths.run_dir(run_id) / record.EVENTS).append(ev_message(message, role="system"))
    ctx.store.merge_data(run_id, user_git_tampered={"changed": changed, "restored": restored, "failed": failed})


def _finish_work(ctx: RunContext, run_id: str, outcome: Any) -> Run:
    res = outcome.result
    data: dict[str, Any] = {"worker": res.to_dict(), "usage": outcome.usage.to_dict(), "bosun_pid": None}
    if res.session_id:
        ctx.store.update_run(run_id, session_id=res.session_id, profile=outcome.profile)
    else:
        ctx.store.update_run(run_id, profile=outcome.profile)
    if res.status == "ok":
        ctx.store.merge_data(run_id, **data)
        ctx.store.transition(run_id, states.WORKING, states.WORKED, f"worker finished ({outcome.profile})")
        return ctx.store.require_run(run_id)
    if res.status == "cancelled":
        raise RunStopped(states.CANCELLED, BosunError(**cancelled_error(run_id)), "cancelled during work",
                         raises=False, data=data)
    # The failure is made once, as the exception the caller gets, and recorded as that exception says.
    message = res.error_message or f"worker {res.status}"
    code = (res.error_class.value if res.error_class else res.status).upper()
    failure = (TimedOut(message, outcome.hint or "raise timeout_s in the task or profile", code="TIMEOUT")
               if res.status == "timeout" else BosunError(message, outcome.hint, code=code))
    raise RunStopped(states.BLOCKED if outcome.blocked else states.FAILED, failure, message, data=data)


# ---------------------------------------------------------------------------------------------
# verify


def verify(ctx: RunContext, run_id: str, task: TaskContract | None = None) -> Run:
    """Re-run verification and all gates; ends verified or rejected."""
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run.state in (states.VERIFIED, states.REJECTED, states.APPROVED):
            ctx.store.move(run, states.WORKED, "re-verification requested")
        elif run.state != states.WORKED:
            raise InvalidTransition(
                f"run {run_id} is {run.state!r}; verification needs a worked run", "run `bosun work` first"
            )
        return _verify_worked(ctx, run, task)


def _verify_worked(ctx: RunContext, run: Run, task: TaskContract | None = None) -> Run:
    """The verify phase (:mod:`bosun.engine.checking`) on the worked run the verb holds, recorded: the
    run ends verified when every gate is green, else rejected; :mod:`bosun.engine.verdict` reads the
    record."""
    from bosun.engine.approval import forget_acknowledgment
    from bosun.engine.checking import check_worked

    run_id = run.id
    checked = check_worked(ctx, run, task or load_task(run_id))
    write_bytes_atomic(paths.run_dir(run_id) / record.DIFF, checked.diff)
    record.write_doc(run_id, record.GATES, {"gates": [g.to_dict() for g in checked.gates],
                                           "diff_sha256": checked.diff_sha256, "tree": checked.tree})
    ctx.store.set_columns(run, diff_sha256=checked.diff_sha256, files_changed=checked.files_changed)
    ctx.store.write(run, verification_passed=checked.verification["passed"], gates_ok=not checked.failed,
                         verified_tree=checked.tree)
    forget_acknowledgment(ctx.store, run_id)  # given for the change before this one
    with recorded(ctx, run_id, states.WORKED):
        if checked.failed:
            raise RunStopped(states.REJECTED, BosunError(
                "rejected by " + ", ".join(checked.failed),
                f"`bosun show {run_id}` explains each gate; revise with `bosun work {run_id} --resume "
                "\"what to fix\"`; if a verify command itself is wrong, fix the task and delegate it again",
                code="GATES_FAILED"), "gates failed: " + ", ".join(checked.failed), raises=False)
        clear_error(ctx.store, run_id)
        ctx.store.transition(run_id, states.WORKED, states.VERIFIED, "verification passed, all gates green")
    return ctx.store.require_run(run_id)


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
            raise InvalidTransition(
                f"run {run_id} is {run.state!r}; only an approved run can be integrated",
                "`bosun approve` it first",
            )
        from bosun.engine.approval import ensure_landable, ensure_may_land

        task = task or load_task(run_id)
        ensure_landable(run, task)  # read-only modes never land a change
        ensure_may_land(run)  # landable, or its review reasons acknowledged
        settings = ctx.settings(Path(run.repo))
        do_reverify = settings.reverify_on_integrate if reverify is None else reverify
        integrate_run(ctx, run, task, do_reverify)
        clear_error(ctx.store, run_id)
        return ctx.store.require_run(run_id)


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
        if run.state == states.WORKING:
            ctx.store.transition(run_id, states.WORKING, states.INTERRUPTED, "recover: the bosun process died during work")
            run.state = states.INTERRUPTED
        if run.state == states.INTERRUPTED:
            diff = read_run_change(run).diff
            if diff:
                ctx.store.move(run, states.WORKED, "recover: the worker left a diff")
                _retake_baseline(ctx, run)
                return _verify_worked(ctx, run)
            ctx.store.transition(run_id, states.INTERRUPTED, states.PREPARED, "recover: no diff; ready to work again")
            return ctx.store.require_run(run_id)
        if run.state == states.WORKED:
            _retake_baseline(ctx, run)
            return _verify_worked(ctx, run)
        raise BadInput(f"run {run_id} is {run.state!r}; nothing to recover", "`bosun show` the run")


def _retake_baseline(ctx: RunContext, run: Run) -> None:
    """The process that died took the baseline with it: without one the change is not proven."""
    from bosun.engine.baseline import start_baseline

    start_baseline(run, load_task(run.id), ctx.settings(Path(run.repo)).baseline)  # verification settles it
