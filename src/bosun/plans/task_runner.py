"""One task of a plan's wave, in its own thread: attempts (each a run) until it is ready to merge,
failed, or cancelled. It sees the wave through a small :class:`WaveContext`, not the driver."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from bosun.core import states
from bosun.core.errors import BosunError, Busy, InvalidTransition, Rejected
from bosun.engine import locks
from bosun.engine.stops import RunStopped, stopping
from bosun.plans import integration as plan_git
from bosun.plans import model
from bosun.plans.runs import discard_run, note_on_run
from bosun.store.db import Store
from bosun.store.plans import PlanStore

if TYPE_CHECKING:
    from bosun.store.run import Run

MAX_STEPS_PER_TASK = 200
# Run states whose next step keeps the run active (counted against the concurrency cap).
ACTIVE_STEPS = (states.PREPARED, states.WORKING, states.WORKED, states.INTERRUPTED)

T = TypeVar("T")


@dataclass(frozen=True)
class WaveContext:
    """What a task of a wave needs from the process driving the plan."""

    plan_id: str
    plan: model.Plan
    repo: Path
    profile_flag: str | None
    wave_ref: str  # the branch its runs name as their source: the commit the wave started from
    db_path: Path
    settings_overrides: Any
    slots: threading.BoundedSemaphore  # the wave's concurrency cap
    post: ThreadPoolExecutor  # lower-priority threads for steps off the critical path
    remote_cap: int | None = None  # active remote runs allowed at once (the pool's capacity and more)


class TaskRunner:
    """Advances one task until it is ready to merge, failed, or cancelled; each attempt is a run."""

    def __init__(self, wave: WaveContext, task_id: str, base: str) -> None:
        self.wave = wave
        self.plan_id = wave.plan_id
        self.task_id = task_id
        self.base = base
        self.spec = wave.plan.task(task_id)
        assert self.spec.contract is not None
        self.contract = self.spec.contract

    def run(self) -> str:
        from bosun.engine.context import RunContext

        store = Store(self.wave.db_path)
        self.holding = False
        try:
            self.ctx = RunContext(store, self.wave.settings_overrides)
            self.ps = PlanStore(store)
            return self._loop()
        finally:
            self._release()
            store.close()

    def _offload(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a step that is off the critical path (approval, landing commit) at a lower priority,
        outside the task's slot; this thread waits for it."""
        return self.wave.post.submit(fn, *args).result()

    def _hold(self) -> None:
        """Take one of the wave's slots (the cap) for the steps that keep a run active."""
        if not self.holding:
            self.wave.slots.acquire()
            self.holding = True

    def _release(self) -> None:
        if self.holding:
            self.holding = False
            self.wave.slots.release()

    def _set(self, **kw: Any) -> dict[str, Any]:
        return self.ps.update_task(self.plan_id, self.task_id, **kw)

    def _loop(self) -> str:
        for _ in range(MAX_STEPS_PER_TASK):
            plan = self.ps.require_plan(self.plan_id)
            pt = self.ps.task(self.plan_id, self.task_id)
            run = self.ctx.store.get_run(pt["run_id"]) if pt["run_id"] else None
            if plan["state"] == model.CANCELLED:
                if run is not None:
                    discard_run(self.ctx, run.id)
                self._set(state=model.T_CANCELLED, event="plan cancelled")
                return model.T_CANCELLED
            if pt["state"] in (model.T_MERGED, model.T_READY) and (
                pt["state"] == model.T_MERGED or (pt["data"].get("landing") or {}).get("run") == pt["run_id"]
            ):
                return str(pt["state"])
            if run is None or run.state in (states.CLEANED, states.CANCELLED):
                self._release()
                if run is not None and run.state == states.CANCELLED:
                    discard_run(self.ctx, run.id)
                if pt["attempts"] >= self.wave.plan.max_attempts:
                    return self._give_up(pt, run)
                self._hold()
                if self.ps.require_plan(self.plan_id)["state"] == model.CANCELLED:
                    continue  # cancelled while waiting for a slot
                self._new_attempt(pt, run)
                continue
            state = run.state
            if state in ACTIVE_STEPS:
                self._hold()
            else:
                self._release()
            if state == states.PREPARED:
                if not Path(run.worktree).is_dir():
                    discard_run(self.ctx, run.id, report=False)
                    self._set(attempts=max(0, pt["attempts"] - 1), run_id=None,
                              event="its run has no worktree (bosun died while preparing it); preparing again")
                    continue
                self._work(run.id)
            elif state in (states.WORKING, states.INTERRUPTED):
                self._recover(run)
            elif state == states.WORKED:
                self._verify(run.id)
            elif state == states.VERIFIED:
                if self._waits_for_review(run, pt):
                    return model.T_REVIEW  # not merged: the wave ends with it waiting for a person
                self._offload(self._approve, run)
            elif state == states.APPROVED:
                if self._offload(self._build_landing, run):
                    return model.T_READY
            elif state in (states.INTEGRATED, states.REPORTED):
                self._set(state=model.T_READY)
                return model.T_READY
            elif state in (states.REJECTED, states.FAILED, states.BLOCKED):
                done = self._attempt_failed(pt, run)
                if done:
                    return model.T_FAILED
            else:
                raise BosunError(f"run {run.id} is in an unexpected state {state!r}", "`bosun show` the run")
        raise BosunError(f"task {self.task_id} made no progress", "`bosun plan status` the plan; this is a bug")

    # -- steps ---------------------------------------------------------------------------------
    def _choose_profile(self, pt: dict[str, Any], last: Run | None) -> str | None:
        flag = self.wave.profile_flag
        failed = last.profile if last is not None else None
        if pt["attempts"] == 0 or not failed:
            return flag
        settings = self.ctx.settings(self.wave.repo)
        prof = settings.profiles.get(failed)
        if prof is None:
            return flag
        names = sorted(n for n, p in settings.profiles.items() if p.tier == prof.tier)
        i = names.index(failed)
        order = names[i + 1 :] + names[: i + 1]
        cooling = set(self.ctx.store.cooldowns())
        available = [n for n in order if n not in cooling]
        if not available:
            raise BosunError(f"every profile of tier {prof.tier} is in cooldown", "wait for a cooldown to end "
                             f"(`bosun workers`), then `bosun plan continue {self.plan_id}`", code="NO_PROFILE")
        tried = set(pt["data"].get("profiles") or [])
        untried = [n for n in available if n not in tried]
        return (untried or available)[0]

    def _new_attempt(self, pt: dict[str, Any], last: Run | None) -> None:
        from bosun.engine.lifecycle import prepare

        attempt = pt["attempts"] + 1
        try:
            profile = self._choose_profile(pt, last)
            task = self.contract.model_copy(update={"base": self.base})
            run = prepare(self.ctx, task, self.wave.repo, profile, wait=True, plan_id=self.plan_id,
                          task_source=f"plan {self.plan_id} task {self.task_id}", carry_uncommitted=False,
                          remote_cap=self.wave.remote_cap)
        except BosunError as exc:
            failures = [*(pt["data"].get("failures") or []),
                        {"run": None, "profile": None, "state": "not prepared", "code": exc.code, "message": exc.message}]
            self._set(attempts=attempt, run_id=None, data={"failures": failures, "error": exc.to_dict()},
                      event=f"attempt {attempt} could not start: {exc.message}")
            return
        # The run's source is the wave-base branch: its gates judge it against the commit it started
        # from; `integrated` says it was merged into the integration branch.
        self.ctx.store.update_run(run.id, source_branch=self.wave.wave_ref)
        profiles = [*(pt["data"].get("profiles") or []), run.profile]
        runs = [*(pt["data"].get("runs") or []), run.id]
        self._set(state=model.T_RUNNING, run_id=run.id, attempts=attempt, data={"profiles": profiles, "runs": runs},
                  event=f"attempt {attempt}: run {run.id} with profile {run.profile}",
                  event_data={"profile": run.profile})

    def _work(self, run_id: str) -> None:
        from bosun.engine.lifecycle import work

        try:
            work(self.ctx, run_id)
        except (InvalidTransition, Busy):
            raise
        except BosunError:
            pass  # the run records why (failed, blocked, timeout)

    def _verify(self, run_id: str) -> None:
        """Verification with the task's repair rounds and the profile's ladder (engine/repair.py); a repair
        turn whose worker failed is recorded on the run, which this loop then reads as a failed attempt."""
        from bosun.engine.lifecycle import verify_and_repair

        try:
            verify_and_repair(self.ctx, run_id)
        except (InvalidTransition, Busy):
            raise
        except BosunError:
            if self.ctx.store.require_run(run_id).state == states.WORKED:
                raise  # verification itself could not run: not a verdict, and not the worker's
            # else a repair turn's worker failed: the run records why (failed, blocked, timeout)

    def _recover(self, run: Run) -> None:
        from bosun.engine.lifecycle import recover

        owner = locks.read_owner(run.id)
        if run.state == states.WORKING and locks.owner_alive(owner):
            raise Busy(f"run {run.id} of task {self.task_id} is being worked by another live process",
                       f"wait for it, or `bosun cancel {run.id}`")
        recover(self.ctx, run.id)

    def _approve(self, run: Run) -> None:
        from bosun.engine.lifecycle import approve

        waivers = {}
        if not self.contract.verify and self.contract.mode.value != "code":
            waivers["VERIFY_FAILED"] = f"a {self.contract.mode.value} task changes no files"
        # A code task without its own verify commands is not landable (NOT_VERIFIED): it waits for a
        # person (`_waits_for_review`) and never reaches this plan-made approval.
        try:
            approve(self.ctx, run.id, waivers=waivers)
        except Rejected as exc:
            current = self.ctx.store.require_run(run.id)
            if current.state == states.VERIFIED:
                with stopping(self.ctx, current):
                    raise RunStopped(states.REJECTED, exc, "approval refused: " + exc.message[:300], raises=False) from None

    def _waits_for_review(self, run: Run, pt: dict[str, Any]) -> bool:
        """A verified run whose verdict needs a person's review does not land on the plan's say-so: the
        task waits (``needs_review``, with the reasons) until `bosun approve RUN`."""
        from bosun.engine import verdict

        judged = verdict.of_run(run)
        if not verdict.waits_for_a_person(judged):
            return False
        assert judged is not None
        review = {"run": run.id, "verdict_line": verdict.one_line(judged), "reasons": judged["reasons"]}
        again = pt["state"] == model.T_REVIEW and (pt["data"].get("review") or {}).get("run") == run.id
        self._set(state=model.T_REVIEW, data={"review": review}, event=None if again else (
            f"{review['verdict_line']}: waits for a person (`bosun approve {run.id}`, then "
            f"`bosun plan continue {self.plan_id}`)"), event_data={"run": run.id, "codes": verdict.codes(judged)})
        return True

    def _build_landing(self, run: Run) -> bool:
        from bosun.engine.approval import ensure_may_land

        try:
            ensure_may_land(run)  # landable, or its review reasons acknowledged by a person
            commit, digest = plan_git.build_landing(run, self.contract, self.plan_id, self.task_id)
        except BosunError as exc:
            with stopping(self.ctx, run):
                raise RunStopped(states.REJECTED, exc, "landing commit failed: " + exc.message[:300], raises=False) from None
            return False
        self._set(state=model.T_READY, data={"landing": {"run": run.id, "commit": commit, "diff_sha256": digest},
                                             "review": None},
                  event=f"verified and approved; landing {commit[:12] if commit else '(no change)'}")
        return True

    def _attempt_failed(self, pt: dict[str, Any], run: Run) -> bool:
        """Record a failed attempt; discard it and return False (retry) or keep it and return True."""
        from bosun.engine.run_report import write_report

        err = run.data.error or {}
        reason = str(err.get("message") or f"run {run.state}")
        failures = [*(pt["data"].get("failures") or []),
                    {"run": run.id, "profile": run.profile, "state": run.state,
                     "code": err.get("code"), "message": reason[:500]}]
        if pt["attempts"] >= self.wave.plan.max_attempts:
            try:
                write_report(self.ctx, run)
            except BosunError as exc:
                note_on_run(run.id, "could not write the report of this failed attempt", exc)
            self._set(state=model.T_FAILED, data={"failures": failures, "error": {
                "code": err.get("code") or run.state.upper(), "message": reason[:500], "hint": err.get("hint", "")}},
                event=f"{run.state} on attempt {pt['attempts']} of {self.wave.plan.max_attempts}: {reason[:300]}")
            return True
        self._set(data={"failures": failures},
                  event=f"attempt {pt['attempts']} {run.state} ({run.profile}): {reason[:300]}; retrying")
        discard_run(self.ctx, run.id)
        return False

    def _give_up(self, pt: dict[str, Any], run: Run | None) -> str:
        err = pt["data"].get("error") or {
            "code": "TASK_FAILED", "message": "no attempt left",
            "hint": f"raise max_attempts in the plan, then `bosun plan continue {self.wave.plan_id}`"}
        self._set(state=model.T_FAILED, data={"error": err},
                  event=f"failed after {pt['attempts']} attempt(s): {err.get('message', '')[:300]}")
        return model.T_FAILED


