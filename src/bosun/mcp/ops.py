"""What each MCP tool does, without the SDK: plain functions over the engine.

Like the CLI handlers, they call the engine and return the same JSON objects the CLI prints with
``--json``; a ``BosunError`` carries what went wrong. The long part of a delegation (the worker,
verification, the report) runs in a detached bosun process, so no tool call blocks for minutes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core.errors import BadInput, BosunError, Busy
from bosun.core.quoting import WORKER_WORDS

if TYPE_CHECKING:
    from bosun.core.result_types import RunResult
    from bosun.engine.context import RunContext
    from bosun.store.run import Run

# The background loop has stopped and the parent has something to read or decide.
_RUNNING = frozenset({"prepared", "working", "worked"})
WAIT_CAP_S = 55.0  # hosts drop a tool call after about 60 s
WAIT_DEFAULT_S = 45.0
_guards: dict[str, threading.Lock] = {}
_guards_lock = threading.Lock()


@contextmanager
def run_guard(run_id: str) -> Iterator[None]:
    """One decision at a time per run in this server: the run lock is re-entrant per process, so two
    concurrent tool calls on one run must not both pass it."""
    with _guards_lock:
        guard = _guards.setdefault(run_id, threading.Lock())
    with guard:
        yield


def ctx() -> Any:
    from bosun.engine.context import RunContext
    from bosun.store.db import open_store

    return RunContext(open_store())


def repo_path(repo: str | None, default: Path) -> Path:
    path = Path(repo).expanduser() if repo else default
    if not path.is_absolute():
        path = default / path
    if not path.is_dir():
        raise BadInput(f"repository not found: {path}", "pass `repo` as the path of a git repository")
    return path


def checked_run(run_id: Any) -> str:
    from bosun.core.paths import check_run_id

    if not isinstance(run_id, str):
        raise BadInput("run_id must be a string", "pass the id `delegate` returned")
    return check_run_id(run_id)


# --- delegate ------------------------------------------------------------------------------------


def load_task(task: dict[str, Any] | None, task_path: str | None, repo: Path) -> Any:
    from bosun.core.contract import contract_from_mapping, load_contract

    if (task is None) == (task_path is None):
        raise BadInput("give exactly one of `task` (the contract as an object) or `task_path`",
                       "`task` needs at least title, prompt and verify; see the tool description")
    if task_path is not None:
        path = Path(task_path).expanduser()
        return load_contract(path if path.is_absolute() else repo / path)
    if not isinstance(task, dict):
        raise BadInput("`task` must be an object", "pass the contract fields: title, prompt, verify, scope, ...")
    return contract_from_mapping(task, "task")


def delegate(c: RunContext, repo: Path, task: Any, profile: str | None, auto_approve: bool,
             parent_note: dict[str, Any] | None, task_source: str | None = None) -> dict[str, Any]:
    """Prepare the run here (so bad input fails at once), then hand the loop to a detached process."""
    from bosun.core.paths import run_dir
    from bosun.engine.lifecycle import prepare

    run = prepare(c, task, repo, profile, task_source=task_source)
    run_id = run.id
    if parent_note is not None:
        c.store.merge_data(run_id, parent_meter=parent_note)
    argv = [sys.executable, "-m", "bosun.mcp.background", "run", run_id]
    if auto_approve:
        argv.append("--auto-approve")
    pid = _spawn(argv, Path(run.repo), run_dir(run_id) / "driver.log")
    c.store.merge_data(run_id, driver_pid=pid, driver_start=_start_time(pid))
    return {
        "id": run_id, "state": run.state, "title": run.title, "profile": run.profile,
        "profile_reason": run.profile_reason, "worktree": run.worktree, "done": False,
        "next": f"call wait with run_id {run_id!r} (call it again while done is false)",
    }


def _spawn(argv: list[str], cwd: Path, log: Path) -> int:
    from bosun.proc import start_detached

    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    # The detached process must import this same bosun, installed or not.
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return start_detached(argv, cwd=cwd, env=env, log_path=log)


def _start_time(pid: int) -> int | None:
    from bosun.proc import process_start_time

    return process_start_time(pid)


def _driver_running(run: Run) -> bool:
    from bosun.proc import pid_alive

    data = run.data
    pid = data.driver_pid
    if not isinstance(pid, int):
        return False
    return pid_alive(pid, data.driver_start) and not _zombie(pid)


def driver_alive(run: Run) -> bool:
    from bosun.engine import locks

    return _driver_running(run) or locks.owner_alive(locks.read_owner(run.id))


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].startswith(("Z", "X"))


def is_done(run: Run) -> bool:
    """The background loop has stopped: the parent has a result to read or a decision to make."""
    if run.state not in _RUNNING:
        # The background process still writes the receipt and holds the run for a moment.
        return not _driver_running(run)
    return not driver_alive(run)


# --- the parent's review ended -------------------------------------------------------------------


def end_review(c: RunContext, run_id: str) -> None:
    """The parent's review ended: its window since delegate is closed (read now, or again while its
    log did not hold the window's end), and the receipt refreshed with it."""
    from bosun.engine.run_report import write_report
    from bosun.parents.meter import close_window

    if not close_window(c.store, run_id):
        return
    try:
        write_report(c, c.store.require_run(run_id))
    except BosunError:
        pass  # the receipt is refreshed by the next `bosun report`


def reread_receipt(run: Run) -> Run:
    """The parent reads the run: a measurement of it still pending is read again first."""
    from bosun.engine.run_report import reread_parent
    from bosun.parents.meter import pending

    if pending(run):
        c = ctx()
        if reread_parent(c, run):
            return c.store.require_run(run.id)
    return run


# --- the other verbs ----------------------------------------------------------------------------


def run_json(c: RunContext, run_id: str) -> RunResult:
    from bosun.engine.results import run_result

    return run_result(c.store.require_run(run_id))


def approve(c: RunContext, run_id: str, waive: list[str] | None, reason: str | None, review: dict[str, Any] | None,
            acknowledge: list[str] | None = None) -> RunResult:
    """Approve for the parent. A run that needs review lands only when ``acknowledge`` names every one
    of its reason codes: the parent's word that its person said yes, recorded as ``by: parent``."""
    from bosun.core.errors import NeedsReview
    from bosun.engine import verdict
    from bosun.engine.lifecycle import approve as do_approve

    if waive and not reason:
        raise BadInput("`waive` needs `reason`", "say why the waived gate is acceptable; it is recorded")
    if acknowledge is not None and not all(isinstance(code, str) for code in acknowledge):
        raise BadInput("`acknowledge` must be a list of reason codes", 'e.g. ["NOT_PROVEN"]; see verdict.reasons')
    waivers = {str(code).upper(): str(reason) for code in (waive or [])}
    with run_guard(run_id):
        try:
            run = do_approve(c, run_id, review, waivers, acknowledge=acknowledge, by="parent")
        except NeedsReview as err:
            raise _needs_review(c, run_id, err) from None
        except BadInput as err:
            if err.code == "ACKNOWLEDGE_MISSING":
                err.details = {"verdict": verdict.of_run(c.store.require_run(run_id))}  # type: ignore[attr-defined]
            raise
        end_review(c, run_id)
    return run_json(c, run.id)


def _needs_review(c: RunContext, run_id: str, err: BosunError) -> BosunError:
    """The engine's refusal, said to a parent: a person decides, the parent only carries their word."""
    from bosun.core.errors import NeedsReview
    from bosun.engine import verdict

    judged = verdict.of_run(c.store.require_run(run_id))
    codes = verdict.codes(judged)
    reasons = "; ".join(f"{r['code']}: {r['sentence']}" for r in (judged["reasons"] if judged else []))
    out = NeedsReview(
        f"run {run_id} needs review: a person must decide. Read these reasons to your person before approving: "
        + (reasons or err.message) + f". {WORKER_WORDS}",
        f"once your person said yes, call approve with acknowledge={codes}; never acknowledge on their behalf "
        "without asking; or discard the run",
    )
    out.details = {"verdict": judged}  # type: ignore[attr-defined]
    return out


def integrate(c: RunContext, run_id: str, reverify: bool) -> RunResult:
    from bosun.engine.lifecycle import land

    with run_guard(run_id):  # the record, then the worktree's cleanup
        land(c, run_id, reverify=None if reverify else False, before_report=lambda: end_review(c, run_id))
    return run_json(c, run_id)


def revert(c: RunContext, run_id: str, onto_worktree: bool) -> dict[str, Any]:
    from bosun.engine.undo import as_json
    from bosun.engine.undo import revert as do_revert

    with run_guard(run_id):
        return as_json(_retry_busy(lambda: do_revert(c, run_id, onto_worktree=onto_worktree)), "revert")


def apply(c: RunContext, run_id: str, branch: Any, reverify: bool) -> dict[str, Any]:
    from bosun.engine.apply_run import apply as do_apply
    from bosun.engine.undo import as_json

    if not isinstance(branch, str) or not branch:
        raise BadInput("branch must be a branch name", "pass the branch to land the run's change on")
    with run_guard(run_id):
        return as_json(_retry_busy(lambda: do_apply(c, run_id, branch, reverify=reverify)), "apply")


def discard(c: RunContext, run_id: str) -> RunResult:
    from bosun.engine.teardown import discard as do_discard

    with run_guard(run_id):
        end_review(c, run_id)
        return run_json(c, _retry_busy(lambda: do_discard(c, run_id)).id)


def cancel(c: RunContext, run_id: str) -> RunResult:
    from bosun.engine.teardown import cancel as do_cancel

    run = c.store.require_run(run_id)
    if run.state in ("cancelled", "cleaned"):
        return run_json(c, run_id)
    with run_guard(run_id):
        end_review(c, run_id)
        return run_json(c, _retry_busy(lambda: do_cancel(c, run_id)).id)


def _retry_busy(fn: Any, patience_s: float = 10.0) -> Any:
    """The background process holds the run lock for a moment between phases: try again briefly."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return fn()
        except Busy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def diff(c: RunContext, run_id: str, stat_only: bool) -> dict[str, Any]:
    from bosun.core.paths import run_dir
    from bosun.engine.run_report import diff_stats

    run = c.store.require_run(run_id)
    path = run_dir(run_id) / "diff.patch"
    if not path.exists():
        raise BadInput(f"run {run_id} has no verified diff yet", "call wait until the run is done")
    text = path.read_text("utf-8", "replace")
    return {"id": run_id, "diff_sha256": run.diff_sha256, "stats": diff_stats(text), "diff": None if stat_only else text}


def history(c: RunContext, search: str | None, state: str | None, limit: int) -> dict[str, Any]:
    from bosun.core.states import STATES
    from bosun.engine.results import list_item

    if state and state not in STATES:
        raise BadInput(f"unknown state {state!r}", "states: " + ", ".join(STATES))
    limit = max(1, min(int(limit), 200))
    runs = c.store.list_runs(state=state, limit=limit, search=search or None)  # a bad search: BadInput
    items = []
    for r in runs:
        item = list_item(r)
        item["verified"] = r.data.verification_passed
        items.append(item)
    return {"runs": items, "count": len(items)}


def workers(repo: Path) -> dict[str, Any]:
    from bosun.apps.doctor import worker_rows

    return {"workers": worker_rows(repo)}


# --- plans ---------------------------------------------------------------------------------------


def plan_run(c: RunContext, repo: Path, plan: dict[str, Any] | None, plan_path: str | None, profile: str | None,
             patience_s: float = 45.0) -> dict[str, Any]:
    """Validate the plan here, then run it in a detached process; returns once the plan has an id."""
    from bosun.core.fileio import write_text_atomic
    from bosun.core.paths import bosun_home
    from bosun.plans.model import load_plan_file, parse_plan
    from bosun.plans.preflight import profile_problems
    from bosun.plans.validate import PlanInvalid, validated
    from bosun.store.plans import PlanStore

    if (plan is None) == (plan_path is None):
        raise BadInput("give exactly one of `plan` (an object) or `plan_path`", "see docs/plans.md for the format")
    inbox = bosun_home() / "mcp" / f"plan-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}"
    inbox.mkdir(parents=True)
    if plan_path is not None:
        path = Path(plan_path).expanduser()
        path = path if path.is_absolute() else repo / path
        parsed = load_plan_file(path)
    else:
        if not isinstance(plan, dict):
            raise BadInput("`plan` must be an object", "see docs/plans.md for the format")
        path = inbox / "plan.json"
        write_text_atomic(path, json.dumps(plan, indent=2))  # the plan exactly (no format_version key)
        parsed = parse_plan(plan, "plan")
    validated(parsed)
    problems = profile_problems(parsed, c.settings(repo), profile)
    if problems:
        raise PlanInvalid(problems)
    id_file = inbox / "plan-id"
    argv = [sys.executable, "-m", "bosun.mcp.background", "plan", str(path), str(repo), str(id_file)]
    if profile:
        argv += ["--profile", profile]
    _spawn(argv, repo, inbox / "driver.log")
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        if id_file.exists() and id_file.read_text().strip():
            from bosun.plans.status import plan_result

            row = PlanStore(c.store).require_plan(id_file.read_text().strip())
            return {**plan_result(c.store, row), "next": "call plan_status with this id"}
        time.sleep(0.1)
    tail = (inbox / "driver.log").read_text("utf-8", "replace")[-1500:] if (inbox / "driver.log").exists() else ""
    raise BosunError("the plan did not start", f"its output: {tail or '(none)'}", code="PLAN_NOT_STARTED")


def plan_status(c: RunContext, plan_id: Any) -> dict[str, Any]:
    from bosun.plans.ids import check_plan_id
    from bosun.plans.status import plan_result
    from bosun.store.plans import PlanStore

    if not isinstance(plan_id, str):
        raise BadInput("plan_id must be a string", "pass the id `plan_run` returned")
    row = PlanStore(c.store).require_plan(check_plan_id(plan_id))
    return plan_result(c.store, row)


def to_text(obj: Any) -> str:
    return json.dumps(obj, default=str, separators=(",", ":"))
