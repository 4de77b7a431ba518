"""Budgets: spending caps checked before a worker starts and enforced while it runs.

Caps (``[budget]`` in the config, and a task's own ``max_usd``):

* ``per_task_usd`` / the task's ``max_usd``: what one run's worker may spend in one ``work``;
* ``per_plan_usd``: every run of the run's plan together;
* ``daily_usd`` / ``monthly_usd``: this repository's runs in the current UTC day / month;
* ``global_daily_usd`` / ``global_monthly_usd``: every repository's runs.

Spend is what the run records say: the cost a CLI reported, else tokens priced at the profile's
prices (``bosun.engine.history``). Before dispatch, a cap that is already reached, or that the task's
``max_usd`` would overrun, refuses with exit 2 and the figures. While the worker runs, its streamed
usage events are priced as they arrive: at ``warn_at`` (80%) of a cap a warning event is recorded
once; at the cap the worker is stopped (its process group is terminated, as for ``bosun cancel``)
and the run ends ``failed`` with ``BUDGET_EXCEEDED``; what it wrote stays in the worktree and is
saved as ``final.patch``. The worker can overshoot by at most the step that crossed the cap.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.config import Profile, Settings
from bosun.core.contract import TaskContract
from bosun.core.errors import BadInput
from bosun.store.db import Store
from bosun.workers.base import ErrorClass, Usage, WorkerResult, ev_message

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.run import Run

LIVE_WRITE_S = 1.0  # live usage goes to the store at most this often (the dashboard reads it)


class BudgetExceeded(BadInput):
    code = "BUDGET_EXCEEDED"


@dataclass
class Cap:
    key: str  # the config key (or "max_usd" for the task's own cap)
    what: str  # for people: "the daily budget of this repository"
    limit: float
    spent: float  # spent in the cap's window before this run's current work


def day_start(now: float) -> float:
    return now - (now % 86400)


def month_start(now: float) -> float:
    t = time.gmtime(now)
    return float(calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0, 0, 0, 0)))


def spent(store: Store, since: float | None = None, repo: str = "", plan_id: str = "", exclude: str = "") -> float:
    from bosun.engine.history import refresh
    from bosun.store.history import facts_since

    refresh(store)
    return sum(f["worker_cost_usd"] for f in facts_since(store, since, repo=repo, plan_id=plan_id) if f["run_id"] != exclude)


def caps_for(store: Store, settings: Settings, task: TaskContract, repo: str, plan_id: str | None = None,
             run_id: str = "", now: float | None = None) -> list[Cap]:
    """Every cap that applies to a run of ``task`` in ``repo``, with what was spent under it so far."""
    b = settings.budget
    now = time.time() if now is None else now
    caps: list[Cap] = []
    if b.per_task_usd is not None:
        caps.append(Cap("per_task_usd", "the per-task budget", b.per_task_usd, 0.0))
    if task.max_usd is not None:
        caps.append(Cap("max_usd", "the task's max_usd", task.max_usd, 0.0))
    if b.per_plan_usd is not None and plan_id:
        caps.append(Cap("per_plan_usd", "this plan's budget", b.per_plan_usd,
                        spent(store, plan_id=plan_id, exclude=run_id)))
    windows = (("daily_usd", b.daily_usd, day_start(now), repo, "today's budget of this repository"),
               ("monthly_usd", b.monthly_usd, month_start(now), repo, "this month's budget of this repository"),
               ("global_daily_usd", b.global_daily_usd, day_start(now), "", "today's budget of all repositories"),
               ("global_monthly_usd", b.global_monthly_usd, month_start(now), "", "this month's budget of all repositories"))
    for key, limit, since, where, what in windows:
        if limit is not None:
            caps.append(Cap(key, what, limit, spent(store, since=since, repo=where, exclude=run_id)))
    return caps


def check_before_dispatch(store: Store, settings: Settings, task: TaskContract, repo: str,
                          plan_id: str | None = None, run_id: str = "") -> list[Cap]:
    """Refuse (exit 2, with the figures) when a cap is reached or the task's ``max_usd`` would overrun
    one; otherwise return the caps for the run's meter."""
    caps = caps_for(store, settings, task, repo, plan_id, run_id)
    for cap in caps:
        if cap.spent >= cap.limit:
            raise BudgetExceeded(
                f"{cap.what} is used up: ${cap.spent:.4f} spent of ${cap.limit:.4f} ({cap.key})",
                f"raise [budget] {cap.key} in bosun.toml or your user config, or wait for the next period",
            )
        if task.max_usd is not None and cap.key != "max_usd" and cap.spent + task.max_usd > cap.limit:
            raise BudgetExceeded(
                f"the task may spend up to ${task.max_usd:.4f} (max_usd), which would exceed {cap.what}: "
                f"${cap.spent:.4f} spent of ${cap.limit:.4f} ({cap.key})",
                f"lower the task's max_usd to ${max(0.0, cap.limit - cap.spent):.4f} or less, or raise [budget] {cap.key}",
            )
    return caps


@dataclass
class Meter:
    """Prices a running worker's usage events against the caps; trips at the first cap reached."""

    store: Store
    run_id: str
    caps: list[Cap]
    warn_at: float = 0.8
    emit: Callable[[dict[str, Any]], None] | None = None
    profile: Profile | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    tripped: Cap | None = None
    warned: set[str] = field(default_factory=set)
    # The user's [notify] command, told of a warning (the run's own terminal state is notified later).
    notify_command: list[str] = field(default_factory=list)
    notify_cwd: Path | None = None
    notify_timeout_s: float = 10.0
    _last_write: float = 0.0

    def start_attempt(self, profile: Profile) -> None:
        self.profile = profile

    def observe(self, ev: dict[str, Any]) -> None:
        if ev.get("type") != "usage":
            return
        step = Usage.from_event(ev)
        self.usage.add(step)
        if step.cost_usd is not None:
            self.cost += float(step.cost_usd)  # the CLI's own figure, used as reported
        elif self.profile is not None:
            from bosun.engine.metrics import cost_usd

            self.cost += cost_usd(step, self.profile.prices)
        self._write_live()
        for cap in self.caps:
            total = cap.spent + self.cost
            if total >= cap.limit and self.tripped is None:
                self.tripped = cap
                self._write_live(force=True)
                self._note(f"budget: {cap.what} reached (${total:.4f} of ${cap.limit:.4f}, {cap.key}); "
                           "stopping the worker", cap, total, "exceeded")
            elif total >= self.warn_at * cap.limit and cap.key not in self.warned:
                self.warned.add(cap.key)
                self._note(f"budget: {total / cap.limit:.0%} of {cap.what} used "
                           f"(${total:.4f} of ${cap.limit:.4f}, {cap.key})", cap, total, "warning")

    def should_stop(self) -> bool:
        return self.tripped is not None

    def or_else(self, other: Callable[[], bool]) -> Callable[[], bool]:
        """A ``should_stop`` that is true at a cap or when ``other`` says so (cancellation)."""
        return lambda: self.should_stop() or other()

    def settle(self, result: WorkerResult, run: Run) -> WorkerResult:
        """After the attempt: a worker stopped at a cap failed with BUDGET_EXCEEDED; its diff is saved."""
        if self.tripped is None:
            return result
        cap = self.tripped
        result.status = "failed"
        result.error_class = ErrorClass.budget_exceeded
        result.error_message = (
            f"stopped at {cap.what}: the worker spent ${self.cost:.4f} "
            f"(${cap.spent + self.cost:.4f} of ${cap.limit:.4f}, {cap.key}); what it wrote is kept in the worktree"
            " and in final.patch"
        )
        _save_diff(run)
        return result

    def _note(self, text: str, cap: Cap, total: float, level: str) -> None:
        budget = {"level": level, "cap": cap.key, "limit_usd": cap.limit, "spent_usd": round(total, 6)}
        if level == "warning" and self.notify_command:
            self._notify({"event": "budget_warning", "run_id": self.run_id, "message": text, "budget": budget})
        if self.emit is None:
            return
        ev = ev_message(text, role="system")
        ev["budget"] = budget
        self.emit(ev)

    def _notify(self, payload: dict[str, Any]) -> None:
        """Run the [notify] command with the warning on stdin, off the worker's event path."""
        import threading

        from bosun.engine.notify import run_command

        cwd = self.notify_cwd or Path.cwd()
        threading.Thread(target=run_command, args=(self.notify_command, payload, cwd, self.notify_timeout_s),
                         daemon=True).start()

    def _write_live(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < LIVE_WRITE_S:
            return
        self._last_write = now
        live = {**self.usage.to_dict(), "cost_usd": round(self.cost, 6)}
        self.store.merge_data(self.run_id, live_usage=live)


def meter_for(ctx: RunContext, settings: Settings, run: Run, task: TaskContract) -> Meter:
    """The meter for one ``work`` of ``run``: caps as of now (the caller sets ``emit``)."""
    caps = caps_for(ctx.store, settings, task, run.repo, run.plan_id, run.id)
    return Meter(ctx.store, run.id, caps, settings.budget.warn_at, notify_command=list(settings.notify.command),
                 notify_cwd=Path(run.repo), notify_timeout_s=settings.notify.timeout_s)


def _save_diff(run: Run) -> None:
    from bosun.engine.teardown import preserve_diff

    preserve_diff(run)
