"""The plan event stream: what ``bosun plan watch`` (and ``plan run``'s live output) prints.

Events live in the ``plan_events`` table, written in the same transaction as the state change they
describe. A watcher polls for rows after the last id it printed, so it never misses or repeats one,
and it can attach to a plan at any time (it first prints the history).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bosun.plans.model import ENDED_STATES, RUNNING

OUTPUT_LINES = 20  # of a failed check's output, in a line of `plan watch` and `plan run`


def event_json(ev: dict[str, Any]) -> dict[str, Any]:
    """One event as the JSON object ``watch --json`` prints, one per line."""
    out = {
        "plan_id": ev["plan_id"],
        "seq": ev["id"],
        "at": round(ev["at"], 3),
        "kind": ev["kind"],
        "task": ev.get("task_id"),
        "state": ev.get("state"),
        "detail": ev.get("detail") or "",
    }
    out.update({k: v for k, v in (ev.get("data") or {}).items() if k not in out})
    return out


def describe(ev: dict[str, Any]) -> str:
    when = time.strftime("%H:%M:%S", time.localtime(ev["at"]))
    data = ev.get("data") or {}
    kind = ev["kind"]
    detail = ev.get("detail") or ""
    if kind == "task":
        line = f"{when}  task {ev['task_id']}" + (f" {ev['state']}" if ev.get("state") else "")
        run_id = data.get("run_id")
        if run_id and run_id not in detail and ev.get("state") not in ("pending", "cancelled"):
            line += f" (run {run_id})"
        return line + (f": {detail}" if detail else "")
    if kind == "wave" and ev.get("state") == "started":
        return f"{when}  {detail}"  # "wave 2 of 3: tasks a, b from ...": the detail says it all
    if kind == "plan":
        return f"{when}  plan" + (f" {ev['state']}" if ev.get("state") else "") + (f": {detail}" if detail else "")
    line = f"{when}  {kind}" + (f" {ev['state']}" if ev.get("state") else "") + (f": {detail}" if detail else "")
    output = data.get("output_tail") if ev.get("state") == "failed" else None
    if output:
        # A failed check shows what failed, where the failure is reported: the end of its output.
        line += "\n" + "\n".join("    " + ln for ln in output.rstrip("\n").splitlines()[-OUTPUT_LINES:])
    return line


def follow(
    pstore: Any,
    plan_id: str,
    emit: Callable[[dict[str, Any]], None],
    interval: float = 0.25,
    stop: Callable[[], bool] | None = None,
    dead_grace_s: float = 3.0,
) -> dict[str, Any]:
    """Call ``emit`` for every event of the plan, old and new, until the plan ends.

    Ends when the plan is in an ended state and every event was emitted, when ``stop()`` says so,
    or when the plan is ``running`` but no live process has driven it for ``dead_grace_s`` (it
    crashed: `bosun plan resume` picks it up). Returns the plan row as last seen.
    """
    from bosun.engine import locks

    last = 0
    dead_since: float | None = None
    while True:
        for ev in pstore.events_since(plan_id, last):
            last = ev["id"]
            emit(ev)
        plan = pstore.require_plan(plan_id)
        if stop is not None and stop():
            for ev in pstore.events_since(plan_id, last):
                last = ev["id"]
                emit(ev)
            return plan
        if plan["state"] in ENDED_STATES:
            if not pstore.events_since(plan_id, last, limit=1):
                return plan
            continue
        if plan["state"] == RUNNING and not locks.owner_alive(locks.read_owner(plan_id)):
            dead_since = dead_since or time.monotonic()
            if time.monotonic() - dead_since > dead_grace_s:
                return plan
        else:
            dead_since = None
        time.sleep(interval)
