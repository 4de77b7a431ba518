"""Integration: land an approved run's change on the user's branch, safely.

The git side is two calls below the engine (``isolation/landing.py``): ``build_landing`` makes the
landing commit of exactly the approved tree, merges it onto the branch's tip, checks the user's
uncommitted files and verifies the merged result again; ``move_branches`` moves the branch. Between
them this module decides: a re-verification that failed stops the run, and the branch stays where
it was. It also records the landing (``record_landing``) and writes the commit message.

Both calls run holding the branch's landing queue (engine/landing_queue.py), so bosun's landings on
one branch follow each other, each built on the tip the one before left and verified there. The
landing is recorded (``landing_pending``) before the branch moves: a process killed after the move
leaves a landing the next ``integrate`` finishes instead of making again. The branch moved inside
the window by anyone but bosun's recorded landings is refused, as before the queue.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths, states
from bosun.core.contract import TaskContract
from bosun.core.errors import BosunError, Conflict, Rejected
from bosun.core.fileio import read_json
from bosun.engine import landing_queue, record
from bosun.engine.stops import RunStopped, stopping

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.isolation.landing import Landing
    from bosun.store.db import Store
    from bosun.store.run import Run


def commit_message(run: Run, task: TaskContract, verification: dict[str, Any]) -> str:
    cmds = verification.get("commands", [])
    if verification.get("passed"):
        verdict = f"passed ({len(cmds)} command{'s' if len(cmds) != 1 else ''})"
    else:
        verdict = "none (waived)"
    profile = run.profile or "unknown"
    return (
        f"{task.title}\n\n"
        f"Delegated to a worker by bosun and independently verified.\n\n"
        f"Bosun-Run: {run.id}\n"
        f"Bosun-Worker: {profile}\n"
        f"Bosun-Verification: {verdict}; diff sha256 {run.diff_sha256}\n"
    )


def record_landing(store: Store, run_id: str, landing: str | None, reverified: bool | None = None) -> None:
    """The commit that carried the run's change onto a branch (integrate's, or a plan's merge): what
    ``bosun revert`` undoes. This module is the one writer of ``landing_commit``."""
    store.merge_data(run_id, landing_commit=landing, reverified=reverified)


def refused(ctx: RunContext, run: Run, exc: Conflict) -> None:
    """A refused landing is recorded on the run (the branch did not move): `show`, `list` and the
    dashboard say "landing refused" with the reason and what to do, not "approved"."""
    import time

    ctx.store.write(run, landing_refused={**exc.to_dict(), "at": time.time()})
    ctx.store.note(run.id, f"integrate refused ({exc.code}): {exc.message[:200]}")


def integrate_run(ctx: RunContext, run: Run, task: TaskContract, reverify: bool) -> None:
    run_id = run.id
    scratch = paths.run_dir(run_id) / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)

    tree = run.data.verified_tree
    if not tree or tree != run.data.approved_tree:
        ctx.store.transition(run_id, states.APPROVED, states.REJECTED, "approved tree missing or changed")
        raise Rejected(f"{run_id} has no approved tree to land", "run `bosun verify` and approve again",
                       code="DIFF_CHANGED")
    # bosun's landings on this branch queue here: each one reads the tip it builds on only once the one
    # before it has moved the branch (engine/landing_queue.py).
    try:
        with landing_queue.held(Path(run.repo), run.source_branch, run_id):
            done = _landed_before(run)
            if done is None:
                found = _land(ctx, run, task, reverify, scratch)
                done = (found.merged, found.landing)
    except Conflict as exc:
        refused(ctx, run, exc)
        raise
    merged, landing = done
    ctx.store.update_run(run_id, merged_commit=merged)
    if run.data.landing_refused:
        ctx.store.write(run, landing_refused=None)  # the refusal is history now (kept in the transitions)
    record_landing(ctx.store, run_id, landing, reverified=bool(reverify and task.verify))
    ctx.store.write(run, landing_pending=None)
    if run.data.revert_of:
        from bosun.engine.undo_record import revert_run_landed

        revert_run_landed(ctx.store, run, landing)
    ctx.store.transition(run_id, states.APPROVED, states.INTEGRATED,
                         f"merged into {run.source_branch} at {merged[:12]}")


# A landing built again this many times, each time on a tip bosun's own landings moved, gives up.
MAX_REBUILDS = 5


def _land(ctx: RunContext, run: Run, task: TaskContract, reverify: bool, scratch: Path) -> Landing:
    """Build, verify and move, holding the branch's queue. A move of the branch in between that only
    bosun's recorded landings made (one that did not queue) is built on again and verified there;
    anyone else's is refused, the branch left where they put it."""
    from bosun.isolation.git import resolve_commit
    from bosun.isolation.landing import move_branches

    for _ in range(MAX_REBUILDS):
        found = _build(ctx, run, task, reverify, scratch)
        # Recorded before the branch moves: a landing killed half-way is finished, never made twice
        # (_landed_before), and a landing waiting its turn knows this move for bosun's own.
        ctx.store.write(run, landing_pending={"branch": run.source_branch, "head": found.head,
                                              "merged": found.merged, "landing": found.landing})
        try:
            move_branches(run, found)
            return found
        except BosunError:
            tip = resolve_commit(run.repo, f"refs/heads/{run.source_branch}")
            if not landing_queue.moved_by_bosun(ctx.store, Path(run.repo), found.head, tip):
                raise
        record.EventLog(paths.run_dir(run.id) / record.EVENTS).append(_note(
            f"{run.source_branch} moved to another landing of bosun's ({tip[:12]}) while this one was "
            "checked: built again on it"))
    raise Conflict(f"{run.source_branch} kept moving while bosun landed run {run.id}",
                   f"run `bosun integrate {run.id}` again once the branch is quiet", code="BRANCH_BUSY")


def _build(ctx: RunContext, run: Run, task: TaskContract, reverify: bool, scratch: Path) -> Landing:
    """What would land on the branch's tip now, re-verified there when asked; a failed re-verification
    stops the run rejected with the branch unchanged."""
    from bosun.isolation.landing import BOSUN_IDENT, build_landing

    rdir = paths.run_dir(run.id)
    verification = read_json(rdir / record.VERIFICATION, {}) or {}
    try:
        found = build_landing(run, task, approved_diff_sha256=run.data.approved_diff_sha256,
                              message=commit_message(run, task, verification), scratch=scratch, reverify=reverify)
    except Rejected as exc:
        if exc.code == "DIFF_CHANGED":
            ctx.store.transition(run.id, states.APPROVED, states.REJECTED, "diff changed after approval")
        raise
    if found.ident == BOSUN_IDENT:
        note = ("no git identity is set (user.name, user.email), so the landing commit is authored "
                "bosun <bosun@localhost>; `git config user.name ...` and `git config user.email ...` change that")
        record.EventLog(rdir / record.EVENTS).append(_note(note))
        ctx.store.merge_data(run.id, landing_author_note=note)
    if found.reverification is not None:
        record.write_doc(run.id, "reverification.json", found.reverification)
        if not found.reverification["passed"]:
            with stopping(ctx, run):
                raise RunStopped(states.REJECTED, Rejected(
                    f"verification failed on the merged result of {run.id}; your branch was not changed",
                    "the source branch changed underneath the run: see reverification.json in the run "
                    "directory, and re-run the task on the current branch", code="REVERIFY_FAILED"),
                    "re-verification on the merged result failed")
    return found


def _landed_before(run: Run) -> tuple[str, str] | None:
    """``(merged, landing)`` of the landing a process that died after moving the branch recorded
    before moving it: when the branch holds it, the change is there already and only its record is
    missing."""
    from bosun.isolation.git import git

    pending = run.data.landing_pending
    if not pending or pending.get("branch") != run.source_branch:
        return None
    merged = str(pending["merged"])
    there = git(["merge-base", "--is-ancestor", merged, f"refs/heads/{run.source_branch}"], run.repo, check=False)
    return (merged, str(pending["landing"])) if there.returncode == 0 else None


def _note(text: str) -> dict[str, Any]:
    from bosun.workers.base import ev_message

    return ev_message(text, role="system")
