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
from typing import TYPE_CHECKING

from bosun.core.errors import BosunError

if TYPE_CHECKING:
    from bosun.store.run import Run


def drive_run(run_id: str, auto_approve: bool) -> int:
    from bosun.core.contract import Mode
    from bosun.engine import locks
    from bosun.engine.context import load_task
    from bosun.engine.lifecycle import approve, integrate, report, verify, work
    from bosun.engine.notify import notify_run
    from bosun.engine.run_report import write_report
    from bosun.mcp.ops import ctx

    c = ctx()
    try:
        with locks.run_lock(run_id):
            try:
                work(c, run_id)
                run = verify(c, run_id)
                # Only a landable verdict lands on its own: a run that needs review waits for a person.
                if run.state == "verified" and auto_approve and load_task(run_id).mode == Mode.code \
                        and _landable(run):
                    approve(c, run_id)
                    integrate(c, run_id)
                    report(c, run_id)
                else:
                    write_report(c, c.store.require_run(run_id))
            except BosunError as err:
                sys.stderr.write(f"bosun: {err.code}: {err.message}\n")
                try:
                    write_report(c, c.store.require_run(run_id))
                except BosunError:
                    pass  # the error that stopped the run is in driver.log (above) and in the run's record
    finally:
        notify_run(c, run_id)
    return 0


def _landable(run: Run) -> bool:
    from bosun.engine import verdict

    judged = verdict.of_run(run)
    return judged is not None and judged["outcome"] == verdict.LANDABLE


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
