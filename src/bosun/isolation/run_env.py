"""A run's environment as its record gives it: the view bosun reads its worktree through, and what
set-up gave it (ports, links and copies) for the worker and for each verification; the run's verify
commands in a directory with that set-up put back and a HOME of their own (``run_verify_commands``).

Read by the engine and by verification alike (``isolation/verification.py``): both must see the
same view and put back the same set-up, so both take it from here.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bosun.core import paths
from bosun.core.changes import GateResult
from bosun.core.contract import TaskContract
from bosun.isolation import setup as su

if TYPE_CHECKING:
    from bosun.isolation.change import View
    from bosun.store.run import Run


def view_of(run: Run) -> View:
    """The run's view; made on first use for runs prepared before views existed (no seed index)."""
    from bosun.isolation.change import create_view, view_for

    rdir = paths.run_dir(run.id)
    objects = run.data.view_objects
    if objects:
        view = view_for(rdir, Path(run.worktree), Path(objects), run.start_commit)
        if view.git_dir.is_dir():
            return view
    return create_view(rdir, Path(run.worktree), Path(run.repo), run.start_commit, seed=False)


def run_env(run: Run) -> dict[str, str]:
    """What the worker and the verify commands get from set-up: ``BOSUN_PORT`` and ``BOSUN_PORT_RANGE``."""
    from bosun.isolation.ports import block_of

    block = block_of(run.data.ports)
    return block.env() if block else {}


def with_run_env(task: TaskContract, run: Run) -> TaskContract:
    """The task with the run's ports added to every verify command's environment."""
    extra = run_env(run)
    if not extra:
        return task
    verify = [c.model_copy(update={"env": {**extra, **c.env}}) for c in task.verify]
    return task.model_copy(update={"verify": verify})


def environment_identity(run: Run) -> str | None:
    """What the run's set-up is, for caches of results that depend on it (the baseline): the set-up
    key, the paths and the fingerprint of their content. None without set-up. Ports are left out."""
    env = su.read_manifest(paths.run_dir(run.id))
    if env is None:
        return None
    return f"{env.setup_key}\0{sorted(env.links)}\0{env.copies}\0{env.fingerprint}"


def before_verify(run: Run, workdir: Path) -> None:
    """The environment put back into ``workdir`` as set-up left it (the worker may have replaced it)."""
    env = su.read_manifest(paths.run_dir(run.id))
    if env is not None:
        su.restore(env, workdir)


def environment_gates(run: Run) -> list[GateResult]:
    """``ENVIRONMENT_CHANGED`` when anything set-up put in place changed since (a write through a link,
    possible only without the sandbox): the verify commands would not run in the set-up the run had."""
    env = su.read_manifest(paths.run_dir(run.id))
    if env is None or not su.changed_since_setup(env):
        return []
    return [GateResult("ENVIRONMENT_CHANGED", False,
                       "files set-up put in place (linked or copied: " + ", ".join(env.paths[:6]) + ") changed "
                       "after set-up; a write through a link changes the verify environment")]


def fresh_verify_home(run_id: str) -> Path:
    """A HOME nobody could have prepared: created now, under a random name, after the worker stopped."""
    rdir = paths.run_dir(run_id)
    rdir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="verify-home-", dir=rdir))


def run_verify_commands(task: TaskContract, run: Run, workdir: Path) -> dict[str, Any]:
    """The task's verify commands in ``workdir`` with the run's set-up put back, a fresh HOME and the
    kernel confinement verification runs under."""
    from bosun.isolation.verify_commands import run_verification, verify_confinement

    before_verify(run, workdir)  # the set-up the worker had, whatever it did to it
    task = with_run_env(task, run)

    home = fresh_verify_home(run.id)
    try:
        confine = verify_confinement(Path(run.repo), workdir, home, su.linked_reads(paths.run_dir(run.id)))
        return run_verification(task, workdir, home, confine=confine)
    finally:
        shutil.rmtree(home, ignore_errors=True)
