"""A plan's names and places: its id, its directory, its branches, and whether a process drives it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from bosun.core import paths
from bosun.core.errors import BadInput
from bosun.engine import locks
from bosun.plans import model

PLAN_ID_RE = re.compile(r"^p-[a-z0-9][a-z0-9-]{1,61}$")


def check_plan_id(plan_id: str) -> str:
    if not isinstance(plan_id, str) or not PLAN_ID_RE.match(plan_id):
        raise BadInput(
            f"malformed plan id {plan_id!r}",
            "plan ids look like p-20261129-142501-a1b2c3; `bosun plan list` shows them",
        )
    return paths.check_run_id(plan_id)


def new_plan_id() -> str:
    from bosun.engine.context import new_run_id

    return "p-" + new_run_id()


def plan_dir(plan_id: str) -> Path:
    return paths.bosun_home() / "plans" / check_plan_id(plan_id)


def integration_branch(plan_id: str) -> str:
    return f"bosun/plan/{plan_id}"


def wave_base_ref(plan_id: str) -> str:
    """The branch holding the commit the current wave started from (its runs' source branch)."""
    return f"bosun/plan-base/{plan_id}"


def driver_alive(plan_id: str) -> bool:
    owner = locks.read_owner(plan_id)
    return locks.owner_alive(owner) and bool(owner) and int(owner["pid"]) != os.getpid()  # type: ignore[index]


def plan_of(row: dict[str, Any]) -> model.Plan:
    """The plan a stored plan row holds."""
    return model.parse_plan(row["document"], f"plan {row['id']}")
