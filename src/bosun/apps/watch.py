"""``bosun watch``: one event per state change of any run or plan, for parents and scripts.

Polls the store (WAL readers never block writers). Without run ids it follows the runs and plans of
one repository (or all with ``all_repos``) until interrupted, or, with ``until_idle``, until nothing is
running. With run ids it stops once each of them is done (the background loop stopped).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bosun.store.db import Store
    from bosun.store.run import Run

RUNNING_RUN = frozenset({"prepared", "working", "worked"})
RUNNING_PLAN = frozenset({"running"})


def _run_event(run: Run, previous: str | None) -> dict[str, Any]:
    return {
        "kind": "run", "id": run.id, "state": run.state, "previous": previous, "title": run.title,
        "profile": run.profile, "repo": run.repo, "plan_id": run.plan_id,
        "done": run.state not in RUNNING_RUN, "at": run.updated_at,
        "error": run.data.error if run.state in ("failed", "blocked", "rejected") else None,
    }


def _plan_event(plan: dict[str, Any], previous: str | None) -> dict[str, Any]:
    return {
        "kind": "plan", "id": plan["id"], "state": plan["state"], "previous": previous, "title": plan["title"],
        "repo": plan["repo"], "done": plan["state"] not in RUNNING_PLAN, "at": plan["updated_at"],
    }


def watch(
    store: Store,
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
        runs = [r for r in store.list_runs(limit=1000) if (key is None or r.repo == key)
                and (not wanted or r.id in wanted)]
        plans = [] if wanted else [p for p in PlanStore(store).list_plans(limit=200) if key is None or p["repo"] == key]
        # Runs and plans alike as (id, state, the event it makes when its state changes).
        items = [(r.id, r.state, partial(_run_event, r)) for r in runs] + \
                [(p["id"], p["state"], partial(_plan_event, p)) for p in plans]
        for item_id, state, event in items:
            previous = seen.get(item_id)
            if previous == state:
                continue
            seen[item_id] = state
            # At start, report what is in flight (and watched runs), not the whole history.
            if first and not wanted and state not in RUNNING_RUN | RUNNING_PLAN:
                continue
            emit(event(previous))
            count += 1
        first = False
        active = [r for r in runs if r.state in RUNNING_RUN] + [p for p in plans if p["state"] in RUNNING_PLAN]
        if wanted and len(runs) == len(wanted) and not [r for r in runs if r.state in RUNNING_RUN]:
            return count
        if until_idle and not wanted and not active:
            return count
        if should_stop is not None and should_stop():
            return count
        time.sleep(poll_s)
