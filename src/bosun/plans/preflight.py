"""A plan's profiles checked before it starts: names that exist, and every task's pre-flight checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bosun.plans import model


def profile_problems(plan: model.Plan, settings: Any, flag: str | None, repo: Path | None = None) -> list[model.Problem]:
    """Unknown profiles; with ``repo``, also every task's pre-flight checks (key set, CLI installed,
    verify programs found), each problem once with the tasks it affects."""
    names: list[tuple[str | None, str | None]] = [(None, flag)] if flag else []
    names += [(t.id, t.contract.profile) for t in plan.tasks if t.contract is not None and t.contract.profile]
    out = []
    for task_id, name in names:
        if name and name not in settings.profiles:
            from bosun.core.settings_cache import unknown_profile

            err = unknown_profile(name, settings.profiles)
            where = f"task {task_id}" if task_id else "--profile"
            out.append(model.Problem("UNKNOWN_PROFILE", f"{where}: {err.message}", err.hint,
                                     [task_id] if task_id else []))
    if repo is None or out:
        return out
    from bosun.engine.preflight import check_task

    found: dict[tuple[str, str], model.Problem] = {}
    for t in plan.tasks:
        if t.contract is None:
            continue
        # A plan's tasks start from its integration branch, which does not exist yet: no base check.
        pf = check_task(t.contract, repo, flag, settings=settings, check_base=False)
        for problem in pf.problems:
            key = (problem.code, problem.message)
            if key in found:
                found[key].tasks.append(t.id)
            else:
                found[key] = model.Problem(problem.code, problem.message, problem.hint, [t.id])
    for p in found.values():
        if len(plan.tasks) > 1:
            p.message = f"{p.message} (task{'s' if len(p.tasks) > 1 else ''} {', '.join(p.tasks)})"
    return out + list(found.values())


