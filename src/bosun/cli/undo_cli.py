"""Parsers and handlers of ``revert`` and ``apply``: a landed run undone, a run's change carried to
another branch (the work is in engine/undo.py and engine/apply_run.py)."""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

UNDO_VERBS = ("revert", "apply")

REVERT_DESCRIPTION = """\
Undo a landed run: one revert commit of exactly its landing commit, on the branch it landed on.
Refuses, changing nothing, when later commits on that branch touch the same lines (they are named)
or when your uncommitted files overlap the files the revert changes. A checked-out branch moves the
way integrate moves it (your index, stash and other uncommitted work stay as they are); a branch
that is not checked out only has its ref moved. Never pushes.
With --onto-worktree the revert becomes a new run instead: its worktree holds the revert (conflicts
marked where later commits touched the same lines), verified like any run; read it with `bosun show`
and `bosun diff`, land it with `bosun approve` and `bosun integrate`.
"""

APPLY_DESCRIPTION = """\
Land a verified (or landed) run's change on another branch: merged into the branch's tip, the task's
verify commands re-run on the merged result, and only then the branch moved (a checked-out branch the
way integrate moves it, otherwise only its ref). Refuses, changing nothing, on a conflict, a failed
verification, or your uncommitted files overlapping the change. Never pushes.
"""


def add_undo_parsers(sub: argparse._SubParsersAction, wanted: str | None = "*") -> None:  # type: ignore[type-arg]
    for name, help_text, description in (
            ("revert", "undo a landed run with one revert commit on its branch (never pushed)", REVERT_DESCRIPTION),
            ("apply", "land a verified or landed run's change on another branch, re-verified (never pushed)",
             APPLY_DESCRIPTION)):
        if wanted not in ("*", None, name):
            continue
        p = sub.add_parser(name, help=help_text, description=description)
        if wanted is None:
            continue
        p.add_argument("run_id", metavar="RUN", help="a run id (see `bosun list`)")
        if name == "revert":
            p.add_argument("--onto-worktree", action="store_true",
                           help="prepare the revert as a new run for review instead of committing it")
        else:
            p.add_argument("--to", dest="branch", required=True, metavar="BRANCH", help="the branch to land it on")
            p.add_argument("--no-reverify", action="store_true",
                           help="skip re-running verification on the merged result")
        p.add_argument("--json", action="store_true", help="print exactly one JSON object (for agents and scripts)")


def _ctx() -> Any:
    from bosun.engine.context import RunContext
    from bosun.store.db import open_store

    return RunContext(open_store())


def cmd_revert(args: argparse.Namespace) -> int:
    from bosun.cli.handlers import _checked_id, _ticking
    from bosun.engine.undo import revert

    ctx = _ctx()
    with _ticking(args):
        done = revert(ctx, _checked_id(args, ctx.store), onto_worktree=args.onto_worktree)
    return _finish(args, ctx, done, "revert")


def cmd_apply(args: argparse.Namespace) -> int:
    from bosun.cli.handlers import _checked_id, _ticking
    from bosun.engine.apply_run import apply

    ctx = _ctx()
    with _ticking(args):
        done = apply(ctx, _checked_id(args, ctx.store), args.branch, reverify=not args.no_reverify)
    return _finish(args, ctx, done, "apply")


def _finish(args: argparse.Namespace, ctx: Any, done: dict[str, Any], key: str) -> int:
    from bosun.cli.render import emit_json, exit_for_state
    from bosun.engine.undo import as_json

    out = as_json(done, key)
    new = done.get("revert_run")
    code = exit_for_state(new.state, out[key]["run_result"].get("verdict")) if new is not None else 0
    if args.json:
        emit_json(out)
        return code
    sys.stdout.write(_summary(done["run"].id, key, out[key]))
    if new is not None:
        from bosun.cli.render import print_run

        print_run(new, ctx.store)
        if out[key].get("hint"):
            sys.stdout.write(f"next: {out[key]['hint']}\n")
    return code


def _summary(run_id: str, key: str, what: dict[str, Any]) -> str:
    if key == "apply":
        checked = "re-verified, " if what.get("reverified") else ""
        return f"run {run_id} applied to {what['branch']} as commit {what['commit'][:12]} ({checked}never pushed)\n"
    if what.get("commit"):
        return (f"run {run_id} reverted on {what['branch']}: commit {what['commit'][:12]} reverts "
                f"{what['landing'][:12]} (never pushed)\n")
    return f"run {run_id}: its revert is prepared as run {what['run']}, for your review:\n"
