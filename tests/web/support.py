"""Runs for history, savings, dashboard and budget tests: real delegations through the scripted worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bosun.core.contract import TaskContract
from bosun.core.errors import BosunError
from bosun.engine.context import RunContext
from bosun.engine.delegation import delegate
from bosun.store.db import open_store
from bosun.store.run import Run


def ctx() -> RunContext:
    return RunContext(open_store())


def contract(**over: Any) -> TaskContract:
    import sys

    task: dict[str, Any] = {
        "title": "Fix add()",
        "prompt": "add() subtracts; make it add. Do not touch the tests.",
        "verify": [f"{sys.executable} -m pytest -q tests"],
        "locked": ["tests/**"],
        "timeout_s": 60,
    }
    task.update(over)
    return TaskContract.model_validate(task)


def delegated(repo: Path, profile: str = "fix", **over: Any) -> Run:
    """Delegate a task; returns the run whatever state it ends in."""
    c = ctx()
    created: list[str] = []
    try:
        return delegate(c, contract(**over), repo, profile, on_prepared=created.append)
    except BosunError:
        return c.store.require_run(created[0])


def insert_plan(plan_id: str = "p-demo", run_id: str | None = None) -> str:
    """A three-task plan in two waves (a, b -> c), as the plan runner records one."""
    from bosun.store.plans import PlanStore

    doc = {"title": "Demo plan", "tasks": [{"id": "lexer"}, {"id": "docs"}, {"id": "parser", "depends": ["lexer", "docs"]}]}
    plan = {
        "id": plan_id, "state": "running", "title": "Demo plan", "repo": "/r", "source_branch": "main",
        "source_head": "a" * 40, "checkpoint": "b" * 40, "integration_branch": f"bosun/plan/{plan_id}",
        "document": doc,
    }
    tasks = [
        {"task_id": "lexer", "position": 0, "wave": 0, "state": "merged", "run_id": run_id, "definition": "x"},
        {"task_id": "docs", "position": 1, "wave": 0, "state": "working", "definition": "y"},
        {"task_id": "parser", "position": 2, "wave": 1, "state": "pending", "definition": "z"},
    ]
    PlanStore(open_store()).insert_plan(plan, tasks)
    return plan_id


def shared_home(root: Path, make: Any) -> tuple[Path, Any]:
    """A bosun home and repository made once (module-scoped fixtures): ``make(repo)``'s result."""
    import pytest

    from tests.conftest import GIT_ENV, make_repo

    home = root / "bosun-home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BOSUN_HOME", str(home))
        mp.setenv("BOSUN_CONFIG", str(root / "no-user-config.toml"))
        mp.setenv("GIT_CONFIG_GLOBAL", str(root / "gitconfig"))
        for key, value in GIT_ENV.items():
            mp.setenv(key, value)
        for key in ("PARENT_AGENT", "BOSUN_PROFILE", "BOSUN_MAX_CONCURRENT_RUNS"):
            mp.delenv(key, raising=False)
        repo = make_repo(root / "repo")
        return home, make(repo)
