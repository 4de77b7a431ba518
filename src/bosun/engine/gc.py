"""`bosun gc`: remove what finished runs left behind, never anything of a live run or not bosun's.

What goes, each only when it is provably bosun's and provably dead:

* **finished runs' worktrees and branches** (integrated, reported, cancelled): through ``cleanup``,
  which takes the run lock (a live owner makes gc skip the run), saves the worker's leftover diff to
  ``final.patch`` and removes the worktree and its ``bosun/<id>`` branch;
* **refused and failed runs nobody touched for ``--stale``** (rejected, failed, blocked; default a
  day): discarded as ``bosun discard`` does (the diff saved first); a younger one is listed as kept,
  with when it will go and how to remove it now. A verified run waits for a person and is never
  collected;
* **run directories** (records and logs) of cleaned runs older than ``--older-than`` that are not among
  the ``--keep`` newest; the run's row in the store stays (history, receipts);
* **orphaned worktrees**: directories under ``$BOSUN_HOME/worktrees`` whose run is gone from the store or
  already cleaned, and ``bosun/<id>`` branches whose run is cleaned;
* **checkouts left registered in the user's repository** (a baseline's, a verification's, a plan
  verify's) under bosun's state directory, found in each repository's ``git worktree list``, whose
  run or plan no live process holds: they only ever live while their process runs;
* **run directories without a run** and cached baselines, both older than ``--older-than``;
* **pool worktrees beyond the pool's size** (idle ones only: :mod:`bosun.isolation.pool`).

A run is live when its state can still move on (anything but integrated, reported, cancelled or
cleaned, and a refused or failed run younger than ``--stale``), when a live process holds its lock,
or when the plan it belongs to is still running. Safe to
run from cron: each removal takes the run lock first, and a dry run removes nothing.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bosun.core import paths
from bosun.core import states as S
from bosun.core.errors import BosunError, Busy
from bosun.engine import locks
from bosun.isolation.diskuse import disk_usage
from bosun.store.db import Store

# Runs whose state can no longer move to anything that needs the worktree.
FINISHED = frozenset({S.INTEGRATED, S.REPORTED, S.CANCELLED, S.CLEANED})
# Runs that can still be revised or retried, but no longer land without someone acting.
STALE_STATES = frozenset({S.REJECTED, S.FAILED, S.BLOCKED})
DEFAULT_OLDER_THAN_S = 30 * 86400.0
DEFAULT_STALE_S = 86400.0
DEFAULT_KEEP = 20

TYPE_CHECKING = False
if TYPE_CHECKING:
    from bosun.store.run import Run


@dataclass
class Removal:
    kind: str  # worktree, branch, run_dir, orphan_worktree, orphan_branch, orphan_checkout, orphan_run_dir,
    # baseline, pool_worktree
    path: str
    bytes: int
    run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "bytes": self.bytes, "run_id": self.run_id}


@dataclass
class GcResult:
    dry_run: bool
    removed: list[Removal] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    @property
    def bytes_freed(self) -> int:
        return sum(r.bytes for r in self.removed)

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "removed": [r.to_dict() for r in self.removed],
                "bytes_freed": self.bytes_freed, "skipped": self.skipped}


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``2w``, ``90m`` or plain seconds -> seconds."""
    from bosun.core.errors import BadInput

    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    raw = text.strip().lower()
    try:
        if raw and raw[-1] in units:
            value = float(raw[:-1]) * units[raw[-1]]
        else:
            value = float(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise BadInput(f"cannot read the age {text!r}", "write it like 30d, 12h, 2w or 90m")
    return value


def _lock_alive(run_id: str) -> bool:
    return locks.owner_alive(locks.read_owner(run_id))


def _plan_alive(store: Store, run: Run) -> bool:
    from bosun.store.worktrees import plan_state

    plan_id = run.plan_id
    return bool(plan_id) and plan_state(store, str(plan_id)) in ("running", "paused")


def collect(
    store: Store,
    older_than_s: float = DEFAULT_OLDER_THAN_S,
    keep: int = DEFAULT_KEEP,
    dry_run: bool = False,
    now: float | None = None,
    stale_s: float = DEFAULT_STALE_S,
) -> GcResult:
    from bosun.store.worktrees import all_runs

    now = time.time() if now is None else now
    result = GcResult(dry_run=dry_run)
    runs = all_runs(store)
    by_id = {r.id: r for r in runs}
    for run in runs:
        if run.state in STALE_STATES:
            _stale_worktree(store, run, now, stale_s, result)
        else:
            _finished_worktree(store, run, result)
    _orphan_worktrees(by_id, result)
    _orphan_checkouts(runs, by_id, result)
    _orphan_branches(store, runs, result)
    newest = {r.id for r in sorted(runs, key=lambda r: r.created_at, reverse=True)[: max(0, keep)]}
    for run in runs:
        if run.id not in newest:
            _old_run_dir(store, run, now - older_than_s, result)
    _orphan_run_dirs(by_id, now - older_than_s, result)
    _old_baselines(now - older_than_s, result)
    _pool_surplus(store, result)
    return result


def _skip(result: GcResult, run_id: str, reason: str) -> None:
    result.skipped.append({"run_id": run_id, "reason": reason})


def _finished_worktree(store: Store, run: Run, result: GcResult) -> None:
    from bosun.isolation.worktree import branch_exists

    wt = Path(run.worktree)
    has_branch = run.state != S.CLEANED and branch_exists(run.repo, run.branch) if Path(run.repo).is_dir() else False
    if run.state not in FINISHED or run.state == S.CLEANED or not (wt.exists() or has_branch):
        return
    if _lock_alive(run.id):
        _skip(result, run.id, "a live process holds the run")
        return
    if _plan_alive(store, run):
        _skip(result, run.id, "its plan is still running")
        return
    # A pooled worktree goes back to the pool (nothing freed); a fresh one is removed.
    pooled = bool(run.data.pooled)
    size = disk_usage(wt) if _is_bosun_worktree(wt) and not pooled else 0
    if not result.dry_run:
        from bosun.engine.context import RunContext
        from bosun.engine.teardown import cleanup

        try:
            cleanup(RunContext(store), run.id)
        except Busy:
            _skip(result, run.id, "a live process holds the run")
            return
        except BosunError as exc:
            _skip(result, run.id, f"cleanup failed: {exc.message}")
            return
    result.removed.append(Removal("worktree", str(wt), size, run.id))
    if has_branch:
        result.removed.append(Removal("branch", f"{run.repo}:{run.branch}", 0, run.id))


def _stale_worktree(store: Store, run: Run, now: float, stale_s: float, result: GcResult) -> None:
    """A refused or failed run's worktree and branch: discarded once nobody touched the run for
    ``stale_s``; before that, kept and said so (when it goes, how to remove it now)."""
    from bosun.isolation.worktree import branch_exists

    wt = Path(run.worktree)
    has_branch = branch_exists(run.repo, run.branch) if Path(run.repo).is_dir() else False
    if not (wt.exists() or has_branch):
        return
    if now - run.updated_at < stale_s:
        left = _age(stale_s - (now - run.updated_at))
        _skip(result, run.id, f"{run.state} {_age(now - run.updated_at)} ago: kept {left} more for a revise "
                              f"(`bosun discard {run.id}` removes it now)")
        return
    if _lock_alive(run.id) or _plan_alive(store, run):
        _skip(result, run.id, "a live process holds the run" if _lock_alive(run.id) else "its plan is still running")
        return
    size = disk_usage(wt) if _is_bosun_worktree(wt) and not run.data.pooled else 0
    if not result.dry_run:
        from bosun.engine.context import RunContext
        from bosun.engine.teardown import discard

        try:
            discard(RunContext(store), run.id)
        except BosunError as exc:
            _skip(result, run.id, f"discard failed: {exc.message}")
            return
    result.removed.append(Removal("worktree", str(wt), size, run.id))
    if has_branch:
        result.removed.append(Removal("branch", f"{run.repo}:{run.branch}", 0, run.id))


def _age(seconds: float) -> str:
    """A duration in the largest whole unit: 40 min, 5 h, 3 d."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


def _is_bosun_worktree(path: Path) -> bool:
    """Under bosun's own worktrees or pool directory (never a path a damaged row could point anywhere)."""
    home = paths.bosun_home()
    real = os.path.realpath(path)
    return any(real.startswith(os.path.realpath(home / sub) + os.sep) for sub in ("worktrees", "pool"))


def _repo_of_worktree(wt: Path) -> Path | None:
    """The main repository a linked worktree belongs to, read from its ``.git`` file."""
    gitfile = wt / ".git"
    try:
        text = gitfile.read_text("utf-8") if gitfile.is_file() and not gitfile.is_symlink() else ""
    except OSError:
        return None
    if not text.startswith("gitdir: "):
        return None
    gitdir = Path(text[len("gitdir: "):].strip())
    # <repo>/.git/worktrees/<name>
    if gitdir.parent.name != "worktrees":
        return None
    common = gitdir.parent.parent
    return common.parent if common.name == ".git" else common


def _orphan_worktrees(by_id: dict[str, Run], result: GcResult) -> None:
    root = paths.bosun_home() / "worktrees"
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        name = entry.name
        run = by_id.get(name)
        if not paths.RUN_ID_RE.match(name) or entry.is_symlink():
            continue
        if run is not None and run.state != S.CLEANED:
            continue  # a run that owns it: handled above, or live
        if _lock_alive(name):
            _skip(result, name, "a live process holds the run")
            continue
        size = disk_usage(entry)
        if not result.dry_run:
            try:
                locks.acquire(name)
            except Busy:
                _skip(result, name, "a live process holds the run")
                continue
            try:
                _remove_worktree_dir(entry)
            finally:
                locks.release(name)
        result.removed.append(Removal("orphan_worktree", str(entry), size, name))


def _orphan_checkouts(runs: list[Run], by_id: dict[str, Run], result: GcResult) -> None:
    """Checkouts registered in the users' repositories under bosun's state directory whose owner (the
    run or plan named by the path) no live process holds. A run's own worktree is left to the passes
    above while its directory is there, the pool's to the pool."""
    from bosun.isolation.checkouts import registered_under, remove_checkout

    home = paths.bosun_home()
    for repo in sorted({r.repo for r in runs if Path(r.repo).is_dir()}):
        for path in registered_under(repo, home):
            owner = _checkout_owner(path, home, by_id)
            if owner is None:
                continue
            if _lock_alive(owner):
                _skip(result, owner, "a live process holds the run")
                continue
            if not result.dry_run:
                try:
                    locks.acquire(owner)
                except Busy:
                    _skip(result, owner, "a live process holds the run")
                    continue
                try:
                    remove_checkout(repo, path)
                finally:
                    locks.release(owner)
            result.removed.append(Removal("orphan_checkout", str(path), 0, owner))


def _checkout_owner(path: Path, home: Path, by_id: dict[str, Run]) -> str | None:
    """The run or plan id a checkout under bosun's home belongs to, when gc may judge it here."""
    try:
        parts = Path(os.path.abspath(path)).relative_to(home).parts
    except ValueError:
        parts = Path(os.path.realpath(path)).relative_to(os.path.realpath(home)).parts
    if len(parts) < 2 or not paths.RUN_ID_RE.match(parts[1]):
        return None
    where, owner = parts[0], parts[1]
    if where in ("runs", "plans") and len(parts) > 2:
        return owner
    run = by_id.get(owner)
    if where == "worktrees" and len(parts) == 2 and not path.exists() and (run is None or run.state == S.CLEANED):
        return owner  # the directory is gone and so is its run: only git's registration is left
    return None


def _remove_worktree_dir(path: Path) -> None:
    from bosun.isolation.worktree import remove_worktree

    repo = _repo_of_worktree(path)
    if repo is not None and repo.is_dir():
        try:
            remove_worktree(repo, path, None, delete_branch=False)
        except BosunError:
            pass  # git no longer knows the worktree: the directory is removed below all the same
    if path.exists() or path.is_symlink():
        _rmtree(path)


def _rmtree(path: Path) -> None:
    def writable(func: Any, p: str, _exc: Any) -> None:
        # A worker may have left read-only directories: make them writable and retry once.
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, onerror=writable)


def _orphan_branches(store: Store, runs: list[Run], result: GcResult) -> None:
    """``bosun/<id>`` branches of cleaned runs that are still there (a cleanup interrupted half-way)."""
    from bosun.isolation.git import git

    by_repo: dict[str, dict[str, Run]] = {}
    for r in runs:
        by_repo.setdefault(r.repo, {})[r.branch] = r
    for repo, branches in by_repo.items():
        if not Path(repo).is_dir():
            continue
        res = git(["for-each-ref", "--format=%(refname:short)", "refs/heads/bosun/"], repo, check=False)
        for name in res.stdout.split():
            run = branches.get(name)
            if run is None or run.state != S.CLEANED or _lock_alive(run.id):
                continue  # not ours (another home, a plan branch) or not provably dead
            if Path(run.worktree).exists():
                continue  # the orphan worktree goes first; the branch on the next pass
            if not result.dry_run:
                git(["branch", "-D", name], repo, check=False)
            result.removed.append(Removal("orphan_branch", f"{repo}:{name}", 0, run.id))


def _old_run_dir(store: Store, run: Run, cutoff: float, result: GcResult) -> None:
    rdir = paths.run_dir(run.id)
    if run.state != S.CLEANED or run.updated_at > cutoff or not rdir.is_dir():
        return
    if _lock_alive(run.id):
        _skip(result, run.id, "a live process holds the run")
        return
    if Path(run.worktree).exists():
        return  # never the records of a run whose worktree is still there
    size = disk_usage(rdir)
    if not result.dry_run:
        try:
            locks.acquire(run.id)
        except Busy:
            _skip(result, run.id, "a live process holds the run")
            return
        try:
            _rmtree(rdir)
            store.merge_data(run.id, records_removed_at=time.time())
        finally:
            locks.release(run.id)
    result.removed.append(Removal("run_dir", str(rdir), size, run.id))


def _orphan_run_dirs(by_id: dict[str, Run], cutoff: float, result: GcResult) -> None:
    root = paths.runs_root()
    if not root.is_dir():
        return
    for entry in sorted(root.iterdir()):
        name = entry.name
        if name in by_id or not paths.RUN_ID_RE.match(name) or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            if entry.stat().st_mtime > cutoff:
                continue  # maybe a run being created right now: its row comes a moment later
        except OSError:
            continue
        if _lock_alive(name) or (paths.worktree_dir(name)).exists():
            continue
        size = disk_usage(entry)
        if not result.dry_run:
            _rmtree(entry)
        result.removed.append(Removal("orphan_run_dir", str(entry), size, name))


def _old_baselines(cutoff: float, result: GcResult) -> None:
    root = paths.bosun_home() / "baselines"
    if not root.is_dir():
        return
    for entry in sorted(root.glob("*.json")):
        try:
            if entry.stat().st_mtime > cutoff:
                continue
        except OSError:
            continue
        size = disk_usage(entry)
        if not result.dry_run:
            entry.unlink(missing_ok=True)
        result.removed.append(Removal("baseline", str(entry), size))


def _pool_surplus(store: Store, result: GcResult) -> None:
    """Idle pool worktrees beyond each repository's ``[pool] size`` (leased ones are never touched)."""
    from bosun.isolation.pool import shrink

    for path, size in shrink(store, dry_run=result.dry_run):
        result.removed.append(Removal("pool_worktree", path, size))
