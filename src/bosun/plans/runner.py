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
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from bosun import paths
from bosun.engine import locks
from bosun.engine import states as S
from bosun.errors import BadInput, BosunError, Busy, Conflict, InvalidTransition, Rejected
from bosun.fileio import write_json_atomic
from bosun.plans import integration as gi
from bosun.plans import model as M
from bosun.plans.validate import PlanInvalid, check_plan, validated
from bosun.store.db import Store
from bosun.store.plans import PlanStore

PLAN_ID_RE = re.compile(r"^p-[a-z0-9][a-z0-9-]{1,61}$")
MAX_STEPS_PER_TASK = 200
# Run states whose next step keeps the run active (counted against the concurrency cap).
ACTIVE_STEPS = (S.PREPARED, S.WORKING, S.WORKED, S.INTERRUPTED)


def check_plan_id(plan_id: str) -> str:
    if not isinstance(plan_id, str) or not PLAN_ID_RE.match(plan_id):
        raise BadInput(
            f"malformed plan id {plan_id!r}",
            "plan ids look like p-20261129-142501-a1b2c3; `bosun plan list` shows them",
        )
    return paths.check_run_id(plan_id)


def new_plan_id() -> str:
    from bosun.engine.lifecycle import new_run_id

    return "p-" + new_run_id()


def plan_dir(plan_id: str) -> Path:
    return paths.bosun_home() / "plans" / check_plan_id(plan_id)


def integration_branch(plan_id: str) -> str:
    return f"bosun/plan/{plan_id}"


def wave_base_ref(plan_id: str) -> str:
    """The branch holding the commit the current wave started from (its runs' source branch)."""
    return f"bosun/plan-base/{plan_id}"


def driver_alive(plan_id: str) -> bool:
    owner = locks.read_owner(plan_id)
    return locks.owner_alive(owner) and bool(owner) and int(owner["pid"]) != os.getpid()  # type: ignore[index]


def _plan_of(row: dict[str, Any]) -> M.Plan:
    return M.parse_plan(row["document"], f"plan {row['id']}")


def profile_problems(plan: M.Plan, settings: Any, flag: str | None, repo: Path | None = None) -> list[M.Problem]:
    """Unknown profiles; with ``repo``, also every task's pre-flight checks (key set, CLI installed,
    verify programs found), each problem once with the tasks it affects."""
    names: list[tuple[str | None, str | None]] = [(None, flag)] if flag else []
    names += [(t.id, t.contract.profile) for t in plan.tasks if t.contract is not None and t.contract.profile]
    out = []
    for task_id, name in names:
        if name and name not in settings.profiles:
            known = ", ".join(sorted(settings.profiles)) or "none defined"
            where = f"task {task_id}" if task_id else "--profile"
            out.append(M.Problem("UNKNOWN_PROFILE", f"{where}: unknown profile {name!r} (known: {known})",
                                 "define it under [profiles.NAME] in bosun.toml", [task_id] if task_id else []))
    if repo is None or out:
        return out
    from bosun.engine.preflight import check_task

    found: dict[tuple[str, str], M.Problem] = {}
    for t in plan.tasks:
        if t.contract is None:
            continue
        # A plan's tasks start from its integration branch, which does not exist yet: no base check.
        pf = check_task(t.contract, repo, flag, settings=settings, check_base=False)
        for problem in pf.problems:
            key = (problem.code, problem.message)
            if key in found:
                found[key].tasks.append(t.id)
            else:
                found[key] = M.Problem(problem.code, problem.message, problem.hint, [t.id])
    for p in found.values():
        if len(plan.tasks) > 1:
            p.message = f"{p.message} (task{'s' if len(p.tasks) > 1 else ''} {', '.join(p.tasks)})"
    return out + list(found.values())


# ---------------------------------------------------------------------------------------------
# start


def start_plan(
    ctx: Any,
    plan: M.Plan,
    repo_path: Path,
    profile: str | None = None,
    no_merge: bool = False,
    on_created: Any = None,
) -> dict[str, Any]:
    """Validate, checkpoint, create the integration branch and the plan record, then drive it."""
    from bosun.isolation import git as g
    from bosun.isolation.snapshot import snapshot_commit

    waves = validated(plan)
    repo = g.repo_root(repo_path)
    source_branch = g.current_branch(repo)  # a detached HEAD is refused here
    head = g.head_commit(repo)
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
            "id": plan_id, "state": M.RUNNING, "title": plan.title, "repo": str(repo),
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
    gi.create_branch(repo, branch, checkpoint)
    return drive(ctx, plan_id, allowed=(M.RUNNING,))


# ---------------------------------------------------------------------------------------------
# drive / continue / resume


def drive(ctx: Any, plan_id: str, allowed: tuple[str, ...] = (M.RUNNING,), reason: str = "") -> dict[str, Any]:
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
                "`bosun plan status` the plan" if row["state"] in (M.SUCCEEDED, M.ABORTED)
                else f"`bosun plan continue {plan_id}` runs a paused, failed or cancelled plan again",
            )
        if row["state"] != M.RUNNING:
            pstore.set_state(plan_id, row["state"], M.RUNNING, reason or "continued")
        elif reason:
            pstore.event(plan_id, "plan", reason, state=M.RUNNING)
        pstore.merge_plan_data(plan_id, pid=os.getpid(), error=None, conflict=None, failed_tasks=None)
        try:
            driver = _Driver(ctx, plan_id)
        except BosunError as exc:
            pstore.merge_plan_data(plan_id, error=exc.to_dict())
            pstore.set_state(plan_id, M.RUNNING, M.FAILED, "cannot run: " + exc.message)
            return pstore.require_plan(plan_id)
        try:
            driver.run()
        except KeyboardInterrupt:
            driver.interrupt()
            raise
        except BosunError as exc:
            driver.stop(M.FAILED, exc.to_dict(), "stopped: " + exc.message)
        finally:
            driver.shutdown()
        return pstore.require_plan(plan_id)
    finally:
        locks.release(plan_id)


def continue_plan(ctx: Any, plan_id: str, fixed: M.Plan | None = None, resume: bool = False) -> dict[str, Any]:
    """Run a paused, failed or cancelled plan again (or one whose process died), optionally with a
    fixed plan file. Merged tasks are never run again; failed and conflicting tasks start afresh."""
    pstore = PlanStore(ctx.store)
    check_plan_id(plan_id)
    row = pstore.require_plan(plan_id)
    if row["state"] in (M.SUCCEEDED, M.ABORTED):
        raise InvalidTransition(f"plan {plan_id} is {row['state']!r}; there is nothing to continue",
                                "start a new plan with `bosun plan run`")
    if row["state"] == M.RUNNING and driver_alive(plan_id):
        raise Busy(f"plan {plan_id} is being run by a live bosun process",
                   f"`bosun plan watch {plan_id}` follows it")
    with locks.run_lock(plan_id):
        if fixed is not None:
            _apply_fixed_plan(ctx, row, fixed)
        _reset_stopped_tasks(ctx, plan_id)
        what = "resumed" if resume else "continued" + (" with a fixed plan" if fixed is not None else "")
        return drive(ctx, plan_id, allowed=(M.RUNNING, M.PAUSED, M.FAILED, M.CANCELLED), reason=what)


def _reset_stopped_tasks(ctx: Any, plan_id: str) -> None:
    pstore = PlanStore(ctx.store)
    for pt in pstore.tasks(plan_id):
        if pt["state"] in (M.T_FAILED, M.T_CONFLICT, M.T_CANCELLED):
            if pt["run_id"]:
                _discard_run(ctx, pt["run_id"])
            pstore.update_task(plan_id, pt["task_id"], state=M.T_PENDING, attempts=0,
                               data={"landing": None, "conflict": None, "error": None},
                               event=f"reset from {pt['state']}: it runs again")


def _apply_fixed_plan(ctx: Any, row: dict[str, Any], fixed: M.Plan) -> None:
    plan_id = row["id"]
    pstore = PlanStore(ctx.store)
    problems, waves = check_plan(fixed)
    problems += profile_problems(fixed, ctx.settings(Path(row["repo"])), row.get("profile"))
    current = {pt["task_id"]: pt for pt in pstore.tasks(plan_id)}
    new_ids = {t.id for t in fixed.tasks}
    for tid, pt in current.items():
        if pt["state"] != M.T_MERGED:
            continue
        if tid not in new_ids:
            problems.append(M.Problem("MERGED_TASK_CHANGED", f"task {tid} is already merged; the fixed plan cannot drop it",
                                      "keep it in the plan unchanged", [tid]))
        elif fixed.task(tid).definition_hash() != pt["definition"]:
            problems.append(M.Problem("MERGED_TASK_CHANGED", f"task {tid} is already merged; the fixed plan cannot change it",
                                      "change only tasks that are not merged yet (add depends to sequence them)", [tid]))
    if problems or waves is None:
        raise PlanInvalid(problems)
    wave_of = {tid: n + 1 for n, wave in enumerate(waves) for tid in wave}
    keep: dict[str, tuple[int, int]] = {}
    inserts = []
    for t in fixed.tasks:
        known = current.get(t.id)
        if known is not None and known["definition"] == t.definition_hash():
            keep[t.id] = (wave_of[t.id], t.index)
        else:
            inserts.append({"task_id": t.id, "position": t.index, "wave": wave_of[t.id], "definition": t.definition_hash()})
    for tid, pt in current.items():
        if tid not in keep and pt["run_id"]:
            _discard_run(ctx, pt["run_id"])
    pstore.apply_fixed(plan_id, keep, inserts, fixed.document, waves)
    write_json_atomic(plan_dir(plan_id) / "plan.json", {"plan_id": plan_id, "document": fixed.document})


def _discard_run(ctx: Any, run_id: str, report: bool = True) -> None:
    """Remove a run's worktree and branch, keeping its record (and its diff, as final.patch)."""
    from bosun.engine import lifecycle

    run = ctx.store.get_run(run_id)
    if run is None or run["state"] == S.CLEANED:
        return
    try:
        if run["state"] == S.WORKING:
            lifecycle.cancel(ctx, run_id)
        elif report and S.can_transition(run["state"], S.REPORTED):
            lifecycle.report(ctx, run_id)
        lifecycle.cleanup(ctx, run_id, force=True)
    except BosunError:
        pass


# ---------------------------------------------------------------------------------------------
# the driver


class _Driver:
    def __init__(self, ctx: Any, plan_id: str) -> None:
        self.ctx = ctx
        self.plan_id = plan_id
        self.ps = PlanStore(ctx.store)
        row = self.ps.require_plan(plan_id)
        self.repo = Path(row["repo"])
        self.branch = row["integration_branch"]
        self.profile_flag = row.get("profile")
        self.plan = _plan_of(row)
        self.pdir = plan_dir(plan_id)
        (self.pdir / "scratch").mkdir(parents=True, exist_ok=True)
        self.settings = ctx.settings(self.repo)
        self.wave_ref = wave_base_ref(plan_id)
        self.finisher = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bosun-plan-cleanup",
                                           initializer=_lower_priority)
        self.finishing: list[Future[Any]] = []
        self.post = ThreadPoolExecutor(max_workers=max(1, self.settings.max_concurrent_runs),
                                       thread_name_prefix="bosun-plan-post", initializer=_lower_priority)
        self.pool: ThreadPoolExecutor | None = None
        self.slots = threading.BoundedSemaphore(max(1, self.settings.max_concurrent_runs))

    # -- helpers --------------------------------------------------------------------------------
    def row(self) -> dict[str, Any]:
        return self.ps.require_plan(self.plan_id)

    def cancelled(self) -> bool:
        return self.row()["state"] == M.CANCELLED

    def head(self) -> str:
        head = gi.branch_head(self.repo, self.branch)
        if head is None:
            raise BosunError(f"the integration branch {self.branch} is gone", f"`bosun plan abort {self.plan_id}`",
                             code="INTEGRATION_GONE")
        return head

    def stop(self, state: str, error: dict[str, Any] | None, reason: str, **data: Any) -> None:
        """End this drive in ``state`` (unless the plan was cancelled meanwhile)."""
        self.ps.merge_plan_data(self.plan_id, error=error, **data)
        try:
            self.ps.set_state(self.plan_id, M.RUNNING, state, reason)
        except InvalidTransition:
            pass  # cancelled (or aborted) by another process: that state stands

    def shutdown(self) -> None:
        for f in self.finishing:
            try:
                f.result()
            except Exception:  # noqa: BLE001 - a cleanup that failed leaves a worktree `abort` removes
                pass
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
            todo = [tid for tid in wave if tasks[tid]["state"] != M.T_MERGED]
            if todo:
                self.ps.update_plan(self.plan_id, current_wave=n)
                base = self.head()
                self._set_wave_base(base)
                self.ps.event(self.plan_id, "wave", f"wave {n} of {len(waves)}: {', '.join(todo)} from {base[:12]}",
                              state="started", wave=n, tasks=todo, base=base)
                self._run_wave(todo, base)
                if self.cancelled():
                    self._cancel_leftovers()
                    return
                if not self._judge_wave(n, todo):
                    return
            if not self._plan_verify(n):
                return
        self._land()

    def _ensure_branch(self) -> None:
        row = self.row()
        if gi.branch_head(self.repo, self.branch) is not None:
            return
        if any(pt["state"] == M.T_MERGED and pt["merged_commit"] for pt in self.ps.tasks(self.plan_id)):
            raise BosunError(f"the integration branch {self.branch} was deleted but tasks were merged into it",
                             f"`bosun plan abort {self.plan_id}` and run the plan again", code="INTEGRATION_GONE")
        gi.create_branch(self.repo, self.branch, row["checkpoint"])

    def _drop_orphans(self) -> None:
        """Runs of this plan no task points at (bosun died between prepare and recording the run)."""
        current = {pt["run_id"] for pt in self.ps.tasks(self.plan_id) if pt["run_id"]}
        for run in self.ctx.store.list_runs(plan_id=self.plan_id, limit=100_000):
            if run["id"] not in current and run["state"] not in (S.CLEANED, S.INTEGRATED, S.REPORTED):
                _discard_run(self.ctx, run["id"], report=False)

    def _set_wave_base(self, base: str) -> None:
        """Point the wave-base ref at the commit this wave's tasks start from.

        The tasks' runs name it as their source branch, so their gates compare against the commit
        they started from while the integration branch moves with each merge (conflicts between
        tasks are the merge's to find, not a gate's).
        """
        gi.set_ref(self.repo, self.wave_ref, base)

    def _run_wave(self, todo: list[str], base: str) -> None:
        """Run the wave's tasks in parallel; merge each into the integration branch as soon as it and
        every task before it (in plan order) are done, so merges and clean-ups overlap the wave."""
        cap = max(1, min(self.settings.max_concurrent_runs, len(todo)))
        self.slots = threading.BoundedSemaphore(cap)
        self.pool = ThreadPoolExecutor(max_workers=min(len(todo), 2 * cap), thread_name_prefix="bosun-plan-task")
        # Merges run one at a time, in order, on their own (lower-priority) thread and connection.
        merger = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bosun-plan-merge", initializer=_lower_priority)
        merges: list[Future[Any]] = []
        try:
            futures = {self.pool.submit(_TaskRunner(self, tid, base).run): tid for tid in todo}
            finished: set[str] = set()
            nxt = 0
            try:
                for fut in as_completed(futures):
                    tid = futures[fut]
                    exc = fut.exception()
                    if exc is not None:
                        err = exc.to_dict() if isinstance(exc, BosunError) else {
                            "code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}", "hint": "this is a bug in bosun"}
                        self.ps.update_task(self.plan_id, tid, state=M.T_FAILED, data={"error": err},
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

    def _merge_if_ready(self, tid: str) -> None:
        store = Store(self.ctx.store.path)
        try:
            ps = PlanStore(store)
            if ps.require_plan(self.plan_id)["state"] == M.CANCELLED:
                return
            pt = ps.task(self.plan_id, tid)
            if pt["state"] == M.T_READY:
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
        elif pt["data"].get("merging") and gi.is_ancestor(self.repo, landing, head):
            new = head  # merged before bosun died
        else:
            message = f"Merge plan task {tid} (run {run_id}) into {self.branch}"
            try:
                new = gi.merge_landing(self.repo, head, landing, run["start_commit"], message)
            except gi.MergeConflict as exc:
                ps.update_task(
                    self.plan_id, tid, state=M.T_CONFLICT,
                    data={"conflict": {"files": exc.files, "run_id": run_id, "head": head}},
                    event="conflicts with the integration branch in " + ", ".join(exc.files[:10]),
                    event_data={"files": exc.files},
                )
                return
            # Recorded first: after a crash, only a task marked `merging` can already be in the branch.
            ps.update_task(self.plan_id, tid, data={"merging": True})
            gi.move_branch(self.repo, self.branch, new, head)
        if run["state"] == S.APPROVED:
            store.update_run(run_id, merged_commit=new)
            store.merge_data(run_id, landing_commit=landing, plan_id=self.plan_id, plan_task=tid)
            store.transition(run_id, S.APPROVED, S.INTEGRATED, f"merged into {self.branch} at {new[:12]}")
        ps.update_task(self.plan_id, tid, state=M.T_MERGED, merged_commit=new,
                       event=f"merged into {self.branch} at {new[:12]}", event_data={"commit": new})
        self.finishing.append(self.finisher.submit(_finish_run, self.ctx.store.path, self.ctx.settings_overrides, run_id))

    def _judge_wave(self, n: int, todo: list[str]) -> bool:
        tasks = {pt["task_id"]: pt for pt in self.ps.tasks(self.plan_id)}
        failed = [t for t in todo if tasks[t]["state"] == M.T_FAILED]
        conflicts = [t for t in todo if tasks[t]["state"] == M.T_CONFLICT]
        other = [t for t in todo if tasks[t]["state"] not in (M.T_MERGED, M.T_FAILED, M.T_CONFLICT)]
        if failed:
            first = tasks[failed[0]]
            err = first["data"].get("error") or {}
            msg = (f"task {failed[0]} failed after {first['attempts']} attempt(s): {err.get('message', 'failed')}"
                   + (f" (and {len(failed) - 1} more failed task(s))" if len(failed) > 1 else ""))
            self.stop(M.FAILED, {"code": "TASK_FAILED", "message": msg,
                                 "hint": f"`bosun plan status {self.plan_id}` shows every attempt; fix the task and "
                                         f"`bosun plan continue {self.plan_id} --plan fixed.yaml`, or "
                                         f"`bosun plan abort {self.plan_id}`"},
                      msg, failed_tasks=failed)
            return False
        if conflicts:
            first = tasks[conflicts[0]]
            files = (first["data"].get("conflict") or {}).get("files", [])
            msg = f"task {conflicts[0]} conflicts with the integration branch in {', '.join(files[:5]) or 'some files'}"
            self.stop(M.PAUSED, {"code": "MERGE_CONFLICT", "message": msg,
                                 "hint": "sequence the conflicting tasks with depends in a fixed plan and "
                                         f"`bosun plan continue {self.plan_id} --plan fixed.yaml`"},
                      msg, conflict={"tasks": conflicts, "files": files, "wave": n})
            return False
        if other:
            # Cancelled tasks (the plan itself was not cancelled: a run was, by hand).
            msg = f"task {other[0]} did not finish ({tasks[other[0]]['state']})"
            self.stop(M.FAILED, {"code": "TASK_STOPPED", "message": msg,
                                 "hint": f"`bosun plan continue {self.plan_id}` runs it again"}, msg)
            return False
        return True

    def _confine_verify(self, worktree: Path, home: Path) -> Any:
        # Plan verify runs workers' merged code: confined like every verification.
        from bosun.engine.verifying import verify_confinement

        return verify_confinement(self.repo, worktree, home)

    def _plan_verify(self, n: int) -> bool:
        if not self.plan.verify:
            return True
        head = self.head()
        if self.row()["data"].get("verified_head") == head:
            return True
        self.ps.event(self.plan_id, "verify", f"plan verify on {self.branch} at {head[:12]}", state="started", wave=n)
        result = gi.verify_commit(self.repo, head, self.plan.verify, self.pdir, self.plan.title,
                                  confine_to=self._confine_verify)
        write_json_atomic(self.pdir / f"verify-wave-{n}.json", result)
        if not result["passed"]:
            failed: dict[str, Any] = next(
                (c for c in result["commands"] if c.get("exit_code") != 0 or c.get("timed_out")), {})
            msg = f"the plan verify failed after wave {n}: {' '.join(failed.get('argv', []))} (exit {failed.get('exit_code')})"
            self.ps.event(self.plan_id, "verify", msg, state="failed", wave=n,
                          output_tail=(failed.get("output_tail") or "")[-2000:])
            self.stop(M.FAILED, {"code": "PLAN_VERIFY_FAILED", "message": msg,
                                 "hint": f"see {self.pdir / f'verify-wave-{n}.json'}; the integration branch "
                                         f"{self.branch} holds the result; fix with a fixed plan and "
                                         f"`bosun plan continue {self.plan_id} --plan fixed.yaml`"}, msg)
            return False
        self.ps.merge_plan_data(self.plan_id, verified_head=head)
        self.ps.event(self.plan_id, "verify", f"plan verify passed on {head[:12]}", state="passed", wave=n)
        return True

    # -- landing -------------------------------------------------------------------------------
    def _land(self) -> None:
        from bosun.isolation.snapshot import uncommitted_paths

        row = self.row()
        head = self.head()
        if row["no_merge"]:
            self._cleanup_runs()
            gi.delete_branch(self.repo, self.wave_ref)
            self.ps.event(self.plan_id, "land", f"not landed (--no-merge): {self.branch} kept at {head[:12]}",
                          state="skipped", commit=head)
            self.stop(M.SUCCEEDED, None, f"all tasks merged into {self.branch}; not landed (--no-merge)")
            return
        branch = row["source_branch"]
        pending = row["data"].get("landing_pending") or {}
        if pending and gi.branch_head(self.repo, branch) == pending.get("new"):
            self._landed(row, pending["new"])  # landed before bosun died
            return
        message = self._landing_message(row)
        try:
            final = gi.build_final(self.repo, row, head, message, self.pdir / "scratch")
        except Conflict as exc:
            self._refuse(exc)
            return
        if final["merged"] is None:
            self.ps.event(self.plan_id, "land", "the plan changed nothing; nothing to land", state="skipped")
            self._landed(row, None)
            return
        if gi.checked_out_branch(self.repo) == branch:
            overlap = sorted(uncommitted_paths(self.repo) & set(final["touched"]))
            if overlap:
                self._refuse(Conflict(
                    "your uncommitted changes overlap the files the plan changes: " + ", ".join(overlap[:5]),
                    f"commit or stash those files, then `bosun plan continue {self.plan_id}`",
                    code="OVERLAPS_UNCOMMITTED"))
                return
        if not self._reverify(row, final["merged"], head):
            return
        self.ps.merge_plan_data(self.plan_id, landing_pending={"old": final["head"], "new": final["merged"]})
        try:
            gi.land(self.repo, branch, final["head"], final["merged"])
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
        target = gi.reverify_target(self.repo, row, merged, self.pdir / "scratch")
        if gi.tree(self.repo, target) == gi.tree(self.repo, integration_head) and (
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
        result = gi.verify_commit(self.repo, target, commands, self.pdir, self.plan.title,
                                  confine_to=self._confine_verify)
        write_json_atomic(self.pdir / "reverification.json", result)
        if result["passed"]:
            return True
        msg = "verification failed on the plan merged with your branch; your branch was not changed"
        self.stop(M.FAILED, {"code": "REVERIFY_FAILED", "message": msg,
                             "hint": f"see {self.pdir / 'reverification.json'}; merge {self.branch} by hand, or "
                                     f"`bosun plan continue {self.plan_id}` after fixing your branch"}, msg)
        return False

    def _refuse(self, exc: BosunError) -> None:
        self.ps.event(self.plan_id, "land", exc.message, state="refused", code=exc.code)
        self.stop(M.PAUSED, exc.to_dict(), "landing refused: " + exc.message)

    def _landed(self, row: dict[str, Any], merged: str | None) -> None:
        if merged:
            self.ps.update_plan(self.plan_id, merged_commit=merged)
            self.ps.event(self.plan_id, "land", f"landed on {row['source_branch']} at {merged[:12]}",
                          state="landed", commit=merged)
        self._cleanup_runs()
        gi.delete_branch(self.repo, self.branch)
        gi.delete_branch(self.repo, self.wave_ref)
        self.ps.merge_plan_data(self.plan_id, landing_pending=None)
        shutil.rmtree(self.pdir / "scratch", ignore_errors=True)
        where = f"landed on {row['source_branch']}" if merged else "nothing to land"
        self.stop(M.SUCCEEDED, None, where)

    def _cleanup_runs(self) -> None:
        self.shutdown_finisher()
        for run in self.ctx.store.list_runs(plan_id=self.plan_id, limit=100_000):
            if run["state"] != S.CLEANED:
                _discard_run(self.ctx, run["id"])

    def shutdown_finisher(self) -> None:
        for f in self.finishing:
            try:
                f.result()
            except Exception:  # noqa: BLE001
                pass
        self.finishing = []

    # -- cancellation --------------------------------------------------------------------------
    def _cancel_leftovers(self) -> None:
        """The plan was cancelled: drop every unmerged run (records kept); merged work stays."""
        self.shutdown_finisher()
        for pt in self.ps.tasks(self.plan_id):
            if pt["state"] == M.T_MERGED:
                continue
            if pt["run_id"]:
                _discard_run(self.ctx, pt["run_id"])
            if pt["state"] not in (M.T_PENDING, M.T_CANCELLED):
                self.ps.update_task(self.plan_id, pt["task_id"], state=M.T_CANCELLED, event="plan cancelled")

    def interrupt(self) -> None:
        """Ctrl-C: cancel the plan, stop the workers, keep what was merged."""
        from bosun.engine import lifecycle

        try:
            self.ps.set_state(self.plan_id, M.RUNNING, M.CANCELLED, "interrupted (Ctrl-C)")
        except InvalidTransition:
            pass
        for pt in self.ps.tasks(self.plan_id):
            run = self.ctx.store.get_run(pt["run_id"]) if pt["run_id"] else None
            if run and run["state"] == S.WORKING:
                try:
                    lifecycle.cancel(self.ctx, run["id"])
                except BosunError:
                    pass
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None
        self._cancel_leftovers()


def _lower_priority() -> None:
    """Run this thread (and the git processes it starts) at a lower CPU priority: book-keeping that
    is off the critical path (reports, clean-ups, landing commits) yields to the tasks' own steps."""
    if not sys.platform.startswith("linux"):
        return  # elsewhere PRIO_PROCESS with a thread id would name a process, not this thread
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass


def _finish_run(db_path: Path, overrides: Any, run_id: str) -> None:
    """Background: report a merged run and remove its worktree (its work is in the integration branch)."""
    from bosun.engine import lifecycle

    store = Store(db_path)
    try:
        ctx = lifecycle.Ctx(store, overrides)
        run = store.get_run(run_id)
        if run and run["state"] == S.INTEGRATED:
            lifecycle.report(ctx, run_id)
        lifecycle.cleanup(ctx, run_id)
    except BosunError:
        pass
    finally:
        store.close()


# ---------------------------------------------------------------------------------------------
# one task, in its own thread


class _TaskRunner:
    """Advances one task until it is ready to merge, failed, or cancelled; each attempt is a run."""

    def __init__(self, driver: _Driver, task_id: str, base: str) -> None:
        self.driver = driver
        self.plan_id = driver.plan_id
        self.task_id = task_id
        self.base = base
        self.spec = driver.plan.task(task_id)
        assert self.spec.contract is not None
        self.contract = self.spec.contract

    def run(self) -> str:
        from bosun.engine.lifecycle import Ctx

        store = Store(self.driver.ctx.store.path)
        self.holding = False
        try:
            self.ctx = Ctx(store, self.driver.ctx.settings_overrides)
            self.ps = PlanStore(store)
            return self._loop()
        finally:
            self._release()
            store.close()

    def _offload(self, fn: Any, *args: Any) -> Any:
        """Run a step that is off the critical path (approval, landing commit) at a lower priority,
        outside the task's slot; this thread waits for it."""
        return self.driver.post.submit(fn, *args).result()

    def _hold(self) -> None:
        """Take one of the wave's slots (the cap) for the steps that keep a run active."""
        if not self.holding:
            self.driver.slots.acquire()
            self.holding = True

    def _release(self) -> None:
        if self.holding:
            self.holding = False
            self.driver.slots.release()

    def _set(self, **kw: Any) -> dict[str, Any]:
        return self.ps.update_task(self.plan_id, self.task_id, **kw)

    def _loop(self) -> str:
        for _ in range(MAX_STEPS_PER_TASK):
            plan = self.ps.require_plan(self.plan_id)
            pt = self.ps.task(self.plan_id, self.task_id)
            run = self.ctx.store.get_run(pt["run_id"]) if pt["run_id"] else None
            if plan["state"] == M.CANCELLED:
                if run is not None:
                    _discard_run(self.ctx, run["id"])
                self._set(state=M.T_CANCELLED, event="plan cancelled")
                return M.T_CANCELLED
            if pt["state"] in (M.T_MERGED, M.T_READY) and (
                pt["state"] == M.T_MERGED or (pt["data"].get("landing") or {}).get("run") == pt["run_id"]
            ):
                return str(pt["state"])
            if run is None or run["state"] in (S.CLEANED, S.CANCELLED):
                self._release()
                if run is not None and run["state"] == S.CANCELLED:
                    _discard_run(self.ctx, run["id"])
                if pt["attempts"] >= self.driver.plan.max_attempts:
                    return self._give_up(pt, run)
                self._hold()
                if self.ps.require_plan(self.plan_id)["state"] == M.CANCELLED:
                    continue  # cancelled while waiting for a slot
                self._new_attempt(pt, run)
                continue
            state = run["state"]
            if state in ACTIVE_STEPS:
                self._hold()
            else:
                self._release()
            if state == S.PREPARED:
                if not Path(run["worktree"]).is_dir():
                    _discard_run(self.ctx, run["id"], report=False)
                    self._set(attempts=max(0, pt["attempts"] - 1), run_id=None,
                              event="its run has no worktree (bosun died while preparing it); preparing again")
                    continue
                self._work(run["id"])
            elif state in (S.WORKING, S.INTERRUPTED):
                self._recover(run)
            elif state == S.WORKED:
                self._call("verify", run["id"])
            elif state == S.VERIFIED:
                self._offload(self._approve, run)
            elif state == S.APPROVED:
                if self._offload(self._build_landing, run):
                    return M.T_READY
            elif state in (S.INTEGRATED, S.REPORTED):
                self._set(state=M.T_READY)
                return M.T_READY
            elif state in (S.REJECTED, S.FAILED, S.BLOCKED):
                done = self._attempt_failed(pt, run)
                if done:
                    return M.T_FAILED
            else:
                raise BosunError(f"run {run['id']} is in an unexpected state {state!r}", "`bosun show` the run")
        raise BosunError(f"task {self.task_id} made no progress", "`bosun plan status` the plan; this is a bug")

    # -- steps ---------------------------------------------------------------------------------
    def _choose_profile(self, pt: dict[str, Any], last: dict[str, Any] | None) -> str | None:
        flag = self.driver.profile_flag
        if pt["attempts"] == 0 or last is None or not last.get("profile"):
            return flag
        settings = self.ctx.settings(self.driver.repo)
        failed = last["profile"]
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

    def _new_attempt(self, pt: dict[str, Any], last: dict[str, Any] | None) -> None:
        from bosun.engine.lifecycle import prepare

        attempt = pt["attempts"] + 1
        try:
            profile = self._choose_profile(pt, last)
            task = self.contract.model_copy(update={"base": self.base})
            run = prepare(self.ctx, task, self.driver.repo, profile, wait=True, plan_id=self.plan_id,
                          task_source=f"plan {self.plan_id} task {self.task_id}", carry_uncommitted=False)
        except BosunError as exc:
            failures = [*(pt["data"].get("failures") or []),
                        {"run": None, "profile": None, "state": "not prepared", "code": exc.code, "message": exc.message}]
            self._set(attempts=attempt, run_id=None, data={"failures": failures, "error": exc.to_dict()},
                      event=f"attempt {attempt} could not start: {exc.message}")
            return
        # The run's source is the wave-base branch: its gates judge it against the commit it started
        # from; `integrated` says it was merged into the integration branch.
        self.ctx.store.update_run(run["id"], source_branch=self.driver.wave_ref)
        profiles = [*(pt["data"].get("profiles") or []), run["profile"]]
        runs = [*(pt["data"].get("runs") or []), run["id"]]
        self._set(state=M.T_RUNNING, run_id=run["id"], attempts=attempt, data={"profiles": profiles, "runs": runs},
                  event=f"attempt {attempt}: run {run['id']} with profile {run['profile']}",
                  event_data={"profile": run["profile"]})

    def _work(self, run_id: str) -> None:
        from bosun.engine.lifecycle import work

        try:
            work(self.ctx, run_id)
        except (InvalidTransition, Busy):
            raise
        except BosunError:
            pass  # the run records why (failed, blocked, timeout)

    def _call(self, verb: str, run_id: str) -> None:
        from bosun.engine import lifecycle

        getattr(lifecycle, verb)(self.ctx, run_id)

    def _recover(self, run: dict[str, Any]) -> None:
        from bosun.engine.lifecycle import recover

        owner = locks.read_owner(run["id"])
        if run["state"] == S.WORKING and locks.owner_alive(owner):
            raise Busy(f"run {run['id']} of task {self.task_id} is being worked by another live process",
                       f"wait for it, or `bosun cancel {run['id']}`")
        recover(self.ctx, run["id"])

    def _approve(self, run: dict[str, Any]) -> None:
        from bosun.engine.lifecycle import approve

        waivers = {}
        if not self.contract.verify:
            if self.contract.mode.value != "code":
                waivers["VERIFY_FAILED"] = f"a {self.contract.mode.value} task changes no files"
            elif self.driver.plan.verify:
                waivers["VERIFY_FAILED"] = "no task-level verify; the plan-level verify runs on the integration branch"
        try:
            approve(self.ctx, run["id"], waivers=waivers)
        except Rejected as exc:
            current = self.ctx.store.require_run(run["id"])
            if current["state"] == S.VERIFIED:
                self.ctx.store.merge_data(run["id"], error=exc.to_dict())
                self.ctx.store.transition(run["id"], S.VERIFIED, S.REJECTED, "approval refused: " + exc.message[:300])

    def _build_landing(self, run: dict[str, Any]) -> bool:
        try:
            commit, digest = gi.build_landing(run, self.contract, self.plan_id, self.task_id)
        except BosunError as exc:
            self.ctx.store.merge_data(run["id"], error=exc.to_dict())
            self.ctx.store.transition(run["id"], S.APPROVED, S.REJECTED, "landing commit failed: " + exc.message[:300])
            return False
        self._set(state=M.T_READY, data={"landing": {"run": run["id"], "commit": commit, "diff_sha256": digest}},
                  event=f"verified and approved; landing {commit[:12] if commit else '(no change)'}")
        return True

    def _attempt_failed(self, pt: dict[str, Any], run: dict[str, Any]) -> bool:
        """Record a failed attempt; discard it and return False (retry) or keep it and return True."""
        from bosun.report import write_report

        err = (run.get("data") or {}).get("error") or {}
        reason = str(err.get("message") or f"run {run['state']}")
        failures = [*(pt["data"].get("failures") or []),
                    {"run": run["id"], "profile": run.get("profile"), "state": run["state"],
                     "code": err.get("code"), "message": reason[:500]}]
        if pt["attempts"] >= self.driver.plan.max_attempts:
            try:
                write_report(self.ctx, run)
            except BosunError:
                pass
            self._set(state=M.T_FAILED, data={"failures": failures, "error": {
                "code": err.get("code") or run["state"].upper(), "message": reason[:500], "hint": err.get("hint", "")}},
                event=f"{run['state']} on attempt {pt['attempts']} of {self.driver.plan.max_attempts}: {reason[:300]}")
            return True
        self._set(data={"failures": failures},
                  event=f"attempt {pt['attempts']} {run['state']} ({run.get('profile')}): {reason[:300]}; retrying")
        _discard_run(self.ctx, run["id"])
        return False

    def _give_up(self, pt: dict[str, Any], run: dict[str, Any] | None) -> str:
        err = pt["data"].get("error") or {"code": "TASK_FAILED", "message": "no attempt left", "hint": ""}
        self._set(state=M.T_FAILED, data={"error": err},
                  event=f"failed after {pt['attempts']} attempt(s): {err.get('message', '')[:300]}")
        return M.T_FAILED


# ---------------------------------------------------------------------------------------------
# cancel / abort


def cancel_plan(ctx: Any, plan_id: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """Stop the plan's running workers (``lifecycle.cancel``) and mark it cancelled; merged work stays
    in the integration branch. Waits for the process driving it to stop, then drops unmerged runs."""
    from bosun.engine import lifecycle

    pstore = PlanStore(ctx.store)
    check_plan_id(plan_id)
    row = pstore.require_plan(plan_id)
    if row["state"] in (M.SUCCEEDED, M.ABORTED):
        raise InvalidTransition(f"plan {plan_id} is {row['state']!r}; there is nothing to cancel", "")
    if row["state"] != M.CANCELLED:
        pstore.set_state(plan_id, (M.RUNNING, M.PAUSED, M.FAILED), M.CANCELLED, "cancelled")
    deadline = time.monotonic() + timeout_s
    while True:
        for pt in pstore.tasks(plan_id):
            run = ctx.store.get_run(pt["run_id"]) if pt["run_id"] else None
            if run and run["state"] == S.WORKING:
                try:
                    lifecycle.cancel(ctx, run["id"])
                except BosunError:
                    pass
        if not driver_alive(plan_id) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if not driver_alive(plan_id):
        with locks.run_lock(plan_id):
            for pt in pstore.tasks(plan_id):
                if pt["state"] != M.T_MERGED and pt["run_id"]:
                    _discard_run(ctx, pt["run_id"])
                if pt["state"] not in (M.T_MERGED, M.T_PENDING, M.T_CANCELLED):
                    pstore.update_task(plan_id, pt["task_id"], state=M.T_CANCELLED, event="plan cancelled")
    return pstore.require_plan(plan_id)


def abort_plan(ctx: Any, plan_id: str) -> dict[str, Any]:
    """Remove every worktree and branch the plan made (run records stay); the plan ends ``aborted``."""
    from bosun.isolation.worktree import remove_worktree

    pstore = PlanStore(ctx.store)
    check_plan_id(plan_id)
    row = pstore.require_plan(plan_id)
    if row["state"] in (M.SUCCEEDED, M.ABORTED):
        raise InvalidTransition(
            f"plan {plan_id} is {row['state']!r}; there is nothing to abort",
            f"its integration branch, if kept, is {row['integration_branch']}: `git branch -D` it yourself"
            if row["state"] == M.SUCCEEDED else "",
        )
    if row["state"] == M.RUNNING and driver_alive(plan_id):
        raise Busy(f"plan {plan_id} is running", f"`bosun plan cancel {plan_id}` first, then abort it")
    with locks.run_lock(plan_id):
        repo = Path(row["repo"])
        for run in ctx.store.list_runs(plan_id=plan_id, limit=100_000):
            if run["state"] != S.CLEANED:
                _discard_run(ctx, run["id"])
        pdir = plan_dir(plan_id)
        remove_worktree(repo, pdir / "verify-worktree", None, delete_branch=False)
        gi.delete_branch(repo, row["integration_branch"])
        gi.delete_branch(repo, wave_base_ref(plan_id))
        shutil.rmtree(pdir / "scratch", ignore_errors=True)
        pstore.set_state(plan_id, row["state"], M.ABORTED,
                         f"aborted: worktrees and branches removed ({row['integration_branch']} deleted)")
        return pstore.require_plan(plan_id)


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
