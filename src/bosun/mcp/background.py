"""The detached half of an MCP delegation: ``python -m bosun.mcp.background run RUN [--auto-approve]``
works, verifies, gates and reports a prepared run (``--auto-approve`` lands it only when its verdict is
landable; one that needs review stays ``verified`` for a person); ``... plan FILE REPO ID_FILE [--profile P]`` runs a
plan and writes its id to ID_FILE as soon as it exists. Errors are recorded on the run or plan; the
output goes to the log the MCP server named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bosun.core.errors import BosunError


def drive_run(run_id: str, auto_approve: bool) -> int:
    """A run prepared by the MCP server, driven through the phases in this detached process."""
    from bosun.engine.context import load_task
    from bosun.engine.delegation import drive
    from bosun.mcp.ops import ctx

    c = ctx().pinned()
    try:
        drive(c, c.store.require_run(run_id), load_task(run_id), auto_approve)
    except BosunError as err:
        # The error that stopped the run is in driver.log and in the run's record (and its receipt).
        sys.stderr.write(f"bosun: {err.code}: {err.message}\n")
    return 0


def drive_plan(plan_file: str, repo: str, id_file: str, profile: str | None) -> int:
    from bosun.core.fileio import write_text_atomic
    from bosun.mcp.ops import ctx
    from bosun.plans.model import load_plan_file
    from bosun.plans.runner import start_plan

    def on_created(plan_id: str) -> None:
        write_text_atomic(Path(id_file), plan_id + "\n")

    try:
        start_plan(ctx(), load_plan_file(plan_file), Path(repo), profile, on_created=on_created)
    except BosunError as err:
        sys.stderr.write(f"bosun: {err.code}: {err.message}\n  hint: {err.hint}\n")
        return err.exit_code
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bosun.mcp.background")
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("run_id")
    r.add_argument("--auto-approve", action="store_true")
    pl = sub.add_parser("plan")
    pl.add_argument("plan_file")
    pl.add_argument("repo")
    pl.add_argument("id_file")
    pl.add_argument("--profile")
    args = p.parse_args(argv)
    if args.what == "run":
        return drive_run(args.run_id, args.auto_approve)
    return drive_plan(args.plan_file, args.repo, args.id_file, args.profile)


if __name__ == "__main__":
    sys.exit(main())
