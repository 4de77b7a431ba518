"""``bosun revert RUN``: undo a landed run with one revert commit of exactly its landing commit.

The landing commit (``landing_commit``, written by integration or a plan's merge) is ``base + the
run's change``; its revert is the three-way merge of ``landing -> landing^`` into the tip of the branch
it landed on (:func:`bosun.engine.undo_git.three_way`), committed on that tip. Every refusal comes
before anything changes: an unknown run, a run that never landed or was reverted already, a branch
that is gone or no longer holds the landing, later commits that touch the same lines (named, short sha
and subject), and the user's uncommitted files where the revert would write. The branch then moves as
integration moves it (:func:`bosun.isolation.user_branch.move_branch`); nothing is pushed.

``--onto-worktree`` makes the revert a new run instead: prepared like any run from the branch's tip,
its worktree holding the revert (with conflict markers where later commits touched the same lines),
then verified like any run, so a person reads it and lands it through ``approve`` and ``integrate``.

The record: ``reverted`` on the run (through ``engine/undo_record.py``, which also names the commit when
a revert run lands), ``revert_of`` on a revert run, an
event in each run's ``events.jsonl`` and a note in the run's transition history (its state stays: a
revert is something that happened to the branch after the run ended, not a step of the run).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.errors import BadInput, BosunError, Conflict, InvalidTransition
from bosun.engine import locks, record
from bosun.engine.stops import RunStopped, stopping
from bosun.engine.undo_git import branch_head, commit_on, commits_touching, three_way
from bosun.engine.undo_record import mark_reverted

if TYPE_CHECKING:
    from bosun.engine.context import RunContext
    from bosun.store.run import Run


def revert(ctx: RunContext, run_id: str, onto_worktree: bool = False) -> dict[str, Any]:
    """Revert ``run_id``'s landing commit on its branch (or prepare that revert as a new run).
    Returns ``{"run": the run, "revert": what was done, "revert_run": the new run or None}``."""
    with locks.run_lock(run_id):
        run = ctx.store.require_run(run_id)
        landing = landing_of(ctx, run)
        repo, branch = Path(run.repo), run.source_branch
        head = branch_head(repo, branch)
        _check_on_branch(repo, run, landing, branch, head)
        if onto_worktree:
            return _onto_worktree(ctx, run, landing, head)
        tree, conflicts = _revert_tree(repo, landing, head)
        if conflicts:
            raise _overlapping(repo, run, landing, head, conflicts)
        return _land_revert(ctx, run, landing, head, tree)


def landing_of(ctx: RunContext, run: Run) -> str:
    """The run's landing commit; a run that never landed, or whose revert landed, is refused."""
    landing = run.data.landing_commit
    if not landing or not run.merged_commit:
        raise BadInput(f"run {run.id} never landed on a branch ({run.state}): there is nothing to revert",
                       f"`bosun discard {run.id}` throws away a run that did not land", code="NOT_LANDED")
    done = revert_commit(ctx, run)
    if done:
        raise InvalidTransition(f"run {run.id} was reverted already, by commit {done[:12]}",
                                f"nothing to undo; `bosun show {run.id}` has the record", code="ALREADY_REVERTED")
    return landing


def revert_commit(ctx: RunContext, run: Run) -> str | None:
    """The commit that reverted the run: bosun's revert commit, or the landing of a revert run."""
    rev = run.data.reverted or {}
    if rev.get("commit"):
        return str(rev["commit"])
    other = ctx.store.get_run(rev["run"]) if rev.get("run") else None
    return other.data.landing_commit if other is not None and other.merged_commit else None


def _check_on_branch(repo: Path, run: Run, landing: str, branch: str, head: str) -> None:
    from bosun.isolation.worktree import is_ancestor

    if not is_ancestor(repo, run.merged_commit or landing, head):
        raise Conflict(f"branch {branch!r} no longer holds the landing commit {landing[:12]} of run {run.id}",
                       f"the branch was reset or rewritten; revert it by hand with `git revert {landing[:12]}` "
                       "where it is", code="NOT_ON_BRANCH")


def _revert_tree(repo: Path, landing: str, onto: str) -> tuple[str, list[str]]:
    from bosun.isolation.git import tree_of

    return three_way(repo, tree_of(repo, landing), tree_of(repo, onto), tree_of(repo, f"{landing}^"))


def _overlapping(repo: Path, run: Run, landing: str, head: str, conflicts: list[str]) -> Conflict:
    later = commits_touching(repo, run.merged_commit or landing, head, conflicts)
    named = "; ".join(later[:5]) or "commits on the branch"
    return Conflict(
        f"later commits on {run.source_branch} touch the same lines as run {run.id} ({', '.join(conflicts[:5])}): "
        + named,
        f"`bosun revert {run.id} --onto-worktree` prepares the revert as a new run for you to review, "
        "conflicts marked", code="REVERT_CONFLICT")


def message(run: Run, landing: str) -> str:
    return (f'Revert "{run.title}"\n\n'
            f"This reverts commit {landing} (bosun run {run.id}).\n\n"
            f"Bosun-Run: {run.id}\n"
            f"Bosun-Reverts: {landing}\n")


def _land_revert(ctx: RunContext, run: Run, landing: str, head: str, tree: str) -> dict[str, Any]:
    from bosun.isolation.git import tree_of

    repo, branch = Path(run.repo), run.source_branch
    if tree == tree_of(repo, head):
        raise BadInput(f"{branch} no longer has any of run {run.id}'s change: the revert would change nothing",
                       "nothing to undo; `git log` shows what removed it", code="NOTHING_TO_REVERT")
    from bosun.isolation.user_branch import move_branch

    commit = commit_on(repo, tree, head, message(run, landing))
    move_branch(repo, branch, head, commit, message=f"bosun: revert run {run.id}",
                again=f"run `bosun revert {run.id}` again")
    done = {"commit": commit, "branch": branch, "landing": landing, "at": time.time()}
    mark_reverted(ctx.store, run, done)
    _event(run.id, "reverted", commit=commit, branch=branch, landing=landing)
    ctx.store.note(run.id, f"reverted on {branch} by {commit[:12]}")
    return {"run": ctx.store.require_run(run.id), "revert": done, "revert_run": None}


def as_json(done: dict[str, Any], key: str) -> dict[str, Any]:
    """The one JSON object of ``revert`` (``key`` "revert") or ``apply`` ("apply"), for the CLI and MCP:
    the run's result plus what was done; a revert run's own result in ``revert.run_result``."""
    from bosun.engine.results import run_result

    what = dict(done[key])
    if done.get("revert_run") is not None:
        what["run_result"] = run_result(done["revert_run"], brief=True)
    return {**run_result(done["run"]), key: what}


def _event(run_id: str, kind: str, **fields: Any) -> None:
    record.EventLog(paths.run_dir(run_id) / record.EVENTS).append({"type": kind, **fields})


# --- --onto-worktree -------------------------------------------------------------------------------


def _onto_worktree(ctx: RunContext, run: Run, landing: str, head: str) -> dict[str, Any]:
    """A new run from the branch's tip whose worktree holds the revert, verified like any run."""
    from bosun.core import states
    from bosun.engine.lifecycle import prepare, verify
    from bosun.isolation.landing import checked_out_branch

    repo, branch = Path(run.repo), run.source_branch
    # On the branch you are on, the run carries your uncommitted work as every run does; on another
    # branch it starts from that branch's tip exactly and lands there (its ref moves, as integrate does).
    on_branch = checked_out_branch(repo) == branch
    task = _revert_task(run, landing, "HEAD" if on_branch else head)
    new = prepare(ctx, task, repo, profile_name=run.profile, task_source=f"revert of run {run.id}",
                  carry_uncommitted=on_branch)
    if not on_branch:
        ctx.store.set_columns(new, source_branch=branch)
    ctx.store.move(new, states.WORKING, f"bosun writes the revert of run {run.id}")
    with stopping(ctx, new):
        try:
            conflicts = _write_revert(new, landing)
        except BosunError as exc:
            raise RunStopped(states.FAILED, exc, "could not write the revert: " + exc.message) from exc
    ctx.store.write(new, revert_of={"run": run.id, "landing": landing, "conflicts": conflicts})
    _event(new.id, "revert_written", of=run.id, landing=landing, conflicts=", ".join(conflicts))
    ctx.store.move(new, states.WORKED, f"revert of {landing[:12]} written"
                   + (f"; conflicts marked in {', '.join(conflicts[:5])}" if conflicts else ""))
    done = {"run": new.id, "branch": branch, "landing": landing, "at": time.time()}
    mark_reverted(ctx.store, run, done)
    _event(run.id, "revert_prepared", run=new.id, branch=branch, landing=landing)
    ctx.store.note(run.id, f"revert prepared as run {new.id}")
    checked = verify(ctx, new.id, task)
    hint = _revert_run_hint(checked)
    return {"run": ctx.store.require_run(run.id), "revert": {**done, **({"hint": hint} if hint else {})},
            "revert_run": checked}


def _revert_run_hint(new: Run) -> str | None:
    """What to do with a revert run a gate refused: removing the tests the run added is what a
    revert does, so TEST_WEAKENED is a person's waiver to give, not a dead end."""
    from bosun.engine.verdict import REFUSED, codes, of_run

    judged = of_run(new)
    if not judged or judged["outcome"] != REFUSED:
        return None
    if codes(judged) == ["TEST_WEAKENED"]:
        return (f"the revert removes tests the reverted run added; if that is all, `bosun approve {new.id} "
                "--waive TEST_WEAKENED --reason \"the revert removes the tests the run added\"` approves it, and "
                f"`bosun integrate {new.id}` lands it")
    return f"`bosun show {new.id}` explains each refusal; fix the revert with `bosun work {new.id} --resume \"...\"`"


def _revert_task(run: Run, landing: str, base: str) -> Any:
    """The run's own task with a revert's title and prompt: the same verify commands, scope and
    locked paths (the revert changes exactly the files the run changed), ``tests: rewrite`` and no
    cross-review."""
    from bosun.core.review_config import ReviewConfig
    from bosun.engine.context import load_task

    task = load_task(run.id)
    prompt = (f"Revert the change of bosun run {run.id} (commit {landing[:12]}, \"{run.title}\"). The worktree "
              "already holds the revert; where later commits touched the same lines, resolve the conflict "
              "markers keeping the later work.")
    # The revert removes what the run added, tests too: that is a reason for a person (tests:
    # rewrite), not a weakened test. A person reads every revert (it is never proven), so no
    # cross-review spends tokens on it.
    return task.model_copy(update={"title": f"Revert: {run.title}"[:200], "prompt": prompt, "holdout": [],
                                   "base": base, "tests": "rewrite", "review": ReviewConfig(rounds=0)})


def _write_revert(new: Run, landing: str) -> list[str]:
    """Write the revert into the new run's worktree, as a worker would: the diff from its start tree to
    the three-way revert, applied to the files. Returns the paths left with conflict markers."""
    from bosun.isolation.git import git, tree_of

    repo, wt = Path(new.repo), Path(new.worktree)
    start = tree_of(repo, new.start_commit)
    tree, conflicts = _revert_tree(repo, landing, new.start_commit)
    patch = git(["diff", "--binary", "--full-index", "--no-renames", start, tree], repo, text=False).stdout
    if patch:
        git(["apply", "--binary", "--whitespace=nowarn", "-"], wt, input=patch, text=False)
    return conflicts
