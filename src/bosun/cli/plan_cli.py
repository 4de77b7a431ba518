"""`bosun plan ...`: parser and handlers for plans (many tasks as a dependency graph).

The parser is argparse only (``bosun --help`` must stay fast); every handler imports what it needs.
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs `bosun plan --help` start-up time
if TYPE_CHECKING:
    from typing import Any

    from bosun.engine.context import RunContext

PLAN_DESCRIPTION = """\
Run many tasks as a dependency graph. Tasks whose dependencies are merged run in parallel waves,
each in its own worktree started from the plan's integration branch (bosun/plan/<id>); every green,
approved task is merged there, the plan's verify runs after each wave, and when all waves are green
the result lands on your branch as one commit (never pushed). docs/plans.md describes the file.
"""

PLAN_EPILOG = """\
typical flow:
  bosun plan check plan.yaml            validate: ids, dependencies, cycles, overlapping owns
  bosun plan run plan.yaml              run it (--no-merge keeps the result on bosun/plan/<id>)
  bosun plan watch PLAN                 follow it live (--json: one event per line)
  bosun plan continue PLAN --plan fixed.yaml   after a conflict or failure
  bosun plan continue PLAN              after `bosun approve RUN` of a task that needed review
  bosun plan resume PLAN                after bosun was killed
  bosun plan abort PLAN                 remove its worktrees and branches (records stay)

exit codes: 0 succeeded, 1 failed or cancelled, 2 invalid plan, 5 busy, 6 paused (conflict),
  7 paused: a task needs a person's review (`bosun approve RUN`, then `bosun plan continue PLAN`)
"""


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")


def _plan_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("plan_id", metavar="PLAN", help="a plan id (see `bosun plan list`)")


def add_plan_parser(sub: argparse._SubParsersAction, help: str) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "plan", help=help, description=PLAN_DESCRIPTION,
        epilog=PLAN_EPILOG,
    )
    psub = p.add_subparsers(dest="plan_command", metavar="SUBCOMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:
        return psub.add_parser(name, help=help, description=help)

    c = add("check", "validate a plan file without running anything (exit 2 lists every problem)")
    c.add_argument("plan", metavar="PLAN_FILE", help="plan file (YAML or JSON)")
    c.add_argument("--repo", default=".", help="repository whose bosun.toml names the profiles (default: cwd)")
    _json(c)

    c = add("run", "run a plan: waves of parallel tasks, merged through bosun/plan/<id>, then landed")
    c.add_argument("plan", metavar="PLAN_FILE", help="plan file (YAML or JSON)")
    c.add_argument("--profile", help="worker profile for every task's first attempt (retries rotate in its tier)")
    c.add_argument("--no-merge", action="store_true", help="stop at the integration branch; do not land on your branch")
    c.add_argument("--repo", default=".", help="the git repository (default: the current directory)")
    c.add_argument("--quiet", action="store_true", help="no live progress")
    c.add_argument("--allow-secret-in-task", action="store_true",
                   help="dispatch even when a task's prompt or acceptance looks like it holds a credential")
    _json(c)

    c = add("status", "a plan's state, waves, tasks and runs")
    _plan_id(c)
    _json(c)

    c = add("list", "list plans, newest first")
    c.add_argument("--state", help="only plans in this state")
    c.add_argument("--limit", type=int, default=50)
    _json(c)

    c = add("watch", "follow a plan live until it ends (--json: one JSON object per event per line)")
    _plan_id(c)
    c.add_argument("--interval", type=float, default=0.25, help="poll interval in seconds")
    _json(c)

    c = add("continue", "run a paused, failed or cancelled plan again, optionally with a fixed plan file")
    _plan_id(c)
    c.add_argument("--plan", dest="fixed", metavar="PLAN_FILE", help="fixed plan: may change tasks not merged yet")
    c.add_argument("--quiet", action="store_true", help="no live progress")
    _json(c)

    c = add("resume", "continue a plan whose bosun process died (merged tasks are not redone)")
    _plan_id(c)
    c.add_argument("--quiet", action="store_true", help="no live progress")
    _json(c)

    c = add("cancel", "stop a plan's workers; what was merged stays on its integration branch")
    _plan_id(c)
    _json(c)

    c = add("abort", "remove every worktree and branch a stopped plan made (run records stay)")
    _plan_id(c)
    _json(c)


# ---------------------------------------------------------------------------------------------


# The plan verbs whose result is a plan's: failing on a plan that exists (for `run`, once it was created),
# they print that plan's result with the error in it; every other failure is the error alone.
PLAN_RESULT_VERBS = ("run", "status", "continue", "resume", "cancel", "abort")


def error_result(args: argparse.Namespace, err: Any) -> dict[str, Any]:
    """The one JSON object of a plan verb that failed: ``{"error": ...}`` (with ``problems`` when several
    things are wrong), in the plan's result when the verb failed on a plan that exists."""
    from bosun.core.errors import BosunError

    out: dict[str, Any] = {"error": err.to_dict()}
    problems = getattr(err, "problems", None)
    if problems is not None:
        out["problems"] = [p.to_dict() for p in problems]
    plan_id = getattr(args, "plan_id", None) or getattr(args, "_created_plan", None)
    if plan_id and getattr(args, "plan_command", None) in PLAN_RESULT_VERBS:
        try:
            from bosun.plans.ids import check_plan_id
            from bosun.plans.status import plan_result
            from bosun.store.plans import PlanStore

            ctx = _ctx()
            row = PlanStore(ctx.store).get_plan(check_plan_id(plan_id))
            if row is not None:
                out = {**plan_result(ctx.store, row), **out}
        except BosunError:
            pass  # no plan to show (a bad id, no store, an unreadable plan): the error alone is the answer
    return out


def _ctx() -> RunContext:
    from bosun.engine.context import RunContext
    from bosun.store.db import open_store

    return RunContext(open_store())


def _checked(args: argparse.Namespace) -> str:
    from bosun.plans.ids import check_plan_id

    return check_plan_id(args.plan_id)


def _exit_for(row: dict[str, Any]) -> int:
    from bosun.core.errors import EXIT_CONFLICT, EXIT_ERROR, EXIT_NEEDS_REVIEW, EXIT_OK

    if row["state"] == "paused" and ((row.get("data") or {}).get("error") or {}).get("code") == "NEEDS_REVIEW":
        return EXIT_NEEDS_REVIEW  # a task waits for a person's review
    return {"succeeded": EXIT_OK, "paused": EXIT_CONFLICT}.get(row["state"], EXIT_ERROR)


def _finish(args: argparse.Namespace, ctx: RunContext, row: dict[str, Any], code: int | None = None) -> int:
    from bosun.cli.render import emit_json
    from bosun.cli.views import print_plan
    from bosun.plans.status import plan_result

    result = plan_result(ctx.store, row)
    if args.json:
        emit_json(result)
    else:
        print_plan(result)
    return _exit_for(row) if code is None else code


def _live(args: argparse.Namespace) -> tuple[Any, Any]:
    """A thread printing the plan's events to stderr while this process drives it."""
    if args.json or getattr(args, "quiet", False):
        return None, None
    import threading

    from bosun.plans.events import describe
    from bosun.plans.runner import watch_thread
    from bosun.store.db import open_store

    ref: list[str] = []
    stop = threading.Event()

    def emit(ev: dict[str, Any]) -> None:
        sys.stderr.write(describe(ev) + "\n")
        sys.stderr.flush()

    thread = watch_thread(open_store, ref, emit, stop)
    return (ref, stop), thread


def _stop_live(live: Any, thread: Any) -> None:
    if thread is not None:
        live[1].set()
        thread.join(timeout=5)


# -- verbs ----------------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bosun.cli.render import emit_json, print_problems
    from bosun.core.errors import EXIT_BAD_INPUT, EXIT_OK, BosunError
    from bosun.plans.model import load_plan_file
    from bosun.plans.preflight import profile_problems
    from bosun.plans.validate import check_plan

    try:
        plan = load_plan_file(args.plan)
    except BosunError as err:
        if not args.json:
            raise
        emit_json({"ok": False, "plan": args.plan, "title": None, "tasks": 0, "waves": None,
                   "problems": [{**err.to_dict(), "tasks": []}], "warnings": [], "error": err.to_dict()})
        return err.exit_code
    problems, waves = check_plan(plan)
    try:
        from bosun.core.config import load_settings
        from bosun.isolation.git import repo_root

        repo = repo_root(Path(args.repo))
        problems += profile_problems(plan, load_settings(repo), None, repo)
    except BosunError:
        pass  # not in a repository (or its config is broken): profiles are checked by `plan run`
    if args.json:
        out: dict[str, Any] = {
            "ok": not problems, "plan": args.plan, "title": plan.title, "tasks": len(plan.tasks),
            "waves": waves if not problems else None, "problems": [p.to_dict() for p in problems],
            "warnings": [w.to_dict() for w in plan.warnings],
        }
        if problems:
            from bosun.plans.validate import PlanInvalid

            out["error"] = PlanInvalid(problems).to_dict()  # what `plan run` would have failed with
        emit_json(out)
        return EXIT_BAD_INPUT if problems else EXIT_OK
    for w in plan.warnings:
        sys.stderr.write(f"bosun: warning: {w.message}\n")
    if problems:
        print_problems(problems, "the plan has")
        return EXIT_BAD_INPUT
    assert waves is not None
    sys.stdout.write(f"plan ok: {plan.title}: {len(plan.tasks)} task(s) in {len(waves)} wave(s)\n")
    for n, wave in enumerate(waves, start=1):
        sys.stdout.write(f"  wave {n}: {', '.join(wave)}\n")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bosun.plans.model import load_plan_file
    from bosun.plans.runner import start_plan

    plan = load_plan_file(args.plan)
    from bosun.core.redaction import refuse_secret_in_task, task_texts

    for t in plan.tasks:
        if t.contract is not None:
            refuse_secret_in_task(task_texts(t.contract, f"{t.id} "), args.allow_secret_in_task)
    if not args.json:
        for w in plan.warnings:
            sys.stderr.write(f"bosun: warning: {w.message}\n")
    ctx = _ctx()
    live, thread = _live(args)

    def on_created(plan_id: str) -> None:
        args._created_plan = plan_id
        if live is not None:
            live[0].append(plan_id)
        if not args.json and not args.quiet:
            sys.stderr.write(f"bosun: plan {plan_id} started; integration branch bosun/plan/{plan_id}\n")

    try:
        row = start_plan(ctx, plan, Path(args.repo), args.profile, no_merge=args.no_merge, on_created=on_created)
    finally:
        _stop_live(live, thread)
    return _finish(args, ctx, row)


def _drive_existing(args: argparse.Namespace, fixed_path: str | None, resume: bool) -> int:
    from bosun.plans.control import continue_plan
    from bosun.plans.model import load_plan_file

    plan_id = _checked(args)
    fixed = load_plan_file(fixed_path) if fixed_path else None
    ctx = _ctx()
    live, thread = _live(args)
    if live is not None:
        live[0].append(plan_id)
    try:
        row = continue_plan(ctx, plan_id, fixed, resume=resume)
    finally:
        _stop_live(live, thread)
    return _finish(args, ctx, row)


def cmd_continue(args: argparse.Namespace) -> int:
    return _drive_existing(args, args.fixed, resume=False)


def cmd_resume(args: argparse.Namespace) -> int:
    return _drive_existing(args, None, resume=True)


def cmd_status(args: argparse.Namespace) -> int:
    from bosun.core.errors import EXIT_OK
    from bosun.store.plans import PlanStore

    plan_id = _checked(args)
    ctx = _ctx()
    row = PlanStore(ctx.store).require_plan(plan_id)
    return _finish(args, ctx, row, EXIT_OK)


def cmd_list(args: argparse.Namespace) -> int:
    import time

    from bosun.cli.render import emit_json
    from bosun.core.errors import EXIT_OK, BadInput
    from bosun.core.plan_states import PLAN_STATES
    from bosun.store.db import open_store
    from bosun.store.plans import PlanStore

    if args.state and args.state not in PLAN_STATES:
        raise BadInput(f"unknown plan state {args.state!r}", "states: " + ", ".join(PLAN_STATES))
    # The store alone: listing needs no settings, and loading them (pydantic) would cost most of the time.
    rows = PlanStore(open_store()).list_plans(args.state, args.limit)
    items = [{"id": r["id"], "state": r["state"], "title": r["title"], "source_branch": r["source_branch"],
              "integration_branch": r["integration_branch"], "created_at": r["created_at"]} for r in rows]
    if args.json:
        emit_json({"plans": items, "count": len(items)})
        return EXIT_OK
    if not items:
        sys.stdout.write("no plans yet; `bosun plan run plan.yaml` starts one\n")
    for it in items:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(it["created_at"]))
        sys.stdout.write(f"{it['id']}  {it['state']:<9} {when}  {it['title'][:60]}\n")
    return EXIT_OK


def cmd_watch(args: argparse.Namespace) -> int:
    from bosun.cli.render import emit_json
    from bosun.core.errors import EXIT_OK
    from bosun.plans.events import describe, event_json, follow
    from bosun.store.plans import PlanStore

    plan_id = _checked(args)
    ctx = _ctx()
    ps = PlanStore(ctx.store)
    ps.require_plan(plan_id)

    def emit(ev: dict[str, Any]) -> None:
        if args.json:
            emit_json(event_json(ev))
        else:
            sys.stdout.write(describe(ev) + "\n")
            sys.stdout.flush()

    row = follow(ps, plan_id, emit, interval=max(0.05, args.interval))
    if row["state"] == "running" and not args.json:
        sys.stdout.write(f"the process running plan {plan_id} is gone: `bosun plan resume {plan_id}` continues it\n")
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    from bosun.core.errors import EXIT_OK
    from bosun.plans.control import cancel_plan

    ctx = _ctx()
    return _finish(args, ctx, cancel_plan(ctx, _checked(args)), EXIT_OK)


def cmd_abort(args: argparse.Namespace) -> int:
    from bosun.core.errors import EXIT_OK
    from bosun.plans.control import abort_plan

    ctx = _ctx()
    return _finish(args, ctx, abort_plan(ctx, _checked(args)), EXIT_OK)
