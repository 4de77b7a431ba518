"""The four phases of a run: prepare → attempt → verify → verdict.

Each phase takes what the verb holds (the context, the task, the ``Run``), does one job and returns
one typed value:

=========  ==========================================================  ===========================
phase      what it does                                                returns
=========  ==========================================================  ===========================
prepare    checks everything, creates the run, its snapshot, worktree  the ``Run`` (``prepared``)
attempt    runs the worker and its fallbacks in the worktree           ``attempts.Outcome``
verify     reads the change itself, verifies those bytes, runs gates   ``checking.Checked``
verdict    decides landable / needs review / refused from the record   ``verdict.Verdict``
=========  ==========================================================  ===========================

A phase that ends the run (a worktree that could not be made, a worker that failed, gates that
refused the change) raises ``RunStopped``; the verb that runs the phases handles it once
(``stops.stopping``). The verbs (engine/lifecycle.py, engine/delegation.py) take the run lock, check
the run's state and wire these together; plans and the MCP server call the same verbs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths, states
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput, BosunError, TimedOut
from bosun.core.fileio import write_bytes_atomic
from bosun.engine import locks, record
from bosun.engine.budget import check_before_dispatch
from bosun.engine.context import RunContext, new_run_id
from bosun.engine.stops import RunStopped, clear_error, stopping
from bosun.engine.teardown import cancelled_error, request_cancel
from bosun.isolation import gitwatch
from bosun.isolation.lingering import boot_clock
from bosun.store.run import Run

if TYPE_CHECKING:
    from bosun.core.config import Settings
    from bosun.engine.attempts import Outcome
    from bosun.engine.checking import Checked
    from bosun.engine.verdict import Verdict

# ---------------------------------------------------------------------------------------------
# 1. prepare


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
    with stopping(ctx, run):
        try:
            wt = open_worktree(ctx.store, settings, task, repo, run_id, branch, start, wt)
            view = create_view(rdir, wt, repo, start)
            set_up_run(ctx.store, settings, task, repo, run_id, wt, start, view)
        except BosunError as exc:
            reason = f"worktree creation failed: {exc.message}"
            raise RunStopped(states.FAILED, BosunError(reason, "", code="FAILED"), reason, cause=exc) from exc
    ctx.store.write(run, view_objects=str(view.objects))
    return ctx.store.reload(run)  # the worktree's set-up recorded its environment and ports


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
# 2. attempt


def attempt(
    ctx: RunContext,
    run: Run,
    task: TaskContract,
    *,
    resume: str | None = None,
    profile_name: str | None = None,
    on_event: Any = None,
    defer_baseline: bool = False,
    warm_up: bool = False,
) -> Outcome:
    """Run the worker (with fallbacks) in the run's worktree. The run ends ``worked``, or the phase
    raises ``RunStopped`` (failed, blocked, cancelled).

    ``defer_baseline``: a caller that verifies next in this process (delegate) does not wait for the
    baseline here; verification overlaps it and the proof waits for it (``baseline.settle``).
    ``warm_up``: once the worker process runs, a background thread imports what verification needs and
    loads the receipt's tokenizer. Done earlier (the tokenizer holds the interpreter lock for about
    50 ms) it delayed bosun's own steps before the worker starts; while the worker runs, bosun has
    nothing else to do."""
    from bosun.engine.attempts import run_attempts
    from bosun.engine.baseline import start_baseline
    from bosun.engine.warm_up import warm_up_after_worker

    repo = Path(run.repo)
    settings = ctx.settings(repo)
    check_before_dispatch(ctx.store, settings, task, run.repo, run.plan_id, run.id)
    ctx.store.move(run, states.WORKING, "revise: " + resume[:200] if resume else "worker started")
    ctx.store.write(run, bosun_pid=os.getpid())
    _starts_afresh(ctx, run)
    watch = gitwatch.take(repo)
    began = boot_clock()
    baseline = start_baseline(run, task, settings.baseline)
    try:
        outcome = run_attempts(ctx, settings, run, task, resume=resume, profile_name=profile_name, on_event=on_event,
                               on_worker_start=warm_up_after_worker if warm_up else None)
        ctx.store.reload(run)  # the attempts recorded the sandbox, the worker's pid, live usage
        ctx.store.write(run, worker_window=[began, boot_clock()])
        _check_user_git(ctx, run, watch)
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
        if ctx.store.require_run(run.id).state == states.WORKING:
            ctx.store.move(run, states.INTERRUPTED, "interrupted: " + type(exc).__name__)
        raise
    _finish_attempt(ctx, run, outcome)
    return outcome


def _starts_afresh(ctx: RunContext, run: Run) -> None:
    """Work starts again: no error stands, no old cancel request, no acknowledgment of an old change
    (each field is written by its one owner)."""
    from bosun.engine.approval import forget_acknowledgment

    clear_error(ctx.store, run.id)
    request_cancel(ctx.store, run.id, requested=False)
    forget_acknowledgment(ctx.store, run.id)
    run.data.error = run.data.cancel_requested = run.data.acknowledged = None


def _check_user_git(ctx: RunContext, run: Run, watch: tuple[Path, gitwatch.Snapshot]) -> None:
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

    record.EventLog(paths.run_dir(run.id) / record.EVENTS).append(ev_message(message, role="system"))
    ctx.store.write(run, user_git_tampered={"changed": changed, "restored": restored, "failed": failed})


def _finish_attempt(ctx: RunContext, run: Run, outcome: Outcome) -> None:
    res = outcome.result
    data: dict[str, Any] = {"worker": res.to_dict(), "usage": outcome.usage.to_dict(), "bosun_pid": None}
    if res.session_id:
        ctx.store.set_columns(run, session_id=res.session_id, profile=outcome.profile)
    else:
        ctx.store.set_columns(run, profile=outcome.profile)
    if res.status == "ok":
        ctx.store.write(run, **data)
        ctx.store.move(run, states.WORKED, f"worker finished ({outcome.profile})")
        return
    if res.status == "cancelled":
        raise RunStopped(states.CANCELLED, BosunError(**cancelled_error(run.id)), "cancelled during work",
                         raises=False, data=data)
    # The failure is made once, as the exception the caller gets, and recorded as that exception says.
    message = res.error_message or f"worker {res.status}"
    code = (res.error_class.value if res.error_class else res.status).upper()
    failure = (TimedOut(message, outcome.hint or "raise timeout_s in the task or profile", code="TIMEOUT")
               if res.status == "timeout" else BosunError(message, outcome.hint, code=code))
    raise RunStopped(states.BLOCKED if outcome.blocked else states.FAILED, failure, message, data=data)


# ---------------------------------------------------------------------------------------------
# 3. verify


def verify(ctx: RunContext, run: Run, task: TaskContract) -> Checked:
    """The verify phase (:mod:`bosun.engine.checking`) on the worked run the verb holds, recorded: the
    run ends ``verified`` when every gate is green; else the phase raises ``RunStopped`` (rejected)."""
    from bosun.engine.approval import forget_acknowledgment
    from bosun.engine.checking import check_worked

    run_id = run.id
    checked = check_worked(ctx, run, task)
    write_bytes_atomic(paths.run_dir(run_id) / record.DIFF, checked.diff)
    record.write_doc(run_id, record.GATES, {"gates": [g.to_dict() for g in checked.gates],
                                           "diff_sha256": checked.diff_sha256, "tree": checked.tree})
    ctx.store.set_columns(run, diff_sha256=checked.diff_sha256, files_changed=checked.files_changed)
    ctx.store.write(run, verification_passed=checked.verification["passed"], gates_ok=not checked.failed,
                    verified_tree=checked.tree)
    forget_acknowledgment(ctx.store, run_id)  # given for the change before this one
    run.data.acknowledged = None
    if checked.failed:
        raise RunStopped(states.REJECTED, BosunError(
            "rejected by " + ", ".join(checked.failed),
            f"`bosun show {run_id}` explains each gate; revise with `bosun work {run_id} --resume "
            "\"what to fix\"`; if a verify command itself is wrong, fix the task and delegate it again",
            code="GATES_FAILED"), "gates failed: " + ", ".join(checked.failed), raises=False)
    clear_error(ctx.store, run_id)
    run.data.error = None
    ctx.store.move(run, states.VERIFIED, "verification passed, all gates green")
    return checked


# ---------------------------------------------------------------------------------------------
# 4. verdict


def judge(run: Run) -> Verdict | None:
    """The run's one verdict, decided by :mod:`bosun.engine.verdict` from what the phases recorded;
    None while the run has not been judged."""
    from bosun.engine.verdict import of_run

    return of_run(run)
