"""The four phases of a run: prepare → attempt → verify → verdict.

Each phase takes what the verb holds (the context, the task, the ``Run``), does one job and returns
one typed value:

=========  ==========================================================  ===========================
phase      what it does                                                returns
=========  ==========================================================  ===========================
prepare    checks everything, creates the run, its snapshot, worktree  the ``Run`` (``prepared``)
attempt    runs the worker and its fallbacks in the worktree           ``attempts.Outcome``
verify     reads the change itself, verifies those bytes, runs gates   ``checking.Checked``
review     another profile reads it; its P0/P1 findings are revised    ``checking.Checked``
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
from bosun.core.contract import Mode, TaskContract
from bosun.core.errors import BosunError, TimedOut
from bosun.core.fileio import write_bytes_atomic
from bosun.core.review_config import effective_review
from bosun.engine import locks, record, worker_guard
from bosun.engine.budget import check_before_dispatch
from bosun.engine.context import RunContext, new_run_id
from bosun.engine.stops import RunStopped, clear_error, stopping
from bosun.engine.teardown import cancelled_error, request_cancel
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
    wait_limit_s: float | None = None,
) -> Run:
    """Validate everything, then create the run, its snapshot and its worktree.

    ``remote_cap`` bounds the active runs whose worker is on a remote pool (default
    ``max_concurrent_runs``); see :func:`active_cap`. ``wait`` queues for a slot at the cap, for at
    most ``wait_limit_s`` seconds when given.

    ``carry_uncommitted=False`` starts the worktree from ``task.base`` exactly (plans do this: their
    tasks start from the integration branch, which already holds the user's snapshot).
    """
    from bosun.engine.preflight import check_task
    from bosun.isolation.start_point import check_holdout, find_start
    from bosun.isolation.workspace import make_worktree

    # Everything that can be known to fail is checked before anything is created (exit 2, all problems).
    pf = check_task(task, repo_path, profile_name, ctx.store, overrides=ctx.settings_overrides)
    pf.raise_if_failed()
    assert pf.repo is not None and pf.base is not None and pf.settings is not None and pf.choice is not None
    repo, base, settings, choice = pf.repo, pf.base, pf.settings, pf.choice
    ctx.remember_settings(repo, settings)
    check_before_dispatch(ctx.store, settings, task, str(repo), plan_id)
    check_holdout(repo, base, task)

    review_cfg = effective_review(task.review, settings.review) if task.mode == Mode.code else None
    run_id = new_run_id()
    at = find_start(repo, task, base, carry_uncommitted, paths.run_dir(run_id) / "scratch")
    run = Run.from_row({
        "id": run_id,
        "state": states.PREPARED,
        "title": task.title,
        "repo": str(repo),
        "source_branch": at.source_branch,
        "base": base,
        "start_commit": at.start,
        "branch": f"bosun/{run_id}",
        "worktree": str(paths.worktree_dir(run_id)),
        "profile": choice.profile.name,
        "profile_reason": choice.reason,
        "plan_id": plan_id,
        "data": {
            "snapshot": bool(at.snapshot),
            "mode": task.mode.value,
            "task_source": task_source,
            "source_head_at_start": at.head,
            "uncommitted_at_start": at.uncommitted,
            "routing": choice.to_dict(),
            **({"holdout": {"paths": at.hidden, "full_start": at.full_start}} if at.hidden else {}),
            "caller": os.environ.get("PARENT_AGENT") or None,
            **({"remote": True} if choice.profile.adapter == "remote" else {}),
            **({"review_config": review_cfg.model_dump(mode="json")} if review_cfg else {}),
        },
    })
    record.write_doc(run_id, record.TASK, {"run_id": run_id, "task": task.model_dump(mode="json")})
    remote, cap = active_cap(settings, choice.profile.adapter, remote_cap)

    def holders() -> list[str]:
        return locks.slot_holders(ctx.store.active_runs(remote=remote))

    with locks.concurrency_slot(holders, cap, wait, max_wait_s=wait_limit_s):
        ctx.store.insert_run(run, prompt=task.prompt)
    with stopping(ctx, run):
        try:
            view = make_worktree(ctx.store, settings, task, repo, run)
        except BosunError as exc:
            reason = f"worktree creation failed: {exc.message}"
            hint = exc.hint or "check the repository (`git worktree list`) and the free disk space, then delegate again"
            raise RunStopped(states.FAILED, BosunError(reason, hint, code="FAILED"), reason, cause=exc) from exc
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
    prompt: str | None = None,
) -> Outcome:
    """Run the worker (with fallbacks) in the run's worktree. The run ends ``worked``, or the phase
    raises ``RunStopped`` (failed, blocked, cancelled).

    ``defer_baseline``: a caller that verifies next in this process (delegate) does not wait for the
    baseline here; verification overlaps it and the proof waits for it (``baseline.settle``).
    ``warm_up``: once the worker process runs, a background thread imports what verification needs and
    loads the receipt's tokenizer. ``prompt``: what the turn reads instead of the task (a repair or a
    rung's turn, engine/repair.py); ``resume`` also resumes the worker's session. Done earlier (the tokenizer holds the interpreter lock for about
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
    baseline = None
    try:
        with worker_guard.watched(ctx, run):
            baseline = start_baseline(run, task, settings.baseline)
            outcome = run_attempts(ctx, settings, run, task, resume=resume, profile_name=profile_name,
                                   on_event=on_event, prompt_override=prompt,
                                   on_worker_start=warm_up_after_worker if warm_up else None)
        worker_guard.record_git_tampering(ctx, run, outcome)
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


def spent_before(ctx: RunContext, run: Run) -> float:
    """What the run's earlier turns cost: recorded, or (a run recorded before costs were) its usage so
    far priced at its profile's prices."""
    from bosun.engine.metrics import turn_cost
    from bosun.workers.base import Usage

    if run.data.cost_usd is not None:
        return float(run.data.cost_usd)
    if not run.data.usage or not run.profile:
        return 0.0
    return turn_cost(Usage.from_event(run.data.usage), ctx.settings(Path(run.repo)), run.profile)


def _finish_attempt(ctx: RunContext, run: Run, outcome: Outcome) -> None:
    from bosun.engine.metrics import turn_cost
    from bosun.workers.base import Usage

    res = outcome.result
    # The run's usage is every worker turn it took: a revise adds to what the first attempt spent, and
    # so does its cost, each turn priced at the prices of the profile that ran it.
    usage = Usage.from_event(run.data.usage or {})
    usage.add(outcome.usage)
    cost = round(spent_before(ctx, run) + turn_cost(outcome.usage, ctx.settings(Path(run.repo)), outcome.profile), 6)
    data: dict[str, Any] = {"worker": res.to_dict(), "usage": usage.to_dict(), "cost_usd": cost, "bosun_pid": None}
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


def _uncommitted_overlap(run: Run, checked: Checked) -> dict[str, Any] | None:
    """The user's uncommitted files the change touches, in the checkout of its branch, seen now:
    `integrate` would refuse them, so the result warns before anyone approves (`OVERLAPS_UNCOMMITTED`)."""
    from bosun.isolation.user_branch import uncommitted_overlap

    if checked.failed or not checked.files_changed:
        return None
    return uncommitted_overlap(run.repo, run.source_branch, run.start_commit, checked.tree)


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
                    verified_tree=checked.tree, uncommitted_overlap=_uncommitted_overlap(run, checked))
    forget_acknowledgment(ctx.store, run_id)  # given for the change before this one
    run.data.acknowledged = None
    if checked.failed:
        raise RunStopped(states.REJECTED, BosunError(
            "refused by " + ", ".join(checked.failed),
            f"`bosun show {run_id}` explains each gate; revise with `bosun work {run_id} --resume "
            "\"what to fix\"`; if a verify command itself is wrong, fix the task and delegate it again",
            code="GATES_FAILED"), "gates failed: " + ", ".join(checked.failed), raises=False)
    clear_error(ctx.store, run_id)
    run.data.error = None
    ctx.store.move(run, states.VERIFIED, "verification passed, all gates green")
    return checked


# ---------------------------------------------------------------------------------------------
# 3b. cross-review (when the task or bosun.toml asks for it)


def review(ctx: RunContext, run: Run, task: TaskContract, checked: Checked, on_event: Any = None) -> Checked:
    """Review rounds on the verified run (:mod:`bosun.engine.cross_review`): each round's open P0/P1
    findings go back to the worker as a revise turn (its session where the CLI resumes one), whose
    change is verified again before the next round reads it. Returns what was verified last; a
    revise that fails or is refused raises ``RunStopped`` as the attempt and verify phases do. The
    verdict reads the record (engine/review_verdict.py)."""
    if not run.data.review_config or task.mode != Mode.code:
        return checked  # (the review's modules load only for a run that has one)
    from bosun.core.review_config import ReviewConfig
    from bosun.engine import cross_review as cr
    from bosun.engine.review_findings import revise_prompt
    from bosun.engine.review_verdict import review_outcome

    config = ReviewConfig.model_validate(run.data.review_config)
    doc = cr.new_record(config)
    for number in range(1, config.rounds + 1):
        entry = cr.review_once(ctx, run, task, checked, config, number)
        cr.add_round(run.id, doc, entry)
        fixes = cr.to_revise(entry)
        if not fixes or number == config.rounds:
            break
        before = checked.diff_sha256
        outcome = attempt(ctx, run, task, resume=revise_prompt(task, fixes), on_event=on_event)
        revised = {"diff_sha256_before": before, "diff_sha256_after": None, "files_changed": None,
                   "usage": outcome.usage.to_dict(),
                   "cost_usd": cr.priced(outcome.usage, ctx.settings(Path(run.repo)), outcome.profile)}
        cr.note_revised(run.id, doc, revised)
        checked = verify(ctx, run, task)
        revised.update(diff_sha256_after=checked.diff_sha256, files_changed=checked.files_changed)
        cr.note_revised(run.id, doc, revised)
    refusals, _ = review_outcome(run.data.review_config, doc, checked.tree)
    if refusals:
        # A refusal is a rejected run, as a red gate's is: its exit code and every surface agree.
        first = refusals[0]
        raise RunStopped(states.REJECTED, BosunError(
            f"refused by the cross-review: {first['sentence']}",
            f"`bosun show {run.id}` lists the findings; revise with `bosun work {run.id} --resume \"what to fix\"` "
            "and `bosun verify` it (the review runs again)", code=first["code"]),
            "cross-review refused: " + ", ".join(r["code"] for r in refusals), raises=False)
    return checked


# ---------------------------------------------------------------------------------------------
# 4. verdict


def judge(run: Run) -> Verdict | None:
    """The run's one verdict, decided by :mod:`bosun.engine.verdict` from what the phases recorded;
    None while the run has not been judged."""
    from bosun.engine.verdict import of_run

    return of_run(run)
