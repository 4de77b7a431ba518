"""Integration: land an approved run's change on the user's branch, safely.

The git side is two calls below the engine (``isolation/landing.py``): ``build_landing`` makes the
landing commit of exactly the approved tree, merges it onto the branch's tip, checks the user's
uncommitted files and verifies the merged result again; ``move_branches`` moves the branch. Between
them this module decides: a re-verification that failed stops the run, and the branch stays where
it was. It also records the landing (``record_landing``) and writes the commit message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bosun.core import paths, states
from bosun.core.contract import TaskContract
from bosun.core.errors import Conflict, Rejected
from bosun.core.fileio import read_json
from bosun.engine import record
from bosun.engine.stops import RunStopped, stopping

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
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
    from bosun.isolation.landing import BOSUN_IDENT, build_landing, move_branches

    run_id = run.id
    rdir = paths.run_dir(run_id)
    scratch = rdir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)

    tree = run.data.verified_tree
    if not tree or tree != run.data.approved_tree:
        ctx.store.transition(run_id, states.APPROVED, states.REJECTED, "approved tree missing or changed")
        raise Rejected(f"{run_id} has no approved tree to land", "run `bosun verify` and approve again",
                       code="DIFF_CHANGED")
    verification = read_json(rdir / record.VERIFICATION, {}) or {}
    try:
        found = build_landing(run, task, approved_diff_sha256=run.data.approved_diff_sha256,
                              message=commit_message(run, task, verification), scratch=scratch, reverify=reverify)
    except Rejected as exc:
        if exc.code == "DIFF_CHANGED":
            ctx.store.transition(run_id, states.APPROVED, states.REJECTED, "diff changed after approval")
        raise
    except Conflict as exc:
        refused(ctx, run, exc)
        raise
    if found.ident == BOSUN_IDENT:
        from bosun.workers.base import ev_message

        note = ("no git identity is set (user.name, user.email), so the landing commit is authored "
                "bosun <bosun@localhost>; `git config user.name ...` and `git config user.email ...` change that")
        record.EventLog(rdir / record.EVENTS).append(ev_message(note, role="system"))
        ctx.store.merge_data(run.id, landing_author_note=note)
    if found.reverification is not None:
        record.write_doc(run_id, "reverification.json", found.reverification)
        if not found.reverification["passed"]:
            with stopping(ctx, run):
                raise RunStopped(states.REJECTED, Rejected(
                    f"verification failed on the merged result of {run_id}; your branch was not changed",
                    "the source branch changed underneath the run: see reverification.json in the run "
                    "directory, and re-run the task on the current branch", code="REVERIFY_FAILED"),
                    "re-verification on the merged result failed")
    try:
        move_branches(run, found)
    except Conflict as exc:
        refused(ctx, run, exc)
        raise
    ctx.store.update_run(run_id, merged_commit=found.merged)
    if run.data.landing_refused:
        ctx.store.write(run, landing_refused=None)  # the refusal is history now (kept in the transitions)
    record_landing(ctx.store, run_id, found.landing, reverified=bool(reverify and task.verify))
    if run.data.revert_of:
        from bosun.engine.undo_record import revert_run_landed

        revert_run_landed(ctx.store, run, found.landing)
    ctx.store.transition(run_id, states.APPROVED, states.INTEGRATED,
                         f"merged into {run.source_branch} at {found.merged[:12]}")
