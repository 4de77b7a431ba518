"""The wave driver: runs a plan's waves in order, merges each task's landing into the integration
branch in plan order, checks the plan verify after each wave (``plan_verify.py``: nothing regressed
between waves, everything passes after the last) and lands the result on the source branch.

``drive`` holds the plan's lock (the run lock of the plan id) while it advances the plan, so one
process drives a plan at a time and a dead one is taken over.
"""

from __future__ import annotations

import os
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import states
from bosun.core.errors import BosunError, Busy, Conflict, InvalidTransition
from bosun.core.fileio import write_json_atomic
from bosun.engine import locks
from bosun.engine.integration import record_landing
from bosun.plans import integration as plan_git
from bosun.plans import model
from bosun.plans.ids import check_plan_id, plan_dir, plan_of, wave_base_ref
from bosun.plans.judge import judge_wave
from bosun.plans.plan_verify import PlanChecks
from bosun.plans.runs import discard_run, finish_run, lower_priority
from bosun.plans.task_runner import TaskRunner, WaveContext
from bosun.plans.validate import validated
from bosun.store.db import Store
from bosun.store.plans import PlanStore

if TYPE_CHECKING:
    from bosun.engine.context import RunContext


def drive(ctx: RunContext, plan_id: str, allowed: tuple[str, ...] = (model.RUNNING,), reason: str = "") -> dict[str, Any]:
    """Advance the plan as far as it goes; returns the plan row (state running only if interrupted)."""
    pstore = PlanStore(ctx.store)
    check_plan_id(plan_id)
    try:
        locks.acquire(plan_id)
    except Busy:
        owner = locks.read_owner(plan_id) or {}
        raise Busy(
            f"plan {plan_id} is being run by another bosun process (pid {owner.get('pid')})",
            f"`bosun plan watch {plan_id}` follows it; `bosun plan cancel {plan_id}` stops it",
        ) from None
    try:
        row = pstore.require_plan(plan_id)
        if row["state"] not in allowed:
            raise InvalidTransition(
                f"plan {plan_id} is {row['state']!r}",
                "`bosun plan status` the plan" if row["state"] in (model.SUCCEEDED, model.ABORTED)
                else f"`bosun plan continue {plan_id}` runs a paused, failed or cancelled plan again",
            )
        if row["state"] != model.RUNNING:
            pstore.set_state(plan_id, row["state"], model.RUNNING, reason or "continued")
        elif reason:
            pstore.event(plan_id, "plan", reason, state=model.RUNNING)
        pstore.merge_plan_data(plan_id, pid=os.getpid(), error=None, conflict=None, failed_tasks=None, review=None)
        try:
            driver = WaveDriver(ctx, plan_id)
        except BosunError as exc:
            pstore.merge_plan_data(plan_id, error=exc.to_dict())
            pstore.set_state(plan_id, model.RUNNING, model.FAILED, "cannot run: " + exc.message)
            return pstore.require_plan(plan_id)
        try:
            driver.run()
        except KeyboardInterrupt:
            driver.interrupt()
            raise
        except BosunError as exc:
            driver.stop(model.FAILED, exc.to_dict(), "stopped: " + exc.message)
        finally:
            driver.shutdown()
        return pstore.require_plan(plan_id)
    finally:
        locks.release(plan_id)


class WaveDriver:
    """Advances one plan, wave by wave, in the process that holds its lock."""

    def __init__(self, ctx: RunContext, plan_id: str) -> None:
        self.ctx = ctx
        self.plan_id = plan_id
        self.ps = PlanStore(ctx.store)
        row = self.ps.require_plan(plan_id)
        self.repo = Path(row["repo"])
        self.branch = row["integration_branch"]
        self.profile_flag = row.get("profile")
        self.plan = plan_of(row)
        self.pdir = plan_dir(plan_id)
        (self.pdir / "scratch").mkdir(parents=True, exist_ok=True)
        self.settings = ctx.settings(self.repo)
        self.wave_ref = wave_base_ref(plan_id)
        self.finisher = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bosun-plan-cleanup",
                                           initializer=lower_priority)
        self.finishing: list[Future[Any]] = []
        self.post = ThreadPoolExecutor(max_workers=max(1, self.settings.max_concurrent_runs),
                                       thread_name_prefix="bosun-plan-post", initializer=lower_priority)
        self.pool: ThreadPoolExecutor | None = None
        self.slots = threading.BoundedSemaphore(max(1, self.settings.max_concurrent_runs))
        self.remote_cap: int | None = None

    # -- helpers --------------------------------------------------------------------------------
    def row(self) -> dict[str, Any]:
        return self.ps.require_plan(self.plan_id)

    def cancelled(self) -> bool:
        return self.row()["state"] == model.CANCELLED

    def head(self) -> str:
        head = plan_git.branch_head(self.repo, self.branch)
        if head is None:
            raise BosunError(f"the integration branch {self.branch} is gone", f"`bosun plan abort {self.plan_id}`",
                             code="INTEGRATION_GONE")
        return head

    def stop(self, state: str, error: dict[str, Any] | None, reason: str, **data: Any) -> None:
        """End this drive in ``state`` (unless the plan was cancelled meanwhile)."""
        self.ps.merge_plan_data(self.plan_id, error=error, **data)
        try:
            self.ps.set_state(self.plan_id, model.RUNNING, state, reason)
        except InvalidTransition:
            pass  # cancelled (or aborted) by another process: that state stands

    def shutdown(self) -> None:
        self.shutdown_finisher()
        self.finisher.shutdown(wait=True)
        self.post.shutdown(wait=True)

    # -- the plan ------------------------------------------------------------------------------
    def run(self) -> None:
        waves = validated(self.plan)
        self._ensure_branch()
        self._drop_orphans()
        for n, wave in enumerate(waves, start=1):
            if self.cancelled():
                self._cancel_leftovers()
                return
            tasks = {pt["task_id"]: pt for pt in self.ps.tasks(self.plan_id)}
            todo = [tid for tid in wave if tasks[tid]["state"] != model.T_MERGED]
            last = n == len(waves)
            if todo:
                self.ps.update_plan(self.plan_id, current_wave=n)
                base = self.head()
                self._checks().before_wave(n, last, base)
                self._set_wave_base(base)
                cap, remote_cap, why = self._concurrency(len(todo))
                said = f"wave {n} of {len(waves)}: tasks {', '.join(todo)} from {base[:12]}" + (f" ({why})" if why else "")
                self.ps.event(self.plan_id, "wave", said, state="started", wave=n, tasks=todo, base=base,
                              concurrency=cap)
                self._run_wave(todo, base, cap, remote_cap)
                if self.cancelled():
                    self._cancel_leftovers()
                    return
                if not self._judge_wave(n, todo):
                    return
            if not self._checks().after_wave(n, last, self.head(), self.stop):
                return
        self._land()

    def _ensure_branch(self) -> None:
        row = self.row()
        if plan_git.branch_head(self.repo, self.branch) is not None:
            return
        if any(pt["state"] == model.T_MERGED and pt["merged_commit"] for pt in self.ps.tasks(self.plan_id)):
            raise BosunError(f"the integration branch {self.branch} was deleted but tasks were merged into it",
                             f"`bosun plan abort {self.plan_id}` and run the plan again", code="INTEGRATION_GONE")
        plan_git.create_branch(self.repo, self.branch, row["checkpoint"])

    def _drop_orphans(self) -> None:
        """Runs of this plan no task points at (bosun died between prepare and recording the run)."""
        current = {pt["run_id"] for pt in self.ps.tasks(self.plan_id) if pt["run_id"]}
        for run in self.ctx.store.list_runs(plan_id=self.plan_id, limit=100_000):
            if run.id not in current and run.state not in (states.CLEANED, states.INTEGRATED, states.REPORTED):
                discard_run(self.ctx, run.id, report=False)

    def _set_wave_base(self, base: str) -> None:
        """Point the wave-base ref at the commit this wave's tasks start from.

        The tasks' runs name it as their source branch, so their gates compare against the commit
        they started from while the integration branch moves with each merge (conflicts between
        tasks are the merge's to find, not a gate's).
        """
        plan_git.set_ref(self.repo, self.wave_ref, base)

    def _concurrency(self, tasks: int) -> tuple[int, int | None, str]:
        """How many of the wave's tasks run at once, the cap their remote runs queue under (None: not
        remote), and a note on why.

        Locally that is ``max_concurrent_runs``: this machine's cores and its providers' rate limits.
        A remote profile's workers run on the pool, whose queue holds what its agents cannot take
        yet, so its useful concurrency is the pool's live capacity; ``max_concurrent_runs`` more tasks
        go through their local steps (prepare, ship, apply, verify) meanwhile, so an agent that frees
        a slot finds the next task already queued. Without live agents the local cap stands.
        """
        local = max(1, self.settings.max_concurrent_runs)
        name = self.profile_flag or self.settings.default_profile
        profile = self.settings.profiles.get(name) if name else None
        if profile is None or profile.adapter != "remote":
            return min(local, tasks), None, ""
        from bosun.workers.remote import live_capacity

        capacity = live_capacity(profile)
        if not capacity:
            return min(local, tasks), None, "the remote pool's capacity is unknown: max_concurrent_runs applies"
        cap = capacity + local
        return min(cap, tasks), cap, f"remote pool with {capacity} live slot(s): up to {min(cap, tasks)} at once"

    def _run_wave(self, todo: list[str], base: str, cap: int, remote_cap: int | None) -> None:
        """Run the wave's tasks in parallel, ``cap`` at once; merge each into the integration branch as
        soon as it and every task before it (in plan order) are done, so merges and clean-ups overlap
        the wave."""
        cap = max(1, cap)
        self.remote_cap = remote_cap
        self.slots = threading.BoundedSemaphore(cap)
        self.pool = ThreadPoolExecutor(max_workers=min(len(todo), 2 * cap), thread_name_prefix="bosun-plan-task")
        # Merges run one at a time, in order, on their own (lower-priority) thread and connection.
        merger = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bosun-plan-merge", initializer=lower_priority)
        merges: list[Future[Any]] = []
        try:
            wave = self._wave_context()
            futures = {self.pool.submit(TaskRunner(wave, tid, base).run): tid for tid in todo}
            finished: set[str] = set()
            nxt = 0
            try:
                for fut in as_completed(futures):
                    tid = futures[fut]
                    exc = fut.exception()
                    if exc is not None:
                        err = exc.to_dict() if isinstance(exc, BosunError) else {
                            "code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}", "hint": "this is a bug in bosun"}
                        self.ps.update_task(self.plan_id, tid, state=model.T_FAILED, data={"error": err},
                                            event="stopped: " + err["message"][:300])
                    finished.add(tid)
                    while nxt < len(todo) and todo[nxt] in finished:
                        merges.append(merger.submit(self._merge_if_ready, todo[nxt]))
                        nxt += 1
            except KeyboardInterrupt:
                self.interrupt()
                raise
            for m in merges:
                m.result()  # a failed merge (the integration branch moved under bosun) stops the plan
        finally:
            self.pool.shutdown(wait=True)
            self.pool = None
            merger.shutdown(wait=True)

    def _wave_context(self) -> WaveContext:
        return WaveContext(
            plan_id=self.plan_id, plan=self.plan, repo=self.repo, profile_flag=self.profile_flag,
            wave_ref=self.wave_ref, db_path=self.ctx.store.path, settings_overrides=self.ctx.settings_overrides,
            slots=self.slots, post=self.post, remote_cap=self.remote_cap,
        )

    def _merge_if_ready(self, tid: str) -> None:
        store = Store(self.ctx.store.path)
        try:
            ps = PlanStore(store)
            if ps.require_plan(self.plan_id)["state"] == model.CANCELLED:
                return
            pt = ps.task(self.plan_id, tid)
            if pt["state"] == model.T_READY:
                self._merge_task(pt, store, ps)
        finally:
            store.close()

    def _merge_task(self, pt: dict[str, Any], store: Store, ps: PlanStore) -> None:
        tid, run_id = pt["task_id"], pt["run_id"]
        run = store.require_run(run_id)
        landing = (pt["data"].get("landing") or {}).get("commit")
        head = self.head()
        if landing is None:
            new = head  # nothing to merge (a task that changes no files)
        elif pt["data"].get("merging") and plan_git.is_ancestor(self.repo, landing, head):
            new = head  # merged before bosun died
        else:
            message = f"Merge plan task {tid} (run {run_id}) into {self.branch}"
            try:
                new = plan_git.merge_landing(self.repo, head, landing, run.start_commit, message)
            except plan_git.MergeConflict as exc:
                ps.update_task(
                    self.plan_id, tid, state=model.T_CONFLICT,
                    data={"conflict": {"files": exc.files, "run_id": run_id, "head": head}},
                    event="conflicts with the integration branch in " + ", ".join(exc.files[:10]),
                    event_data={"files": exc.files},
                )
                return
            # Recorded first: after a crash, only a task marked `merging` can already be in the branch.
            ps.update_task(self.plan_id, tid, data={"merging": True})
            plan_git.move_branch(self.repo, self.branch, new, head)
        if run.state == states.APPROVED:
            store.update_run(run_id, merged_commit=new)
            store.merge_data(run_id, plan_id=self.plan_id, plan_task=tid)
            record_landing(store, run_id, landing)
            store.transition(run_id, states.APPROVED, states.INTEGRATED, f"merged into {self.branch} at {new[:12]}")
        ps.update_task(self.plan_id, tid, state=model.T_MERGED, merged_commit=new,
                       event=f"merged into {self.branch} at {new[:12]}", event_data={"commit": new})
        self.finishing.append(self.finisher.submit(finish_run, self.ctx.store.path, self.ctx.settings_overrides, run_id))

    def _judge_wave(self, n: int, todo: list[str]) -> bool:
        return judge_wave(self.ps, self.plan_id, n, todo, self.stop)

    def _confine_verify(self, worktree: Path, home: Path) -> Any:
        # Plan verify runs workers' merged code: confined like every verification.
        from bosun.isolation.verify_commands import verify_confinement

        return verify_confinement(self.repo, worktree, home)

    def _checks(self) -> PlanChecks:
        return PlanChecks(self.ps, self.plan_id, self.plan, self.repo, self.pdir, self.branch, self._confine_verify)

    # -- landing -------------------------------------------------------------------------------
    def _land(self) -> None:
        row = self.row()
        head = self.head()
        if row["no_merge"]:
            self._cleanup_runs()
            plan_git.delete_branch(self.repo, self.wave_ref)
            self.ps.event(self.plan_id, "land", f"not landed (--no-merge): {self.branch} kept at {head[:12]}",
                          state="skipped", commit=head)
            self.stop(model.SUCCEEDED, None, f"all tasks merged into {self.branch}; not landed (--no-merge)")
            return
        branch = row["source_branch"]
        pending = row["data"].get("landing_pending") or {}
        if pending and plan_git.branch_head(self.repo, branch) == pending.get("new"):
            self._landed(row, pending["new"])  # landed before bosun died
            return
        message = self._landing_message(row)
        try:
            final = plan_git.build_final(self.repo, row, head, message, self.pdir / "scratch")
        except Conflict as exc:
            self._refuse(exc)
            return
        if final["merged"] is None:
            self.ps.event(self.plan_id, "land", "the plan changed nothing; nothing to land", state="skipped")
            self._landed(row, None)
            return
        try:
            plan_git.check_land(self.repo, self.plan_id, branch, final["head"], final["merged"])
        except Conflict as exc:
            self._refuse(exc)
            return
        if not self._reverify(row, final["merged"], head):
            return
        self.ps.merge_plan_data(self.plan_id, landing_pending={"old": final["head"], "new": final["merged"]})
        try:
            plan_git.land(self.repo, self.plan_id, branch, final["head"], final["merged"])
        except Conflict as exc:
            self.ps.merge_plan_data(self.plan_id, landing_pending=None)
            self._refuse(exc)
            return
        self._landed(row, final["merged"])

    def _landing_message(self, row: dict[str, Any]) -> str:
        tasks = [pt["task_id"] for pt in self.ps.tasks(self.plan_id)]
        verify = f"plan verify passed ({len(self.plan.verify)} command(s))" if self.plan.verify else "task verify only"
        return (
            f"{self.plan.title}\n\n"
            f"A bosun plan of {len(tasks)} task(s), each delegated to a worker and independently verified,\n"
            f"merged through {self.branch}.\n\n"
            f"Bosun-Plan: {self.plan_id}\n"
            f"Bosun-Tasks: {', '.join(tasks)}\n"
            f"Bosun-Verification: {verify}\n"
        )

    def _reverify(self, row: dict[str, Any], merged: str, integration_head: str) -> bool:
        target = plan_git.reverify_target(self.repo, row, merged, self.pdir / "scratch")
        if plan_git.tree(self.repo, target) == plan_git.tree(self.repo, integration_head) and (
            not self.plan.verify or row["data"].get("verified_head") == integration_head
        ):
            return True  # exactly what was verified after the last wave
        commands = list(self.plan.verify)
        if not commands:
            seen: set[tuple[str, ...]] = set()
            for t in self.plan.tasks:
                for cmd in t.contract.verify if t.contract else []:
                    if tuple(cmd.argv()) not in seen:
                        seen.add(tuple(cmd.argv()))
                        commands.append(cmd)
        if not commands:
            return True
        self.ps.event(self.plan_id, "land", f"re-verifying the merged result {merged[:12]}", state="verifying")
        result = plan_git.verify_commit(self.repo, target, commands, self.pdir, self.plan.title,
                                  confine_to=self._confine_verify)
        write_json_atomic(self.pdir / "reverification.json", result)
        if result["passed"]:
            return True
        msg = "verification failed on the plan merged with your branch; your branch was not changed"
        self.stop(model.FAILED, {"code": "REVERIFY_FAILED", "message": msg,
                             "hint": f"see {self.pdir / 'reverification.json'}; merge {self.branch} by hand, or "
                                     f"`bosun plan continue {self.plan_id}` after fixing your branch"}, msg)
        return False

    def _refuse(self, exc: BosunError) -> None:
        self.ps.event(self.plan_id, "land", exc.message, state="refused", code=exc.code)
        self.stop(model.PAUSED, exc.to_dict(), "landing refused: " + exc.message)

    def _landed(self, row: dict[str, Any], merged: str | None) -> None:
        if merged:
            self.ps.update_plan(self.plan_id, merged_commit=merged)
            self.ps.event(self.plan_id, "land", f"landed on {row['source_branch']} at {merged[:12]}",
                          state="landed", commit=merged)
        self._cleanup_runs()
        plan_git.delete_branch(self.repo, self.branch)
        plan_git.delete_branch(self.repo, self.wave_ref)
        self.ps.merge_plan_data(self.plan_id, landing_pending=None)
        shutil.rmtree(self.pdir / "scratch", ignore_errors=True)
        where = f"landed on {row['source_branch']}" if merged else "nothing to land"
        self.stop(model.SUCCEEDED, None, where)

    def _cleanup_runs(self) -> None:
        self.shutdown_finisher()
        for run in self.ctx.store.list_runs(plan_id=self.plan_id, limit=100_000):
            if run.state != states.CLEANED:
                discard_run(self.ctx, run.id)

    def shutdown_finisher(self) -> None:
        for f in self.finishing:
            try:
                f.result()
            except Exception:  # noqa: BLE001 - a clean-up that failed leaves a worktree `plan abort` removes
                pass
        self.finishing = []

    # -- cancellation --------------------------------------------------------------------------
    def _cancel_leftovers(self) -> None:
        """The plan was cancelled: drop every unmerged run (records kept); merged work stays."""
        self.shutdown_finisher()
        for pt in self.ps.tasks(self.plan_id):
            if pt["state"] == model.T_MERGED:
                continue
            if pt["run_id"]:
                discard_run(self.ctx, pt["run_id"])
            if pt["state"] not in (model.T_PENDING, model.T_CANCELLED):
                self.ps.update_task(self.plan_id, pt["task_id"], state=model.T_CANCELLED, event="plan cancelled")

    def interrupt(self) -> None:
        """Ctrl-C: cancel the plan, stop the workers, keep what was merged."""
        from bosun.engine import teardown

        try:
            self.ps.set_state(self.plan_id, model.RUNNING, model.CANCELLED, "interrupted (Ctrl-C)")
        except InvalidTransition:
            pass  # another process cancelled or aborted it first: that state stands
        for pt in self.ps.tasks(self.plan_id):
            run = self.ctx.store.get_run(pt["run_id"]) if pt["run_id"] else None
            if run and run.state == states.WORKING:
                try:
                    teardown.cancel(self.ctx, run.id)
                except BosunError:
                    pass  # it stopped on its own meanwhile; the leftovers below are discarded either way
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None
        self._cancel_leftovers()
