"""``bosun watch``: every recorded state change of the runs (and plans) a caller follows, each once, in order.

The events are the store's own records, never samples of a run's current state: a run's are the rows
of its ``transitions`` table (notes left out), a plan's the plan-state rows of ``plan_events``. The
watcher reads on from the last row id it read, so no change is skipped or repeated however fast the
run moves, and each event's ``previous`` is the state its row says the run left. A run event's
``seq`` is its row's id.

``done`` is true when the run rests in that state: it will not leave it unless a person or a verb
moves it. A run rests once no live bosun process holds it (its run lock, its plan's lock, or, for a
run just prepared, the process that created it), or once it is cleaned. The process that moves a run
holds its lock from the first step of a verb to the last, so ``done`` is never said of a state the
run is about to leave (``approved`` on the way to ``integrated``). Which is why a state a run can
rest in is printed once that is known: when the run has moved on (``done`` false) or rests there
(``done`` true). ``working`` is printed at once: a run never rests there but for a crash.

Without run ids the watcher follows one repository's runs and plans (or all), starting with the
history of those in flight, until interrupted or, with ``until_idle``, until nothing is in flight.
With run ids it prints their whole history and stops once each of them rests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import states

if TYPE_CHECKING:
    from bosun.store.db import Store
    from bosun.store.run import Run

RUNNING_PLAN = frozenset({"running"})
SHOWN_AT_ONCE = frozenset({states.WORKING})  # a run never rests there (but for a crash): no need to wait


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
    key = str(repo) if repo is not None else None
    runs = RunMoves(store, key, list(run_ids or []))
    plans = None if run_ids else PlanMoves(store, key)
    count = 0
    while True:
        events = runs.poll() + (plans.poll() if plans else [])
        for event in events:
            emit(event)
        count += len(events)
        if run_ids and runs.all_rest():
            return count
        if until_idle and not run_ids and runs.all_rest() and not (plans and plans.running):
            return count
        if should_stop is not None and should_stop():
            return count
        time.sleep(poll_s)


class RunMoves:
    """The runs' transitions after a cursor, turned into events; a run's latest one is held back
    until it is known whether the run rests there."""

    def __init__(self, store: Store, repo: str | None, run_ids: list[str]) -> None:
        self.store, self.repo, self.run_ids = store, repo, run_ids
        self.held: dict[str, dict[str, Any]] = {}  # run id -> its latest row, not printed yet
        self.followed: set[str] = set()  # runs whose events were read: those `all_rest` waits for
        if run_ids:
            self.cursor = 0  # the named runs' whole history
            self.backlog: list[dict[str, Any]] = []
            return
        # The runs in flight now, from their first change; then every change recorded from now on.
        self.cursor = store.last_transition_id()
        in_flight = [r.id for r in store.list_runs(limit=1000)
                     if (repo is None or r.repo == repo) and r.state not in states.TERMINAL_STATES
                     and not rests(store, r, self.cursor)]
        self.backlog = store.moves_after(0, in_flight, upto=self.cursor) if in_flight else []

    def poll(self) -> list[dict[str, Any]]:
        rows, self.backlog = self.backlog + self.store.moves_after(self.cursor, self.run_ids, self.repo), []
        if rows:
            self.cursor = max(self.cursor, rows[-1]["id"])
        by_run: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_run.setdefault(row["run_id"], []).append(row)
        out: list[dict[str, Any]] = []
        for run_id in set(by_run) | set(self.held):
            out += self._events(run_id, by_run.get(run_id, []))
        return sorted(out, key=lambda ev: ev["seq"])

    def _events(self, run_id: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        run = self.store.get_run(run_id)
        if run is None:
            return []
        self.followed.add(run_id)
        held = self.held.pop(run_id, None)
        rows = ([held] if held else []) + rows
        out = [_run_event(run, row, done=False) for row in rows[:-1]]  # each was left for the next
        last = rows[-1]
        if rests(self.store, run, last["id"]):
            out.append(_run_event(run, last, done=True))
        elif last["to_state"] in SHOWN_AT_ONCE or self.store.last_transition_id(run_id) != last["id"]:
            out.append(_run_event(run, last, done=False))
        else:
            self.held[run_id] = last  # a live process holds the run in a state it may rest in
        return out

    def all_rest(self) -> bool:
        """Every followed (or named) run rests, with every change of its printed."""
        if self.held or self.backlog:
            return False
        wanted = set(self.run_ids) or self.followed
        for run_id in wanted:
            run = self.store.get_run(run_id)
            if run is not None and not rests(self.store, run, self.cursor):
                return False
        return True


def rests(store: Store, run: Run, seen_up_to: int) -> bool:
    """The run stays in its current state unless a person or a verb moves it: no live bosun process
    holds it, and nothing moved it after the row ``seen_up_to`` (checked last, so a process that took
    and let go of the run meanwhile is noticed)."""
    from bosun.engine import locks
    from bosun.proc import pid_alive

    if run.state in states.TERMINAL_STATES:
        return store.last_transition_id(run.id) <= seen_up_to
    if locks.owner_alive(locks.read_owner(run.id)):
        return False
    if run.plan_id and locks.owner_alive(locks.read_owner(run.plan_id)):
        return False  # the plan's driver moves its runs between verbs
    if run.state == states.PREPARED:
        # Prepared runs are driven under the lock only from their first attempt: until then, by the
        # process that prepared them (delegate, the MCP server).
        made = [t for t in store.transitions(run.id, notes=False) if t["to_state"] == states.PREPARED]
        if made and pid_alive(int(made[-1]["pid"]), None):
            return False
    return store.last_transition_id(run.id) <= seen_up_to


def _run_event(run: Run, row: dict[str, Any], done: bool) -> dict[str, Any]:
    state = row["to_state"]
    current = state == run.state
    return {
        "kind": "run", "id": run.id, "seq": row["id"], "state": state, "previous": row["from_state"],
        "title": run.title, "profile": run.profile, "repo": run.repo, "plan_id": run.plan_id,
        "done": done, "at": row["at"], "reason": row["reason"],
        "error": run.data.error if current and state in ("failed", "blocked", "rejected") else None,
    }


class PlanMoves:
    """The plans' state changes after a cursor (the in-flight plans' history first)."""

    def __init__(self, store: Store, repo: str | None) -> None:
        from bosun.store.plans import PlanStore

        self.plans, self.repo = PlanStore(store), repo
        self.cursor = self.plans.last_event_id()
        in_flight = tuple(p["id"] for p in self.plans.list_plans(limit=200)
                          if (repo is None or p["repo"] == repo) and p["state"] in RUNNING_PLAN)
        self.backlog = self.plans.moves_after(0, plan_ids=in_flight, upto=self.cursor) if in_flight else []
        self.running = set(in_flight)

    def poll(self) -> list[dict[str, Any]]:
        rows, self.backlog = self.backlog + self.plans.moves_after(self.cursor, self.repo), []
        out = []
        for row in rows:
            self.cursor = max(self.cursor, row["id"])
            plan = self.plans.get_plan(row["plan_id"])
            if plan is None:
                continue
            done = row["state"] not in RUNNING_PLAN
            (self.running.discard if done else self.running.add)(plan["id"])
            event: dict[str, Any] = row["data"]  # the plan event's own record: the state it left
            out.append({"kind": "plan", "id": plan["id"], "state": row["state"], "previous": event.get("from"),
                        "title": plan["title"], "repo": plan["repo"], "done": done, "at": row["at"],
                        "reason": row["detail"]})
        return out
