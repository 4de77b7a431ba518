"""Running a plan: checkpoint, waves of parallel task runs, merges into the integration branch, landing.

``start_plan`` checkpoints the source branch (its head, and a snapshot commit of the user's
uncommitted work when the tree is dirty), creates the integration branch ``bosun/plan/<id>`` at the
checkpoint and records the plan; ``drive`` then runs it. The driver holds the plan's lock (the run
lock of the plan id), so one process advances a plan at a time and a dead one is taken over.

A wave:

1. Every unmerged task of the wave runs in its own thread (its own store connection) under the
   global concurrency cap: ``prepare`` from the integration head as it stands when the wave starts
   (``carry_uncommitted=False``: the snapshot is already in the branch), ``work``, ``verify``,
   ``approve``, then its landing commit is built. A failed or rejected attempt is kept on record,
   its worktree discarded, and the task runs again with the next profile of the same tier, up to
   ``max_attempts``.
2. The landings are merged into the integration branch one by one, in plan order (the branch does
   not move while tasks run, so each task is judged against exactly the commit it started from).
   A merged run moves ``approved -> integrated`` ("merged into bosun/plan/<id>") and is cleaned up.
3. The plan-level verify runs on the integration head in a temporary worktree.

A conflict pauses the plan, a task failing after its retries or a red plan verify fails it; either
way the source branch is untouched and the integration branch stays for inspection. When every
wave is green, the plan lands: see :mod:`bosun.plans.integration`.

Every step is recorded before or after it happens so ``drive`` can be called again after a crash:
merged tasks are skipped (a landing already in the integration branch is recognised by ancestry),
runs left ``working`` by the dead process are recovered (their diff is verified, not lost),
``prepared`` runs are worked, verified ones approved and merged.

This module starts a plan; :mod:`.driver` drives its waves, :mod:`.task_runner` runs one task,
:mod:`.control` continues, cancels and aborts it, :mod:`.ids` names its places, :mod:`.runs` applies
the engine's verbs to its task runs and :mod:`.preflight` checks its profiles.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.fileio import write_json_atomic
from bosun.plans import integration as plan_git
from bosun.plans import model
from bosun.plans.driver import drive
from bosun.plans.ids import integration_branch, new_plan_id, plan_dir
from bosun.plans.preflight import profile_problems
from bosun.plans.validate import PlanInvalid, validated
from bosun.store.plans import PlanStore

if TYPE_CHECKING:
    from bosun.engine.context import RunContext


def start_plan(
    ctx: RunContext,
    plan: model.Plan,
    repo_path: Path,
    profile: str | None = None,
    no_merge: bool = False,
    on_created: Any = None,
) -> dict[str, Any]:
    """Validate, checkpoint, create the integration branch and the plan record, then drive it."""
    from bosun.isolation import git
    from bosun.isolation.snapshot import snapshot_commit

    waves = validated(plan)
    repo = git.repo_root(repo_path)
    source_branch = git.current_branch(repo)  # a detached HEAD is refused here
    head = git.head_commit(repo)
    settings = ctx.settings(repo)
    problems = profile_problems(plan, settings, profile, repo)
    if problems:
        raise PlanInvalid(problems)
    plan_id = new_plan_id()
    pdir = plan_dir(plan_id)
    (pdir / "scratch").mkdir(parents=True, exist_ok=True)
    snapshot = snapshot_commit(repo, head, pdir / "scratch")
    checkpoint = snapshot or head
    branch = integration_branch(plan_id)
    rows = []
    wave_of = {tid: n + 1 for n, wave in enumerate(waves) for tid in wave}
    for t in plan.tasks:
        rows.append({"task_id": t.id, "position": t.index, "wave": wave_of[t.id], "definition": t.definition_hash()})
    pstore = PlanStore(ctx.store)
    pstore.insert_plan(
        {
            "id": plan_id, "state": model.RUNNING, "title": plan.title, "repo": str(repo),
            "source_branch": source_branch, "source_head": head, "checkpoint": checkpoint,
            "integration_branch": branch, "document": plan.document, "current_wave": 0,
            "profile": profile, "no_merge": no_merge,
            "data": {"snapshot": bool(snapshot), "waves": waves, "pid": os.getpid()},
        },
        rows,
    )
    write_json_atomic(pdir / "plan.json", {"plan_id": plan_id, "document": plan.document})
    if on_created is not None:
        on_created(plan_id)
    plan_git.create_branch(repo, branch, checkpoint)
    return drive(ctx, plan_id, allowed=(model.RUNNING,))


def watch_thread(pstore_factory: Any, plan_id_ref: list[str], emit: Any, stop: threading.Event) -> threading.Thread:
    """A thread that follows a plan's events (``plan run``'s live output) until ``stop`` is set."""
    from bosun.plans.events import follow

    def target() -> None:
        while not plan_id_ref and not stop.is_set():
            time.sleep(0.05)
        if not plan_id_ref:
            return
        store = pstore_factory()
        try:
            follow(PlanStore(store), plan_id_ref[0], emit, interval=0.2, stop=stop.is_set, dead_grace_s=1e9)
        finally:
            store.close()

    t = threading.Thread(target=target, name="bosun-plan-watch", daemon=True)
    t.start()
    return t
