"""The plan verbs that act on a plan already started: continue (or resume), cancel, abort."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import states
from bosun.core.errors import BosunError, Busy, InvalidTransition
from bosun.core.fileio import write_json_atomic
from bosun.engine import locks
from bosun.plans import integration as plan_git
from bosun.plans import model
from bosun.plans.driver import drive
from bosun.plans.ids import check_plan_id, driver_alive, plan_dir, wave_base_ref
from bosun.plans.preflight import profile_problems
from bosun.plans.runs import discard_run
from bosun.plans.validate import PlanInvalid, check_plan
from bosun.store.plans import PlanStore

if TYPE_CHECKING:
    from bosun.engine.context import RunContext


def continue_plan(ctx: RunContext, plan_id: str, fixed: model.Plan | None = None, resume: bool = False) -> dict[str, Any]:
    """Run a paused, failed or cancelled plan again (or one whose process died), optionally with a
    fixed plan file. Merged tasks are never run again; failed and conflicting tasks start afresh."""
    pstore = PlanStore(ctx.store)
    check_plan_id(plan_id)
    row = pstore.require_plan(plan_id)
    if row["state"] in (model.SUCCEEDED, model.ABORTED):
        raise InvalidTransition(f"plan {plan_id} is {row['state']!r}; there is nothing to continue",
                                "start a new plan with `bosun plan run`")
    if row["state"] == model.RUNNING and driver_alive(plan_id):
        raise Busy(f"plan {plan_id} is being run by a live bosun process",
                   f"`bosun plan watch {plan_id}` follows it")
    with locks.run_lock(plan_id):
        if fixed is not None:
            _apply_fixed_plan(ctx, row, fixed)
        _reset_stopped_tasks(ctx, plan_id)
        what = "resumed" if resume else "continued" + (" with a fixed plan" if fixed is not None else "")
        return drive(ctx, plan_id, allowed=(model.RUNNING, model.PAUSED, model.FAILED, model.CANCELLED), reason=what)


def _reset_stopped_tasks(ctx: RunContext, plan_id: str) -> None:
    pstore = PlanStore(ctx.store)
    for pt in pstore.tasks(plan_id):
        if pt["state"] in (model.T_FAILED, model.T_CONFLICT, model.T_CANCELLED):
            if pt["run_id"]:
                discard_run(ctx, pt["run_id"])
            pstore.update_task(plan_id, pt["task_id"], state=model.T_PENDING, attempts=0,
                               data={"landing": None, "conflict": None, "error": None},
                               event=f"reset from {pt['state']}: it runs again")


def _apply_fixed_plan(ctx: RunContext, row: dict[str, Any], fixed: model.Plan) -> None:
    plan_id = row["id"]
    pstore = PlanStore(ctx.store)
    problems, waves = check_plan(fixed)
    problems += profile_problems(fixed, ctx.settings(Path(row["repo"])), row.get("profile"))
    current = {pt["task_id"]: pt for pt in pstore.tasks(plan_id)}
    new_ids = {t.id for t in fixed.tasks}
    for tid, pt in current.items():
        if pt["state"] != model.T_MERGED:
            continue
        if tid not in new_ids:
            problems.append(model.Problem("MERGED_TASK_CHANGED", f"task {tid} is already merged; the fixed plan cannot drop it",
                                      "keep it in the plan unchanged", [tid]))
        elif fixed.task(tid).definition_hash() != pt["definition"]:
            problems.append(model.Problem("MERGED_TASK_CHANGED", f"task {tid} is already merged; the fixed plan cannot change it",
                                      "change only tasks that are not merged yet (add depends to sequence them)", [tid]))
    if problems or waves is None:
        raise PlanInvalid(problems)
    wave_of = {tid: n + 1 for n, wave in enumerate(waves) for tid in wave}
    keep: dict[str, tuple[int, int]] = {}
    inserts = []
    for t in fixed.tasks:
        known = current.get(t.id)
        if known is not None and known["definition"] == t.definition_hash():
            keep[t.id] = (wave_of[t.id], t.index)
        else:
            inserts.append({"task_id": t.id, "position": t.index, "wave": wave_of[t.id], "definition": t.definition_hash()})
    for tid, pt in current.items():
        if tid not in keep and pt["run_id"]:
            discard_run(ctx, pt["run_id"])
    pstore.apply_fixed(plan_id, keep, inserts, fixed.document, waves)
    write_json_atomic(plan_dir(plan_id) / "plan.json", {"plan_id": plan_id, "document": fixed.document})


def cancel_plan(ctx: RunContext, plan_id: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """Stop the plan's running workers (``teardown.cancel``) and mark it cancelled; merged work stays
    in the integration branch. Waits for the process driving it to stop, then drops unmerged runs."""
    from bosun.engine import teardown

    pstore = PlanStore(ctx.store)
    check_plan_id(plan_id)
    row = pstore.require_plan(plan_id)
    if row["state"] in (model.SUCCEEDED, model.ABORTED):
        raise InvalidTransition(f"plan {plan_id} is {row['state']!r}; there is nothing to cancel",
                                f"`bosun plan status {plan_id}` shows what it did")
    if row["state"] != model.CANCELLED:
        pstore.set_state(plan_id, (model.RUNNING, model.PAUSED, model.FAILED), model.CANCELLED, "cancelled")
    deadline = time.monotonic() + timeout_s
    while True:
        for pt in pstore.tasks(plan_id):
            run = ctx.store.get_run(pt["run_id"]) if pt["run_id"] else None
            if run and run.state == states.WORKING:
                try:
                    teardown.cancel(ctx, run.id)
                except BosunError:
                    pass  # it stopped on its own meanwhile; this loop looks at every run again
        if not driver_alive(plan_id) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if not driver_alive(plan_id):
        with locks.run_lock(plan_id):
            for pt in pstore.tasks(plan_id):
                if pt["state"] != model.T_MERGED and pt["run_id"]:
                    discard_run(ctx, pt["run_id"])
                if pt["state"] not in (model.T_MERGED, model.T_PENDING, model.T_CANCELLED):
                    pstore.update_task(plan_id, pt["task_id"], state=model.T_CANCELLED, event="plan cancelled")
    return pstore.require_plan(plan_id)


def abort_plan(ctx: RunContext, plan_id: str) -> dict[str, Any]:
    """Remove every worktree and branch the plan made (run records stay); the plan ends ``aborted``."""
    from bosun.isolation.worktree import remove_worktree

    pstore = PlanStore(ctx.store)
    check_plan_id(plan_id)
    row = pstore.require_plan(plan_id)
    if row["state"] in (model.SUCCEEDED, model.ABORTED):
        raise InvalidTransition(
            f"plan {plan_id} is {row['state']!r}; there is nothing to abort",
            f"its integration branch, if kept, is {row['integration_branch']}: `git branch -D` it yourself"
            if row["state"] == model.SUCCEEDED else f"nothing of it is left to remove; `bosun plan status {plan_id}` "
            "shows its record",
        )
    if row["state"] == model.RUNNING and driver_alive(plan_id):
        raise Busy(f"plan {plan_id} is running", f"`bosun plan cancel {plan_id}` first, then abort it")
    with locks.run_lock(plan_id):
        repo = Path(row["repo"])
        for run in ctx.store.list_runs(plan_id=plan_id, limit=100_000):
            if run.state != states.CLEANED:
                discard_run(ctx, run.id)
        pdir = plan_dir(plan_id)
        from bosun.isolation.verify_commands import verify_worktree

        remove_worktree(repo, verify_worktree(pdir), None, delete_branch=False)
        plan_git.delete_branch(repo, row["integration_branch"])
        plan_git.delete_branch(repo, wave_base_ref(plan_id))
        shutil.rmtree(pdir / "scratch", ignore_errors=True)
        pstore.set_state(plan_id, row["state"], model.ABORTED,
                         f"aborted: worktrees and branches removed ({row['integration_branch']} deleted)")
        return pstore.require_plan(plan_id)
