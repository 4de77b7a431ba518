"""The loop that advances a run through its states.

Each public function is one CLI verb. It takes the run lock, checks the current state against the
transition table (via ``Store.transition``), does its work, and records the outcome on disk and in
the store. Phase failures that the user must act on are raised as ``BosunError`` after the run's
state has been recorded.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bosun import paths
from bosun import states as S
from bosun.config import Settings, load_settings
from bosun.contract import Mode, TaskContract
from bosun.engine import locks, record
from bosun.engine.budget import check_before_dispatch
from bosun.errors import BadInput, BosunError, InvalidTransition, Rejected, TimedOut
from bosun.fileio import write_bytes_atomic
from bosun.isolation import gitwatch
from bosun.isolation.lingering import boot_clock
from bosun.store.db import Store


@dataclass
class Ctx:
    """What every verb needs: the store and (lazily) the settings of the run's repo."""

    store: Store
    settings_overrides: dict[str, Any] | None = None

    def settings(self, repo: Path) -> Settings:
        return load_settings(repo, self.settings_overrides)


def new_run_id() -> str:
    # os.urandom rather than `secrets`: same randomness, without its import on every delegate.
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(3).hex()


# ---------------------------------------------------------------------------------------------
# prepare


def prepare(
    ctx: Ctx,
    task: TaskContract,
    repo_path: Path,
    profile_name: str | None = None,
    wait: bool = False,
    plan_id: str | None = None,
    task_source: str | None = None,
    carry_uncommitted: bool = True,
    warm_tokenizer: bool = False,
) -> dict[str, Any]:
    """Validate everything, then create the run, its snapshot and its worktree.

    ``warm_tokenizer`` starts loading the receipt's tokenizer while git checks out the worktree
    (the load holds the interpreter lock; a git subprocess does not need it).

    ``carry_uncommitted=False`` starts the worktree from ``task.base`` exactly (plans do this: their
    tasks start from the integration branch, which already holds the user's snapshot).
    """
    from bosun.engine.heldout import holdout_paths, strip_holdout
    from bosun.engine.preflight import check_task
    from bosun.isolation import git as g
    from bosun.isolation.change import create_view
    from bosun.isolation.snapshot import snapshot_commit, uncommitted_state
    from bosun.isolation.worktree import create_worktree

    # Everything that can be known to fail is checked before anything is created (exit 2, all problems).
    pf = check_task(task, repo_path, profile_name, ctx.store, overrides=ctx.settings_overrides)
    pf.raise_if_failed()
    assert pf.repo is not None and pf.base is not None and pf.settings is not None and pf.choice is not None
    repo, base, settings, choice = pf.repo, pf.base, pf.settings, pf.choice
    source_branch = g.current_branch(repo)
    check_before_dispatch(ctx.store, settings, task, str(repo), plan_id)
    head = g.head_commit(repo)

    if task.holdout and not holdout_paths(repo, base, task.holdout):
        raise BadInput(f"holdout {task.holdout} matches no file at {task.base}",
                       "name files committed in the repository (globs as in scope and locked)")

    run_id = new_run_id()
    rdir = paths.run_dir(run_id)
    wt = paths.worktree_dir(run_id)
    branch = f"bosun/{run_id}"
    scratch = rdir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)

    # One scan of the user's tree serves both the snapshot decision and SOURCE_CHANGED later.
    uncommitted = uncommitted_state(repo)
    # The user's uncommitted work only makes sense on top of their HEAD.
    carry = carry_uncommitted and base == head and bool(uncommitted)
    snapshot = snapshot_commit(repo, base, scratch, known_dirty=True) if carry else None
    full_start = snapshot or base
    start, hidden = strip_holdout(repo, full_start, task.holdout, scratch) if task.holdout else (full_start, [])

    run = {
        "id": run_id,
        "state": S.PREPARED,
        "title": task.title,
        "repo": str(repo),
        "source_branch": source_branch,
        "base": base,
        "start_commit": start,
        "branch": branch,
        "worktree": str(wt),
        "profile": choice.profile.name,
        "profile_reason": choice.reason,
        "plan_id": plan_id,
        "data": {
            "snapshot": bool(snapshot),
            "mode": task.mode.value,
            "task_source": task_source,
            "source_head_at_start": head,
            "uncommitted_at_start": uncommitted,
            "routing": choice.to_dict(),
            **({"holdout": {"paths": hidden, "full_start": full_start}} if hidden else {}),
            "caller": os.environ.get("PARENT_AGENT") or None,
        },
    }
    record.write_doc(run_id, record.TASK, {"run_id": run_id, "task": task.model_dump(mode="json")})
    with locks.concurrency_slot(ctx.store.count_active, settings.max_concurrent_runs, wait):
        ctx.store.insert_run(run, prompt=task.prompt)
    if warm_tokenizer:
        from bosun.metrics import preload_tokenizer

        preload_tokenizer()
    try:
        create_worktree(repo, wt, branch, start)
        view = create_view(rdir, wt, repo, start)
    except BosunError as exc:
        _fail(ctx, run_id, S.PREPARED, f"worktree creation failed: {exc.message}")
        raise
    ctx.store.merge_data(run_id, view_objects=str(view.objects))
    return ctx.store.require_run(run_id)


def load_task(run_id: str) -> TaskContract:
    doc = record.read_doc(run_id, record.TASK)
    if not doc:
        raise BadInput(f"run {run_id} has no task.json", "the run directory is damaged; discard the run")
    return TaskContract.model_validate(doc["task"])


def _fail(ctx: Ctx, run_id: str, expected: str, reason: str, to: str = S.FAILED) -> None:
    ctx.store.merge_data(run_id, error={"code": to.upper(), "message": reason, "hint": ""})
    ctx.store.transition(run_id, expected, to, reason)


# ---------------------------------------------------------------------------------------------
# work


RESUMABLE_FROM = (S.PREPARED, S.VERIFIED, S.REJECTED, S.FAILED, S.BLOCKED, S.WORKED)


def work(
    ctx: Ctx,
    run_id: str,
    resume: str | None = None,
    profile_name: str | None = None,
    on_event: Any = None,
) -> dict[str, Any]:
    """Run the worker (with fallbacks) in the run's worktree. Ends worked, failed, blocked or cancelled."""
    from bosun.engine.attempts import run_attempts
    from bosun.engine.baseline import start_baseline

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run["state"] not in RESUMABLE_FROM:
            raise InvalidTransition(
                f"run {run_id} is {run['state']!r}; work needs a prepared run (or verified/rejected/failed to revise)",
                "`bosun show` the run",
            )
        if resume is not None and run["state"] == S.PREPARED:
            raise BadInput("--resume continues an earlier worker session; this run has none yet", "run `bosun work` first")
        repo = Path(run["repo"])
        settings = ctx.settings(repo)
        task = load_task(run_id)
        check_before_dispatch(ctx.store, settings, task, run["repo"], run.get("plan_id"), run_id)
        ctx.store.transition(run_id, run["state"], S.WORKING, "revise: " + resume[:200] if resume else "worker started")
        ctx.store.merge_data(run_id, bosun_pid=os.getpid(), error=None, cancel_requested=False)
        watch = gitwatch.take(repo)
        began = boot_clock()
        baseline = start_baseline(run, task, settings.baseline)
        try:
            outcome = run_attempts(ctx, settings, run, task, resume=resume, profile_name=profile_name, on_event=on_event)
            ctx.store.merge_data(run_id, worker_window=[began, boot_clock()])
            _check_user_git(ctx, run_id, watch)
            if baseline is not None and outcome.result.status == "ok":
                baseline.wait()
            elif baseline is not None:
                # Only a change that will be verified needs the proof: a failed or cancelled worker's
                # baseline is stopped (cancel stays prompt, and nothing of it outlives the run).
                baseline.stop()
        except BaseException as exc:
            # bosun itself is going down (KeyboardInterrupt, a bug): leave the run recoverable.
            if baseline is not None:
                baseline.stop()
            current = ctx.store.require_run(run_id)["state"]
            if current == S.WORKING:
                reason = "interrupted: " + (type(exc).__name__)
                ctx.store.transition(run_id, S.WORKING, S.INTERRUPTED, reason)
            raise
        return _finish_work(ctx, run_id, outcome)


def _check_user_git(ctx: Ctx, run_id: str, watch: tuple[Path, gitwatch.Snapshot]) -> None:
    """Compare the user's git dir with what it was before the worker; put back what changed.

    The run is marked: verification turns the finding into the USER_GIT_TAMPERED gate."""
    common, before = watch
    changed = gitwatch.changes(common, before)
    if not changed:
        return
    failed = gitwatch.restore(common, before, changed)
    restored = [c for c in changed if c not in failed]
    message = "the worker changed the repository's git dir: " + ", ".join(changed[:8])
    if restored:
        message += "; bosun restored " + ", ".join(restored[:8])
    if failed:
        message += "; could NOT restore " + ", ".join(failed[:8]) + " (check them by hand)"
    from bosun.workers.base import ev_message

    record.EventLog(paths.run_dir(run_id) / record.EVENTS).append(ev_message(message, role="system"))
    ctx.store.merge_data(run_id, user_git_tampered={"changed": changed, "restored": restored, "failed": failed})


def _finish_work(ctx: Ctx, run_id: str, outcome: Any) -> dict[str, Any]:
    res = outcome.result
    data: dict[str, Any] = {"worker": res.to_dict(), "usage": outcome.usage.to_dict(), "bosun_pid": None}
    if res.session_id:
        ctx.store.update_run(run_id, session_id=res.session_id, profile=outcome.profile)
    else:
        ctx.store.update_run(run_id, profile=outcome.profile)
    if res.status == "ok":
        ctx.store.merge_data(run_id, **data)
        ctx.store.transition(run_id, S.WORKING, S.WORKED, f"worker finished ({outcome.profile})")
        return ctx.store.require_run(run_id)
    err = {
        "code": (res.error_class.value if res.error_class else res.status).upper(),
        "message": res.error_message or f"worker {res.status}",
        "hint": outcome.hint,
    }
    if res.status == "cancelled":
        err = cancelled_error(run_id)
    ctx.store.merge_data(run_id, error=err, **data)
    if res.status == "cancelled":
        ctx.store.transition(run_id, S.WORKING, S.CANCELLED, "cancelled during work")
        return ctx.store.require_run(run_id)
    to = S.BLOCKED if outcome.blocked else S.FAILED
    ctx.store.transition(run_id, S.WORKING, to, err["message"][:500])
    if res.status == "timeout":
        raise TimedOut(err["message"], err["hint"] or "raise timeout_s in the task or profile", code="TIMEOUT")
    raise BosunError(err["message"], err["hint"], code=err["code"])


# ---------------------------------------------------------------------------------------------
# verify


def verify(ctx: Ctx, run_id: str) -> dict[str, Any]:
    """Re-run verification and all gates; ends verified or rejected."""
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run["state"] in (S.VERIFIED, S.REJECTED, S.APPROVED):
            ctx.store.transition(run_id, run["state"], S.WORKED, "re-verification requested")
        elif run["state"] != S.WORKED:
            raise InvalidTransition(
                f"run {run_id} is {run['state']!r}; verification needs a worked run", "run `bosun work` first"
            )
        return _verify_worked(ctx, run_id)


def compute_change(run: dict[str, Any]) -> tuple[bytes, list[Any]]:
    """The worker's change as it is on disk now, through bosun's own view (diff, files)."""
    change = scan_change(run)
    return change.diff, change.changes


def scan_change(run: dict[str, Any]) -> Any:
    from bosun.engine.verifying import scan_run

    return scan_run(run)


def _verify_worked(ctx: Ctx, run_id: str) -> dict[str, Any]:
    """Verify exactly the tree bosun computes from the worktree; see :mod:`bosun.engine.verifying`."""
    from bosun.engine.verifying import digest, gates_for_tree, verify_change
    from bosun.isolation.lingering import stop_lingering

    run = ctx.store.require_run(run_id)
    task = load_task(run_id)
    settings = ctx.settings(Path(run["repo"]))
    window = (run.get("data") or {}).get("worker_window")
    killed = stop_lingering(Path(run["worktree"]), tuple(window) if window else None)
    if killed:
        _system_event(run_id, "stopped processes the worker left running before verification: "
                      + ", ".join(killed[:10]))
    from bosun.engine import verdict

    violation = verdict.quarantine_read_only_writes(ctx.store, run, task)  # read-only modes land nothing
    change = scan_change(run)
    verification, extra_gates = verify_change(run, task, change, _tamper_gates(run))
    record.write_doc(run_id, record.VERIFICATION, verification)
    diff, gates = gates_for_tree(run, task, settings, change.tree, verification,
                                 on_disk=not verification.get("skipped"))
    gates = extra_gates + gates
    gates.extend(g for g in (violation, verdict.answer_gate(ctx.store, ctx.store.require_run(run_id), task)) if g)
    sha = digest(diff)
    write_bytes_atomic(paths.run_dir(run_id) / record.DIFF, diff)
    if all(g.ok for g in gates) and task.mode == Mode.code:
        gates.extend(_self_review(ctx, run, task, diff, sha, verification, change.tree))
    record.write_doc(run_id, record.GATES, {"gates": [g.to_dict() for g in gates], "diff_sha256": sha,
                                           "tree": change.tree})
    ctx.store.update_run(run_id, diff_sha256=sha, files_changed=len(change.changes))
    ctx.store.merge_data(run_id, verification_passed=verification["passed"], gates_ok=all(g.ok for g in gates),
                         verified_tree=change.tree)
    failed = [g.code for g in gates if not g.ok]
    if failed:
        ctx.store.merge_data(
            run_id,
            error={
                "code": "GATES_FAILED",
                "message": "rejected by " + ", ".join(failed),
                "hint": f"`bosun show {run_id}` explains each gate; revise with `bosun work {run_id} --resume "
                        "\"what to fix\"`; if a verify command itself is wrong, fix the task and delegate it again",
            },
        )
        ctx.store.transition(run_id, S.WORKED, S.REJECTED, "gates failed: " + ", ".join(failed))
    else:
        ctx.store.merge_data(run_id, error=None)
        ctx.store.transition(run_id, S.WORKED, S.VERIFIED, "verification passed, all gates green")
    return ctx.store.require_run(run_id)


def _system_event(run_id: str, text: str) -> None:
    from bosun.workers.base import ev_message

    record.EventLog(paths.run_dir(run_id) / record.EVENTS).append(ev_message(text, role="system"))


def _tamper_gates(run: dict[str, Any]) -> list[Any]:
    from bosun.changes import GateResult

    found = (run.get("data") or {}).get("user_git_tampered")
    if not found:
        return []
    detail = "the worker changed the repository's git dir (" + ", ".join(found["changed"][:5]) + ")"
    if found.get("restored"):
        detail += "; bosun restored " + ", ".join(found["restored"][:5])
    if found.get("failed"):
        detail += "; NOT restored: " + ", ".join(found["failed"][:5])
    return [GateResult("USER_GIT_TAMPERED", False, detail)]


def _self_review(ctx: Ctx, run: dict[str, Any], task: TaskContract, diff: bytes, digest: str,
                 verification: dict[str, Any], tree: str) -> list[Any]:
    """Run self-review when the profile asks for it. A reviewer that edits files is a red gate, and
    so is an escalated, unparseable or failed review (engine/verdict.py)."""
    from bosun.changes import GateResult
    from bosun.engine.self_review import run_self_review
    from bosun.engine.verdict import self_review_gate

    judged = run_self_review(ctx, run, task, diff, digest, verification)
    if judged is None:
        return []
    ctx.store.merge_data(run["id"], review_escalate=judged["review_escalate"], review_reasons=judged["reasons"],
                         review_usage=judged.get("usage"))
    gates = [g for g in [self_review_gate(judged)] if g]
    if scan_change(run).tree != tree:
        gates.append(GateResult("REVIEW_CHANGED_TREE", False, "the read-only review turn changed files in the worktree"))
    return gates


# ---------------------------------------------------------------------------------------------
# approve


def approve(
    ctx: Ctx, run_id: str, review: dict[str, Any] | None = None, waivers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Approve a green, unchanged diff. Refuses otherwise and says why."""
    from bosun.engine.review import open_blocking_findings, validate_review

    waivers = waivers or {}
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run["state"] not in (S.VERIFIED, S.REJECTED):
            raise InvalidTransition(
                f"run {run_id} is {run['state']!r}; only a verified run can be approved",
                "run `bosun verify` first" if run["state"] == S.WORKED else "`bosun show` the run",
            )
        from bosun.engine.verdict import VERDICT_GATES, refuse_unapprovable
        from bosun.engine.verifying import recheck_gates

        task = load_task(run_id)
        overruled = refuse_unapprovable(run, task, review, waivers)  # read-only modes, self-review
        gates, tampered = recheck_gates(run, task, ctx.settings(Path(run["repo"])))
        if tampered:
            if run["state"] != S.REJECTED:
                ctx.store.transition(run_id, run["state"], S.REJECTED, "records disagree with the verified tree")
            raise Rejected(
                f"cannot approve {run_id}: its records disagree with the tree bosun verified: " + "; ".join(tampered),
                "something rewrote the run's records after verification; run `bosun verify` again",
                code="RECORD_MISMATCH",
            )
        gates_doc = {**(record.read_doc(run_id, record.GATES, {}) or {}), "gates": gates}
        verification = record.read_doc(run_id, record.VERIFICATION, {}) or {}
        problems = []
        if verification.get("passed") is False:
            problems.append("verification failed")
        elif verification.get("passed") is None and "VERIFY_FAILED" not in waivers:
            problems.append("no verification ran (the task has no verify commands); waive VERIFY_FAILED to accept that")
        unknown = set(waivers) - {g["code"] for g in gates} - {"VERIFY_FAILED"}
        if unknown:
            raise BadInput(f"cannot waive unknown gate {sorted(unknown)[0]!r}", "`bosun show` lists this run's gates")
        unwaivable = [g["code"] for g in gates if not g["ok"] and g["code"] in waivers and g["code"] in UNWAIVABLE]
        if unwaivable:
            raise BadInput(f"{unwaivable[0]} cannot be waived: bosun could not compute a faithful change",
                           "discard the run and delegate again")
        red = [g["code"] for g in gates if not g["ok"] and g["code"] not in waivers and g["code"] not in VERDICT_GATES]
        if "VERIFY_FAILED" in red or verification.get("passed") is False:
            red = [c for c in red if c != "VERIFY_FAILED"]
        if red:
            problems.append("gates not green: " + ", ".join(red))
        if review is not None:
            validate_review(review)
            blocking = open_blocking_findings(review)
            if blocking:
                problems.append(f"{len(blocking)} open P0..P2 finding(s) in the review: " + blocking[0])
            if str(review.get("verdict", "")).lower() in ("reject", "rejected", "request_changes"):
                problems.append("the review's verdict is " + str(review.get("verdict")))
        if problems:
            raise Rejected(
                f"cannot approve {run_id}: " + "; ".join(problems),
                "fix and re-verify, or waive a gate with --waive CODE --reason TEXT",
                code="APPROVE_REFUSED",
            )
        digest = run["diff_sha256"]
        if waivers:
            _mark_waived(run_id, gates_doc, waivers)
        ctx.store.merge_data(
            run_id,
            waivers=[{"code": c, "reason": r} for c, r in waivers.items()],
            review=review,
            approved_diff_sha256=digest,
            approved_tree=run["data"].get("verified_tree"),
            self_review_overruled=overruled,
            error=None,
        )
        reason = "approved" + (f" with waivers {', '.join(waivers)}" if waivers else "")
        ctx.store.transition(run_id, run["state"], S.APPROVED, reason)
        return ctx.store.require_run(run_id)


# Refusals that mean bosun has no faithful change to judge: no waiver makes one.
UNWAIVABLE = frozenset({"GIT_POINTER_CHANGED", "NESTED_REPOSITORY", "USER_GIT_TAMPERED"})


def _mark_waived(run_id: str, gates_doc: dict[str, Any], waivers: dict[str, str]) -> None:
    for g in gates_doc.get("gates", []):
        if g["code"] in waivers and not g["ok"]:
            g["waived"] = True
            g["waiver_reason"] = waivers[g["code"]]
    record.write_doc(run_id, record.GATES, gates_doc)


# ---------------------------------------------------------------------------------------------
# integrate / report / cleanup


def integrate(ctx: Ctx, run_id: str, reverify: bool | None = None) -> dict[str, Any]:
    from bosun.engine.integration import integrate_run

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run["state"] != S.APPROVED:
            raise InvalidTransition(
                f"run {run_id} is {run['state']!r}; only an approved run can be integrated",
                "`bosun approve` it first",
            )
        from bosun.engine.verdict import ensure_landable

        task = load_task(run_id)
        ensure_landable(run, task)  # read-only modes never land a change
        settings = ctx.settings(Path(run["repo"]))
        do_reverify = settings.reverify_on_integrate if reverify is None else reverify
        integrate_run(ctx, run, task, do_reverify)
        ctx.store.merge_data(run_id, error=None)
        return ctx.store.require_run(run_id)


def report(ctx: Ctx, run_id: str) -> dict[str, Any]:
    from bosun.engine.run_report import write_report

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        landed = run["state"] == S.INTEGRATED
        write_report(ctx, run)
        if S.can_transition(run["state"], S.REPORTED):
            ctx.store.transition(run_id, run["state"], S.REPORTED, "report written")
        if landed and ctx.settings(Path(run["repo"])).cleanup_after_integrate:
            # The change is on the user's branch and the record is written: the worktree and the
            # bosun/<id> branch are clutter in their repo now. show/diff read the run directory.
            return cleanup(ctx, run_id)
        return ctx.store.require_run(run_id)


CLEANABLE = (S.INTEGRATED, S.REPORTED, S.CANCELLED)


def cleanup(ctx: Ctx, run_id: str, force: bool = False) -> dict[str, Any]:
    """Remove the worktree and branch of an integrated or discarded run."""
    from bosun.isolation.worktree import remove_worktree

    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        if run["state"] == S.CLEANED:
            return run
        if run["state"] not in CLEANABLE and not force:
            raise BadInput(
                f"run {run_id} is {run['state']!r}: its work is not merged; cleanup would delete it",
                "integrate it, `bosun discard` it, or pass --force (the diff stays in the run directory)",
            )
        if not S.can_transition(run["state"], S.CLEANED):
            # Forced cleanup of an unfinished run goes through cancelled, so the history says so.
            ctx.store.transition(run_id, run["state"], S.CANCELLED, "forced cleanup")
            run["state"] = S.CANCELLED
        preserve_diff(run)
        _restore_worktree_pointer(run)
        remove_worktree(Path(run["repo"]), Path(run["worktree"]), run["branch"], delete_branch=True)
        baseline_wt = paths.run_dir(run_id) / "baseline" / "verify-worktree"
        if baseline_wt.exists():  # a baseline that bosun was killed in the middle of
            remove_worktree(Path(run["repo"]), baseline_wt, None, delete_branch=False)
        shutil.rmtree(paths.run_dir(run_id) / "scratch", ignore_errors=True)
        shutil.rmtree(paths.run_dir(run_id) / "home", ignore_errors=True)
        for home in paths.run_dir(run_id).glob("verify-home*"):
            shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(paths.run_dir(run_id) / "view.git", ignore_errors=True)
        baseline_wt = paths.run_dir(run_id) / "baseline" / "verify-worktree"
        if baseline_wt.exists():  # a baseline interrupted by a crash
            remove_worktree(Path(run["repo"]), baseline_wt, None, delete_branch=False)
        shutil.rmtree(paths.run_dir(run_id) / "baseline", ignore_errors=True)
        ctx.store.transition(run_id, run["state"], S.CLEANED, "worktree and branch removed")
        return ctx.store.require_run(run_id)


def _restore_worktree_pointer(run: dict[str, Any]) -> None:
    """A worker may have replaced the worktree's ``.git`` file; git needs bosun's to remove it."""
    from bosun.engine.verifying import view_of
    from bosun.isolation.change import restore_pointer

    if Path(run["worktree"]).is_dir() and (paths.run_dir(run["id"]) / "view.git").is_dir():
        restore_pointer(view_of(run))


def preserve_diff(run: dict[str, Any]) -> None:
    """Save what the worker wrote before its worktree goes away (nothing is lost)."""
    wt = Path(run["worktree"])
    if not wt.exists():
        return
    try:
        diff, _ = compute_change(run)
    except BosunError:
        return  # a worktree bosun cannot read (a refused change): there is no diff to save, only the record
    if diff:
        write_bytes_atomic(paths.run_dir(run["id"]) / "final.patch", diff)


CANCEL_WAIT_S = 10.0  # how long `bosun cancel` waits for the owner of a working run to stop its worker
KILL_WAIT_S = 3.0  # how long a worker group gets after SIGTERM before SIGKILL, when no bosun owns it


def cancelled_error(run_id: str) -> dict[str, str]:
    """The ``error`` of a cancelled run (a cancelled run carries one: it did not finish)."""
    return {
        "code": "CANCELLED",
        "message": "the run was cancelled",
        "hint": f"`bosun discard {run_id}` removes its worktree and branch (its diff stays in the run directory)",
    }


def cancel(ctx: Ctx, run_id: str) -> dict[str, Any]:
    """Stop a running worker (its whole process group) and mark the run cancelled.

    Returns once the worker is gone. When the bosun process that owns a working run has not stopped
    its worker within ``CANCEL_WAIT_S``, raises ``Busy`` (CANCEL_PENDING): the request stands, and
    `bosun show` confirms the cancellation when it lands."""
    run = ctx.store.require_run(run_id)
    if run["state"] == S.WORKING:
        ctx.store.merge_data(run_id, cancel_requested=True)
        pid = run["data"].get("worker_pid")
        owner = locks.read_owner(run_id)
        _signal_group(pid, signal.SIGTERM)
        # The bosun process driving the worker records the cancellation itself; if it is dead we do.
        if not locks.owner_alive(owner):
            _reap_group(pid)
            ctx.store.merge_data(run_id, error=cancelled_error(run_id), worker_pid=None)
            ctx.store.transition(run_id, S.WORKING, S.CANCELLED, "cancelled (no live bosun process)")
            return ctx.store.require_run(run_id)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while time.monotonic() < deadline and ctx.store.require_run(run_id)["state"] == S.WORKING:
            time.sleep(0.05)
        run = ctx.store.require_run(run_id)
        if run["state"] == S.WORKING:
            from bosun.errors import Busy

            raise Busy(
                f"cancel of {run_id} requested; its worker is still stopping",
                f"`bosun show {run_id}` confirms when it is cancelled",
                code="CANCEL_PENDING",
            )
        return run
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        ctx.store.transition(run_id, run["state"], S.CANCELLED, "cancelled")
        ctx.store.merge_data(run_id, error=cancelled_error(run_id))
        return ctx.store.require_run(run_id)


def _signal_group(pid: Any, sig: int) -> bool:
    """Signal a worker's process group; False when it is gone."""
    if not pid:
        return False
    try:
        os.killpg(int(pid), sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _reap_group(pid: Any) -> None:
    """Wait for a signalled worker group to exit; SIGKILL it when it takes longer than KILL_WAIT_S."""
    deadline = time.monotonic() + KILL_WAIT_S
    while _signal_group(pid, 0):
        if time.monotonic() > deadline:
            _signal_group(pid, signal.SIGKILL)
            return
        time.sleep(0.05)


def discard(ctx: Ctx, run_id: str) -> dict[str, Any]:
    run = ctx.store.require_run(run_id)
    if run["state"] in (S.INTEGRATED, S.REPORTED):
        raise BadInput(f"run {run_id} is already integrated; nothing to discard", "use `bosun cleanup`")
    if run["state"] not in (S.CANCELLED, S.CLEANED):
        cancel(ctx, run_id)
    run = cleanup(ctx, run_id, force=True)
    ctx.store.merge_data(run_id, error=None)  # discarded on purpose: nothing is wrong with the run now
    return ctx.store.require_run(run_id)


def recover(ctx: Ctx, run_id: str) -> dict[str, Any]:
    """After a crash: a run stuck in ``working`` goes to verification if the worker left a diff,
    back to ``prepared`` otherwise. Nothing the worker wrote is touched."""
    run = ctx.store.require_run(run_id)
    owner = locks.read_owner(run_id)
    if run["state"] == S.WORKING and locks.owner_alive(owner):
        raise BadInput(
            f"run {run_id} is still being worked by a live bosun process (pid {owner['pid']})",  # type: ignore[index]
            "wait for it, or `bosun cancel` it",
        )
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        _kill_orphan_worker(run)
        if run["state"] == S.WORKING:
            ctx.store.transition(run_id, S.WORKING, S.INTERRUPTED, "recover: the bosun process died during work")
            run["state"] = S.INTERRUPTED
        if run["state"] == S.INTERRUPTED:
            diff, _ = compute_change(run)
            if diff:
                ctx.store.transition(run_id, S.INTERRUPTED, S.WORKED, "recover: the worker left a diff")
                return _verify_worked(ctx, run_id)
            ctx.store.transition(run_id, S.INTERRUPTED, S.PREPARED, "recover: no diff; ready to work again")
            return ctx.store.require_run(run_id)
        if run["state"] == S.WORKED:
            return _verify_worked(ctx, run_id)
        raise BadInput(f"run {run_id} is {run['state']!r}; nothing to recover", "`bosun show` the run")


def _kill_orphan_worker(run: dict[str, Any]) -> None:
    pid = run["data"].get("worker_pid")
    if pid:
        try:
            os.killpg(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# ---------------------------------------------------------------------------------------------
# delegate


def delegate(
    ctx: Ctx,
    task: TaskContract,
    repo_path: Path,
    profile_name: str | None = None,
    auto_approve: bool = False,
    wait: bool = False,
    on_event: Any = None,
    task_source: str | None = None,
    on_prepared: Any = None,
) -> dict[str, Any]:
    """prepare + work + verify; with auto_approve also approve + integrate + report when all green."""
    run = prepare(ctx, task, repo_path, profile_name, wait=wait, task_source=task_source, warm_tokenizer=True)
    run_id = run["id"]
    if on_prepared is not None:
        on_prepared(run_id)
    try:
        return _delegate_loop(ctx, run_id, task, auto_approve, on_event)
    finally:
        from bosun.notify import notify_run

        notify_run(ctx, run_id)


def _delegate_loop(ctx: Ctx, run_id: str, task: TaskContract, auto_approve: bool, on_event: Any) -> dict[str, Any]:
    with locks.run_lock(run_id):
        try:
            run = work(ctx, run_id, on_event=on_event)
        except BosunError:
            _safe_report(ctx, run_id)
            raise
        if run["state"] == S.CANCELLED:  # `bosun cancel` stopped the worker: nothing to verify
            _safe_report(ctx, run_id)
            return ctx.store.require_run(run_id)
        run = verify(ctx, run_id)
        if run["state"] == S.VERIFIED and auto_approve and task.mode == Mode.code:
            approve(ctx, run_id)
            integrate(ctx, run_id)
            run = report(ctx, run_id)
        else:
            _safe_report(ctx, run_id)
            run = ctx.store.require_run(run_id)
    return run


def _safe_report(ctx: Ctx, run_id: str) -> None:
    from bosun.engine.run_report import write_report

    write_report(ctx, ctx.store.require_run(run_id))
