"""``bosun watch``: one event per state change of any run or plan, for parents and scripts.

Polls the store (WAL readers never block writers). Without run ids it follows the runs and plans of
one repository (or all with ``all_repos``) until interrupted, or, with ``until_idle``, until nothing is
running. With run ids it stops once each of them is done (the background loop stopped).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

RUNNING_RUN = frozenset({"prepared", "working", "worked"})
RUNNING_PLAN = frozenset({"running"})


def _run_event(run: dict[str, Any], previous: str | None) -> dict[str, Any]:
    data = run.get("data") or {}
    return {
        "kind": "run", "id": run["id"], "state": run["state"], "previous": previous, "title": run["title"],
        "profile": run["profile"], "repo": run["repo"], "plan_id": run.get("plan_id"),
        "done": run["state"] not in RUNNING_RUN, "at": run["updated_at"],
        "error": data.get("error") if run["state"] in ("failed", "blocked", "rejected") else None,
    }


def _plan_event(plan: dict[str, Any], previous: str | None) -> dict[str, Any]:
    return {
        "kind": "plan", "id": plan["id"], "state": plan["state"], "previous": previous, "title": plan["title"],
        "repo": plan["repo"], "done": plan["state"] not in RUNNING_PLAN, "at": plan["updated_at"],
    }


def watch(
    store: Any,
    emit: Callable[[dict[str, Any]], None],
    repo: Path | None,
    run_ids: list[str] | None = None,
    until_idle: bool = False,
    poll_s: float = 0.5,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Emit events until the exit condition holds; returns the number of events emitted."""
    from bosun.store.plans import PlanStore

    key = str(repo) if repo is not None else None
    wanted = set(run_ids or [])
    seen: dict[str, str] = {}
    first = True
    count = 0
    while True:
        runs = [r for r in store.list_runs(limit=1000) if (key is None or r["repo"] == key)
                and (not wanted or r["id"] in wanted)]
        plans = [] if wanted else [p for p in PlanStore(store).list_plans(limit=200) if key is None or p["repo"] == key]
        for item, event in [(r, _run_event) for r in runs] + [(p, _plan_event) for p in plans]:
            previous = seen.get(item["id"])
            if previous == item["state"]:
                continue
            seen[item["id"]] = item["state"]
            # At start, report what is in flight (and watched runs), not the whole history.
            if first and not wanted and item["state"] not in RUNNING_RUN | RUNNING_PLAN:
                continue
            emit(event(item, previous))
            count += 1
        first = False
        active = [r for r in runs if r["state"] in RUNNING_RUN] + [p for p in plans if p["state"] in RUNNING_PLAN]
        if wanted and len(runs) == len(wanted) and not [r for r in runs if r["state"] in RUNNING_RUN]:
            return count
        if until_idle and not wanted and not active:
            return count
        if should_stop is not None and should_stop():
            return count
        time.sleep(poll_s)
