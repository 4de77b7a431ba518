"""One boundary: call the handler for a verb, turn a BosunError into a message and an exit code."""

from __future__ import annotations

import argparse
import json
import sys

from bosun.errors import EXIT_ERROR, EXIT_OK, EXIT_REJECTED, BosunError

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from typing import Any

# The run result's keys (docs/cli.md), null when an error comes before there is a run.
NULL_RESULT_KEYS = (
    "id", "state", "title", "profile", "profile_reason", "base", "source_branch", "branch", "worktree",
    "diff_sha256", "files_changed", "gates", "verification", "usage", "cost_usd", "merged_commit", "run_dir",
    "savings", "final_message",
)


def emit_json(obj: Any) -> None:
    from bosun.redaction import redact

    sys.stdout.write(json.dumps(redact(json.loads(json.dumps(obj, default=str)))) + "\n")
    sys.stdout.flush()


def error_json(err: BosunError, run: dict[str, Any] | None = None) -> dict[str, Any]:
    if run is not None:
        from bosun.results import run_result

        return run_result(run, error=err.to_dict())
    out: dict[str, Any] = dict.fromkeys(NULL_RESULT_KEYS)
    out["gates"] = []
    out["files_changed"] = 0
    out["error"] = err.to_dict()
    return out


def print_error(err: BosunError) -> None:
    from bosun.redaction import redact_text

    problems = getattr(err, "problems", None)
    if problems and len(problems) > 1:
        print_problems(problems)
        return
    sys.stderr.write(f"bosun: error: {redact_text(err.message)}\n")
    if err.hint:
        sys.stderr.write(f"  hint: {redact_text(err.hint)}\n")


def print_problems(problems: list[Any], what: str = "") -> None:
    """Every problem with its own hint (a task, a plan, a pre-flight check: all of them at once)."""
    n = len(problems)
    sys.stderr.write(f"bosun: error: {what or 'found'} {n} problem{'s' if n != 1 else ''}:\n")
    for p in problems:
        sys.stderr.write(f"  {p.code}: {p.message}\n")
        if p.hint:
            sys.stderr.write(f"    hint: {p.hint}\n")


def problems_json(err: BosunError) -> list[dict[str, Any]] | None:
    problems = getattr(err, "problems", None)
    return None if problems is None else [p.to_dict() for p in problems]


def dispatch(args: argparse.Namespace) -> int:
    from bosun.cli import handlers

    handler = getattr(handlers, "cmd_" + args.command.replace("-", "_"))
    as_json = getattr(args, "json", False)
    try:
        code: int = handler(args)
        return code
    except BosunError as err:
        if as_json:
            run = _run_for_error(args)
            out = error_json(err, run)
            problems = problems_json(err)
            if problems is not None:
                out["problems"] = problems
            emit_json(out)
        else:
            print_error(err)
        return err.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(interrupted_message(args) + "\n")
        return 130


def interrupted_message(args: argparse.Namespace) -> str:
    """What Ctrl-C left behind, with the run's real id and state when there is a run."""
    run = _run_for_error(args)
    if run is None:
        return "bosun: interrupted"
    rid, state = run["id"], run["state"]
    if state in ("working", "interrupted"):
        return f"bosun: interrupted; run {rid} is {state}: `bosun recover {rid}` finishes it"
    return f"bosun: interrupted; run {rid} is {state}: `bosun show {rid}` says what is next"


def _run_for_error(args: argparse.Namespace) -> dict[str, Any] | None:
    run_id = getattr(args, "run_id", None) or getattr(args, "_created_run", None)
    if not run_id:
        return None
    try:
        from bosun.paths import check_run_id
        from bosun.store.db import open_store

        check_run_id(run_id)
        return open_store().get_run(run_id)
    except BosunError:
        return None


def exit_for_state(state: str) -> int:
    """The exit code of a verb that ends with the run in ``state`` (README "Exit codes")."""
    if state == "rejected":
        return EXIT_REJECTED
    return EXIT_ERROR if state in ("failed", "cancelled") else EXIT_OK
