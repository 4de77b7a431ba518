"""The one CLI boundary: find the verb's handler in the one verb table, run it, and turn a
``BosunError`` into a message and a hint (or one JSON object) and an exit code."""

from __future__ import annotations

import argparse
import sys

from bosun.cli.render import emit_json, print_error
from bosun.core.errors import BadInput, BosunError, interrupted_exit_code

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from bosun.store.run import Run

# Every verb, plan verbs included, and the function that runs it ("module:function" under bosun.cli),
# imported only when its verb runs.
HANDLERS = {
    "delegate": "handlers:cmd_delegate", "check": "handlers:cmd_check", "prepare": "handlers:cmd_prepare",
    "work": "handlers:cmd_work", "verify": "handlers:cmd_verify", "approve": "handlers:cmd_approve",
    "integrate": "handlers:cmd_integrate", "report": "handlers:cmd_report", "cleanup": "handlers:cmd_cleanup",
    "recover": "handlers:cmd_recover", "cancel": "handlers:cmd_cancel", "discard": "handlers:cmd_discard",
    "revert": "undo_cli:cmd_revert", "apply": "undo_cli:cmd_apply",
    "show": "handlers:cmd_show", "diff": "handlers:cmd_diff", "list": "handlers:cmd_list",
    "doctor": "handlers:cmd_doctor", "workers": "handlers:cmd_workers", "models": "handlers:cmd_models",
    "schema": "handlers:cmd_schema", "template": "handlers:cmd_template", "demo": "handlers:cmd_demo",
    "replay": "handlers:cmd_replay",
    "plan check": "plan_cli:cmd_check", "plan run": "plan_cli:cmd_run", "plan status": "plan_cli:cmd_status",
    "plan list": "plan_cli:cmd_list", "plan watch": "plan_cli:cmd_watch", "plan continue": "plan_cli:cmd_continue",
    "plan resume": "plan_cli:cmd_resume", "plan cancel": "plan_cli:cmd_cancel", "plan abort": "plan_cli:cmd_abort",
    "mcp": "parents_cli:cmd_mcp", "skill": "parents_cli:cmd_skill", "watch": "parents_cli:cmd_watch",
    "savings": "parents_cli:cmd_savings",
    "history": "insight_cli:cmd_history", "dash": "insight_cli:cmd_dash",
    "gc": "pool_cli:cmd_gc", "pool": "pool_cli:cmd_pool",
    "agent": "remote_cli:cmd_agent", "agents": "remote_cli:cmd_agents", "warm": "warm_cli:cmd_warm",
}
PLAN_SUBCOMMANDS = tuple(v.split(" ", 1)[1] for v in HANDLERS if v.startswith("plan "))

# The verbs whose result is a run's (docs/cli.md, "The run result"): failing on a run that exists, they
# print that run's result with the error in it; every other failure is the error alone.
RUN_VERBS = (
    "delegate", "prepare", "work", "verify", "approve", "integrate", "report", "cleanup", "recover", "cancel",
    "discard", "revert", "apply", "show",
)


def handler_for(args: argparse.Namespace) -> Callable[[argparse.Namespace], int]:
    verb = args.command
    if verb == "plan":
        if not getattr(args, "plan_command", None):
            raise BadInput("usage: bosun plan {" + ",".join(PLAN_SUBCOMMANDS) + "} ...",
                           "`bosun plan --help` describes each")
        verb = f"plan {args.plan_command}"
    module, function = HANDLERS[verb].split(":")
    found: Callable[[argparse.Namespace], int] = getattr(
        __import__(f"bosun.cli.{module}", fromlist=[function]), function)
    return found


def dispatch(args: argparse.Namespace) -> int:
    try:
        return handler_for(args)(args)
    except BosunError as err:
        return failed(args, err)
    except KeyboardInterrupt as exc:
        sys.stderr.write(interrupted_message(args) + "\n")
        return interrupted_exit_code(exc)
    except Exception as exc:  # noqa: BLE001 - only a write the filesystem refused is answered; the rest re-raised
        from bosun.core.unwritable import unwritable

        refused = unwritable(exc)
        if refused is None:
            raise
        verb = finishing_verb(_run_for_error(args))
        if verb:
            refused.hint += f"; then {verb}"
        return failed(args, refused)


def failed(args: argparse.Namespace, err: BosunError) -> int:
    if getattr(args, "json", False):
        emit_json(error_result(args, err))
    else:
        print_error(err, "the plan has" if args.command == "plan" else "")
    return err.exit_code


def error_result(args: argparse.Namespace, err: BosunError) -> dict[str, Any]:
    """The one JSON object of a verb that failed: ``{"error": ...}``, with ``problems`` when several
    things are wrong, and the result of the run (or plan) it failed on when that exists. No keys that
    could only be null: a reader tells "no run" from "a run" by ``id`` being there at all."""
    if args.command == "plan":
        from bosun.cli.plan_cli import error_result as plan_error_result

        return plan_error_result(args, err)
    return error_json(err, _run_for_error(args) if args.command in RUN_VERBS else None)


def error_json(err: BosunError, run: Run | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"error": err.to_dict()}
    if run is not None:
        from bosun.engine.results import run_result

        out = dict(run_result(run, error=out["error"]))
    problems = getattr(err, "problems", None)
    if problems is not None:
        out["problems"] = [p.to_dict() for p in problems]
    return out


def interrupted_message(args: argparse.Namespace) -> str:
    """What Ctrl-C left behind, with the run's real id and state when there is a run."""
    run = _run_for_error(args)
    if run is None:
        return "bosun: interrupted"
    verb = finishing_verb(run) or f"`bosun show {run.id}` says what is next"
    return f"bosun: interrupted; run {run.id} is {run.state}: {verb}"


def finishing_verb(run: Run | None) -> str | None:
    """The verb that finishes what a stop cut short, as a clause: ``recover`` re-runs the end of work and
    verification, ``integrate`` a landing."""
    if run is None:
        return None
    if run.state in ("working", "interrupted", "worked"):
        return f"`bosun recover {run.id}` finishes it"
    if run.state == "approved":
        return f"`bosun integrate {run.id}` lands it"
    return None


def _run_for_error(args: argparse.Namespace) -> Run | None:
    run_id = getattr(args, "run_id", None) or getattr(args, "_created_run", None)
    if not run_id:
        return None
    try:
        from bosun.core.paths import check_run_id
        from bosun.store.db import open_store

        check_run_id(run_id)
        return open_store().get_run(run_id)
    except BosunError:
        return None  # no run to show (a bad id, or no store): the error alone is the answer
    except Exception as exc:  # noqa: BLE001 - a store that cannot be opened (read-only, full) shows no run
        from bosun.core.unwritable import unwritable

        if unwritable(exc) is None:
            raise
        return None
