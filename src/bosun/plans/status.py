"""The plan result object (``--json`` of every plan verb); :mod:`bosun.cli.views` renders it as text.

Each task carries the ``verdict`` of its current run (``engine/verdict.py``), and a task that waits for
a person's review (``needs_review``) its ``review``: the run, the verdict in a line and the reasons."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bosun.store.db import Store


def plan_result(store: Store, plan: dict[str, Any], brief: bool = False) -> dict[str, Any]:
    from pathlib import Path

    from bosun.engine.verdict import of_run
    from bosun.plans.ids import driver_alive, plan_dir
    from bosun.plans.integration import branch_head
    from bosun.store.plans import PlanStore

    ps = PlanStore(store)
    data = plan.get("data") or {}
    tasks = []
    for pt in ps.tasks(plan["id"]):
        run = store.get_run(pt["run_id"]) if pt["run_id"] else None
        tdata = pt.get("data") or {}
        tasks.append({
            "id": pt["task_id"],
            "wave": pt["wave"],
            "state": pt["state"],
            "attempts": pt["attempts"],
            "run_id": pt["run_id"],
            "run_state": run.state if run else None,
            # The verdict of the task's current run, as `bosun show` has it (None until it is judged).
            "verdict": of_run(run) if run else None,
            "profile": run.profile if run else None,
            "runs": tdata.get("runs") or [],
            "profiles": tdata.get("profiles") or [],
            "merged_commit": pt.get("merged_commit"),
            "conflict": tdata.get("conflict"),
            # A task that waits for a person: its run, the verdict in a line and every reason.
            "review": tdata.get("review") if pt["state"] == "needs_review" else None,
            "failures": tdata.get("failures") or [],
            "error": tdata.get("error") if pt["state"] in ("failed", "conflict") else None,
        })
    head = None
    try:
        head = branch_head(Path(plan["repo"]), plan["integration_branch"])
    except Exception:  # noqa: BLE001 - a repository gone since: report what the store knows
        head = None
    waves: list[list[str]] = [[] for _ in range(max((t["wave"] for t in tasks), default=0))]
    for t in tasks:
        waves[t["wave"] - 1].append(t["id"])
    return {
        "id": plan["id"],
        "state": plan["state"],
        "title": plan["title"],
        "repo": plan["repo"],
        "source_branch": plan["source_branch"],
        "source_head": plan["source_head"],
        "checkpoint": plan["checkpoint"],
        "snapshot": bool(data.get("snapshot")),
        "integration_branch": plan["integration_branch"],
        "integration_head": head,
        "current_wave": plan["current_wave"],
        "waves": waves,
        "no_merge": plan["no_merge"],
        "merged_commit": plan.get("merged_commit"),
        "verified_head": data.get("verified_head"),
        "conflict": data.get("conflict"),
        "review": data.get("review"),  # {tasks, wave} while tasks wait for a person's review
        "error": data.get("error"),
        "driver_alive": driver_alive(plan["id"]) if plan["state"] == "running" else False,
        "tasks": tasks,
        "plan_dir": str(plan_dir(plan["id"])),
        "created_at": plan["created_at"],
        "updated_at": plan["updated_at"],
    }
