"""A run's worktree from start to end: fresh or from the warm pool, set up, and given back.

``make_worktree`` (the prepare phase) is the three steps below. ``open_worktree`` leases a pooled worktree when ``[pool] size`` is set and one is idle, or
adds a fresh one. ``set_up_run`` (prepare, after the view exists) leases the run's ports, copies,
links and runs the set-up, and tells the view which paths are environment. What set-up left for the
worker and each verification (ports, the manifest) is read through ``isolation/run_env.py``.
``close_worktree`` (cleanup) gives a pooled worktree back or removes a fresh one, and frees the ports.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bosun.core import paths
from bosun.core.config import Settings
from bosun.core.contract import TaskContract
from bosun.isolation import setup as su
from bosun.store.db import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from bosun.store.run import Run


def make_worktree(store: Store, settings: Settings, task: TaskContract, repo: Path, run: Run) -> Any:
    """The prepare phase's worktree: checked out at the run's start (fresh or from the pool), bosun's
    own view of it, and the run's set-up; returns the view."""
    from bosun.isolation.change import create_view

    wt = open_worktree(store, settings, task, repo, run.id, run.branch, run.start_commit, Path(run.worktree))
    view = create_view(paths.run_dir(run.id), wt, repo, run.start_commit)
    set_up_run(store, settings, task, repo, run.id, wt, run.start_commit, view)
    return view


def open_worktree(store: Store, settings: Settings, task: TaskContract, repo: Path, run_id: str, branch: str,
                  start: str, fresh_path: Path) -> Path:
    """The run's worktree, checked out at ``start`` on ``branch``; records a pooled one on the run."""
    from bosun.isolation.worktree import create_worktree

    if settings.pool.size > 0:
        from bosun.isolation import pool

        cfg = su.effective(settings.worktree, task.worktree, repo)
        key = su.setup_key(cfg, repo, start) if cfg.setup else None
        row = pool.lease(store, repo, run_id, branch, start, key)
        if row is not None:
            slot = Path(row["path"])
            store.update_run(run_id, worktree=str(slot))
            store.merge_data(run_id, pooled={"path": str(slot), "setup_key": row.get("setup_key")})
            return slot
    create_worktree(repo, fresh_path, branch, start)
    return fresh_path


def set_up_run(store: Store, settings: Settings, task: TaskContract, repo: Path, run_id: str, worktree: Path,
               start: str, view: Any) -> su.Environment | None:
    """Ports, included files, links and set-up commands for the run; None when there is nothing to do."""
    from bosun.isolation.change import set_environment
    from bosun.isolation.ports import allocate

    cfg = su.effective(settings.worktree, task.worktree, repo)
    if cfg.empty:
        return None
    rdir = paths.run_dir(run_id)
    block = allocate(store, run_id, cfg.ports, cfg.port_range) if cfg.ports else None
    pooled = store.require_run(run_id).data.pooled
    key = su.setup_key(cfg, repo, start) if cfg.setup else ""
    if pooled:
        from bosun.isolation.pool import env_dir_of

        env_dir = env_dir_of(pooled["path"])
        previous = su.read_manifest(env_dir)
        # Reused only when nothing changed them since they were made: a worker without the sandbox
        # could have written through a link, and that must not become the next run's environment.
        same = previous is not None and key and pooled.get("setup_key") == key
        reuse = previous.outputs if same and previous is not None and not su.changed_since_setup(previous) else None
    else:
        env_dir, reuse = rdir / "env", None
    env = su.set_up(cfg, repo, worktree, start, env_dir, ports_env=block.env() if block else {},
                    setup_home=rdir / "setup-home", reuse_outputs=reuse, key=key)
    shutil.rmtree(rdir / "setup-home", ignore_errors=True)
    env.ports = block.to_dict() if block else None
    su.write_manifest(rdir, env)
    if pooled:
        su.write_manifest(env_dir, env)  # the next run with the same set-up reuses its outputs
    set_environment(view, env.paths)
    store.merge_data(run_id, ports=env.ports, setup_key=key or None, environment=env.paths)
    return env


def borrow_checkout(run: Run, commit: str) -> Path | None:
    """An idle pooled worktree of the run's repository at ``commit``, for the baseline; None when the
    pool is off or has none idle (the caller then adds a worktree of its own)."""
    from bosun.core.config import load_settings
    from bosun.isolation.pool import borrow
    from bosun.store.db import open_store

    repo = Path(run.repo)
    if load_settings(repo).pool.size <= 0:
        return None
    store = open_store()  # the baseline's thread: a connection of its own
    try:
        return borrow(store, repo, commit)
    finally:
        store.close()


def return_checkout(run: Run, slot: Path) -> None:
    from bosun.core.config import load_settings
    from bosun.isolation.pool import return_borrowed
    from bosun.store.db import open_store

    repo = Path(run.repo)
    store = open_store()
    try:
        return_borrowed(store, repo, slot, load_settings(repo).pool.size)
    finally:
        store.close()


def close_worktree(store: Store, settings: Settings, run: Run, *, diff_saved: bool | None = None) -> None:
    """Give a pooled worktree back (or remove it), remove a fresh one; free the ports and set-up files.
    The caller holds the run lock, the run can no longer move, and its diff is saved; ``diff_saved``
    is what that saving returned (``preserve_diff``), else the diff is computed again to know."""
    from bosun.isolation import ports
    from bosun.isolation.pool import give_back
    from bosun.isolation.worktree import remove_worktree

    pooled = bool(run.data.pooled)
    saved = diff_saved if diff_saved is not None else (pooled and _diff_saved(run))
    if not (pooled and saved and give_back(store, run, settings.pool.size)):
        remove_worktree(Path(run.repo), Path(run.worktree), run.branch, delete_branch=True)
    ports.release(store, run.id)
    shutil.rmtree(paths.run_dir(run.id) / "env", ignore_errors=True)


def _diff_saved(run: Run) -> bool:
    """Whether the worker's leftover diff is known (empty, or saved to ``final.patch`` by cleanup): a
    pooled worktree whose change cannot be computed is removed, never reset for another run."""
    from bosun.core.errors import BosunError
    from bosun.isolation.change import read_change
    from bosun.isolation.run_env import view_of

    try:
        diff = read_change(view_of(run)).diff
    except BosunError:
        return False  # the diff cannot be saved: the caller removes the worktree instead of reusing it
    return not diff or (paths.run_dir(run.id) / "final.patch").is_file()
