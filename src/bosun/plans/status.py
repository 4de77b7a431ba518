"""The plan result object (``--json`` of every plan verb) and its text rendering."""

from __future__ import annotations

import sys
from typing import Any

NEXT_STEP = {
    "paused": "next: fix the plan (e.g. add depends) and `bosun plan continue {id} --plan fixed.yaml`, "
              "or `bosun plan continue {id}` once the cause is gone; `bosun plan abort {id}` gives up",
    "failed": "next: `bosun plan status {id}` explains it; `bosun plan continue {id} [--plan fixed.yaml]` retries, "
              "`bosun plan abort {id}` removes its branches and worktrees",
    "cancelled": "next: `bosun plan continue {id}` runs it again, `bosun plan abort {id}` removes its branches",
    "running": "next: `bosun plan watch {id}` follows it (if its process died: `bosun plan resume {id}`)",
}


def plan_result(store: Any, plan: dict[str, Any], brief: bool = False) -> dict[str, Any]:
    from pathlib import Path

    from bosun.plans import integration as gi
    from bosun.plans.ids import driver_alive, plan_dir
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
            "run_state": run["state"] if run else None,
            "profile": run["profile"] if run else None,
            "runs": tdata.get("runs") or [],
            "profiles": tdata.get("profiles") or [],
            "merged_commit": pt.get("merged_commit"),
            "conflict": tdata.get("conflict"),
            "failures": tdata.get("failures") or [],
            "error": tdata.get("error") if pt["state"] in ("failed", "conflict") else None,
        })
    head = None
    try:
        head = gi.branch_head(Path(plan["repo"]), plan["integration_branch"])
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
        "error": data.get("error"),
        "driver_alive": driver_alive(plan["id"]) if plan["state"] == "running" else False,
        "tasks": tasks,
        "plan_dir": str(plan_dir(plan["id"])),
        "created_at": plan["created_at"],
        "updated_at": plan["updated_at"],
    }


def print_plan(r: dict[str, Any]) -> None:
    out = sys.stdout.write
    out(f"plan {r['id']}  [{r['state']}]  {r['title']}\n")
    src = f"{r['source_branch']} @ {r['source_head'][:12]}"
    if r["snapshot"]:
        src += f" (+ uncommitted work, snapshot {r['checkpoint'][:12]})"
    out(f"  source       {src}\n")
    ih = r["integration_head"][:12] if r["integration_head"] else "deleted"
    out(f"  integration  {r['integration_branch']} @ {ih}\n")
    if r["merged_commit"]:
        out(f"  landed       {r['merged_commit'][:12]} on {r['source_branch']}\n")
    if r["waves"]:
        out(f"  wave         {r['current_wave'] or '-'} of {len(r['waves'])}\n")
    by_id = {t["id"]: t for t in r["tasks"]}
    for n, wave in enumerate(r["waves"], start=1):
        out(f"wave {n}:\n")
        for tid in wave:
            t = by_id[tid]
            bits = [f"  {tid:<16} {t['state']:<9}"]
            if t["run_id"]:
                bits.append(f"run {t['run_id']} ({t['run_state']}, {t['profile']})")
            if t["attempts"]:
                bits.append(f"attempt {t['attempts']}")
            if t["merged_commit"]:
                bits.append(f"merged {t['merged_commit'][:12]}")
            out("  ".join(bits) + "\n")
            if t["conflict"]:
                out(f"    conflict in: {', '.join(t['conflict'].get('files') or [])}\n")
            if t["error"]:
                out(f"    error: {t['error'].get('message')}\n")
            for f in t["failures"][-3:] if t["state"] != "merged" else []:
                out(f"    attempt failed: run {f.get('run')} ({f.get('profile')}): {f.get('message')}\n")
    if r["error"]:
        out(f"error: {r['error'].get('code')}: {r['error'].get('message')}\n")
        if r["error"].get("hint"):
            out(f"  hint: {r['error']['hint']}\n")
    if r["state"] == "running" and not r["driver_alive"]:
        out(f"its process is gone: `bosun plan resume {r['id']}` continues it\n")
    elif r["state"] in NEXT_STEP:
        out(NEXT_STEP[r["state"]].format(id=r["id"]) + "\n")
