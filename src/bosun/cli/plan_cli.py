"""`bosun plan ...`: parser and handlers for plans (many tasks as a dependency graph)."""

from __future__ import annotations

import argparse


def add_plan_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("plan", help="run many tasks as a dependency graph in parallel waves")
    p.add_subparsers(dest="plan_command", metavar="SUBCOMMAND")


def run_plan_command(args: argparse.Namespace) -> int:
    from bosun.errors import BadInput

    raise BadInput("plans are not available yet", "run tasks one by one with `bosun delegate`")
