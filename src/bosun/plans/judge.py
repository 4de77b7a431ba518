"""After a wave: may the plan go on? Every task of the wave must be merged into the integration branch.

A task that failed after its retries fails the plan; a conflict pauses it; a task whose verdict needs a
person's review (``needs_review``: verified, but not proven, not verified, or with changed expected
values...) pauses it too: it is not merged, so the next wave, whose tasks may depend on it, never
starts on a base without it, and the plan never reports success while it waits. The person reads the
reasons, approves the run with ``bosun approve RUN`` (or throws it away with ``bosun discard RUN``), and
``bosun plan continue PLAN`` merges it and goes on from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bosun.plans import model

if TYPE_CHECKING:
    from collections.abc import Callable

    from bosun.store.plans import PlanStore

NEEDS_REVIEW = "NEEDS_REVIEW"


def judge_wave(ps: PlanStore, plan_id: str, n: int, todo: list[str], stop: Callable[..., None]) -> bool:
    """True when every task of wave ``n`` merged; otherwise ``stop`` the plan and say why."""
    tasks = {pt["task_id"]: pt for pt in ps.tasks(plan_id)}
    by_state: dict[str, list[str]] = {}
    for t in todo:
        by_state.setdefault(tasks[t]["state"], []).append(t)
    failed, conflicts = by_state.get(model.T_FAILED, []), by_state.get(model.T_CONFLICT, [])
    review = by_state.get(model.T_REVIEW, [])
    if failed:
        first = tasks[failed[0]]
        err = first["data"].get("error") or {}
        msg = (f"task {failed[0]} failed after {first['attempts']} attempt(s): {err.get('message', 'failed')}"
               + (f" (and {len(failed) - 1} more failed task(s))" if len(failed) > 1 else ""))
        stop(model.FAILED, {"code": "TASK_FAILED", "message": msg,
                            "hint": f"`bosun plan status {plan_id}` shows every attempt; fix the task and "
                                    f"`bosun plan continue {plan_id} --plan fixed.yaml`, or "
                                    f"`bosun plan abort {plan_id}`"},
             msg, failed_tasks=failed)
        return False
    if conflicts:
        first = tasks[conflicts[0]]
        files = (first["data"].get("conflict") or {}).get("files", [])
        msg = f"task {conflicts[0]} conflicts with the integration branch in {', '.join(files[:5]) or 'some files'}"
        stop(model.PAUSED, {"code": "MERGE_CONFLICT", "message": msg,
                            "hint": "sequence the conflicting tasks with depends in a fixed plan and "
                                    f"`bosun plan continue {plan_id} --plan fixed.yaml`"},
             msg, conflict={"tasks": conflicts, "files": files, "wave": n})
        return False
    if review:
        stop(model.PAUSED, *_waiting(plan_id, [(t, tasks[t]["data"].get("review") or {}) for t in review]),
             review={"tasks": review, "wave": n})
        return False
    other = [t for t in todo if tasks[t]["state"] != model.T_MERGED]
    if other:
        # Cancelled tasks (the plan itself was not cancelled: a run was, by hand).
        msg = f"task {other[0]} did not finish ({tasks[other[0]]['state']})"
        stop(model.FAILED, {"code": "TASK_STOPPED", "message": msg,
                            "hint": f"`bosun plan continue {plan_id}` runs it again"}, msg)
        return False
    return True


def _waiting(plan_id: str, review: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, str], str]:
    """The plan's error and reason while tasks wait for a person."""
    tid, first = review[0]
    run = first.get("run") or "RUN"
    msg = (f"task {tid} needs a person's review before it lands: {first.get('verdict_line') or 'needs review'}"
           + (f" (and {len(review) - 1} more task(s) waiting)" if len(review) > 1 else ""))
    hint = (f"read the reasons (`bosun plan status {plan_id}`, `bosun show {run}`, `bosun diff {run}`); "
            f"`bosun approve {run}` approves it, then `bosun plan continue {plan_id}` merges it and goes on "
            f"(or `bosun discard {run}` and continue to run the task again)")
    return {"code": NEEDS_REVIEW, "message": msg, "hint": hint}, msg
