"""The warm pool: checkouts bosun owns, kept idle and handed to a new run with an incremental checkout.

A ``git worktree add`` of a large repository writes every file; a pooled worktree already holds an
earlier checkout, so moving it to the run's start (``git checkout -B bosun/<id> START``, a two-way
merge of the index) rewrites only the files that differ.

Each pooled worktree is a row in the store (``pool_worktrees``) in exactly one state:

* ``idle``: clean, detached, nobody's; the only state a lease takes it from;
* ``leased``: held by one run (``run_id``); only that run's cleanup gives it back, and cleanup runs
  under the run lock and only for a run that can no longer move (or is forced to ``cancelled``),
  after its leftover diff was saved to ``final.patch``;
* ``reclaiming``: being created, reset or removed by one process (``owner_pid``); a dead owner's
  slot is removed by the next ``warm`` or ``gc``.

Every change of state is a compare-and-set on the row inside ``BEGIN IMMEDIATE``, so two runs never
lease one worktree, and nothing resets a worktree whose row does not say it is being reclaimed.
A run killed mid-work keeps its lease (the run is not finished): its worktree and diff stay until
``recover``, ``discard`` or ``cleanup``.
"""

from __future__ import annotations

import os
from pathlib import Path

from bosun.core import paths
from bosun.core.errors import BosunError
from bosun.isolation.git import git
from bosun.store.db import Store
from bosun.store.worktrees import IDLE, LEASED, RECLAIMING

TYPE_CHECKING = False  # typing's would import typing, which `bosun pool status` avoids
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from bosun.core.config import Settings
    from bosun.core.settings_cache import SettingsView
    from bosun.store.run import Run


def _me() -> dict[str, Any]:
    from bosun.proc import process_start_time

    return {"pid": os.getpid(), "start": process_start_time(os.getpid())}


def _owner_alive(row: dict[str, Any]) -> bool:
    import json

    from bosun.proc import pid_alive

    if not row.get("owner_pid"):
        return False
    start = json.loads(row["owner_start"]) if row.get("owner_start") else None
    return pid_alive(int(row["owner_pid"]), start)


def repo_key(repo: Path | str) -> str:
    import hashlib

    return hashlib.sha256(os.path.realpath(repo).encode()).hexdigest()[:16]


def pool_root(repo: Path | str) -> Path:
    return paths.bosun_home() / "pool" / repo_key(repo)


def env_dir_of(slot: Path | str) -> Path:
    """Where a pooled worktree keeps its set-up outputs between runs: outside the directory of the
    worktrees (a worker's sibling ``../`` writes are looked for there), never inside the worktree."""
    slot = Path(slot)
    return paths.bosun_home() / "pool-env" / slot.parent.name / slot.name


def _head(path: Path) -> str:
    return git(["rev-parse", "--verify", "HEAD"], path).stdout.strip()


# ---------------------------------------------------------------------------------------------
# filling and emptying


def warm(store: Store, repo: Path, settings: Settings, at: str = "HEAD",
         on_made: Callable[[str, int, int], None] | None = None) -> list[str]:
    """Create idle worktrees until the pool of ``repo`` holds ``[pool] size``; returns the new paths.
    ``on_made(path, held, size)`` is called after each one (a full checkout each: the CLI says so)."""
    from bosun.store.worktrees import pool_insert, pool_move, pool_rows

    _repair(store, str(repo))
    size = settings.pool.size
    made: list[str] = []
    root = pool_root(repo)
    root.mkdir(parents=True, exist_ok=True)
    commit = git(["rev-parse", "--verify", f"{at}^{{commit}}"], repo).stdout.strip()
    n = 0
    # Counted again each time: another `warm` may be filling the same pool.
    while len(rows := pool_rows(store, str(repo))) < size:
        n += 1
        slot = root / f"slot-{n}"  # named like a run id: not mistaken for a worker's stray write
        if slot.exists() or any(r["path"] == str(slot) for r in rows):
            continue
        me = _me()
        if not pool_insert(store, str(slot), str(repo), RECLAIMING, me):
            continue
        try:
            git(["worktree", "add", "--quiet", "--detach", str(slot), commit], repo)
        except BosunError:
            _discard(store, str(repo), slot, RECLAIMING)
            raise
        pool_move(store, str(slot), RECLAIMING, IDLE, head=commit)
        made.append(str(slot))
        if on_made is not None:
            on_made(str(slot), len(rows) + 1, size)
    return made


def drain(store: Store, repo: Path) -> list[str]:
    """Remove every idle worktree of ``repo``'s pool (leased ones stay with their runs)."""
    from bosun.store.worktrees import pool_move, pool_rows

    _repair(store, str(repo))
    gone = []
    for row in pool_rows(store, str(repo)):
        if row["state"] == IDLE and pool_move(store, row["path"], IDLE, RECLAIMING, owner=_me()):
            _discard(store, str(repo), Path(row["path"]), RECLAIMING)
            gone.append(row["path"])
    return gone


def shrink(store: Store, dry_run: bool = False) -> list[tuple[str, int]]:
    """Idle worktrees beyond each repository's ``[pool] size`` removed (``gc``); (path, bytes) each."""
    from bosun.core.config import load_settings
    from bosun.isolation.diskuse import disk_usage
    from bosun.store.worktrees import pool_move, pool_rows

    out: list[tuple[str, int]] = []
    by_repo: dict[str, list[dict[str, Any]]] = {}
    for row in pool_rows(store):
        by_repo.setdefault(row["repo"], []).append(row)
    for repo, rows in by_repo.items():
        if not dry_run:
            _repair(store, repo)
        try:
            size = load_settings(Path(repo)).pool.size if Path(repo).is_dir() else 0
        except BosunError:
            continue  # a repo whose config no longer loads keeps its pool as it is until it does
        keep = size - sum(1 for r in rows if r["state"] == LEASED)
        idle = [r for r in rows if r["state"] == IDLE]
        for row in idle[max(0, keep):]:
            slot = Path(row["path"])
            bytes_ = disk_usage(slot) + disk_usage(env_dir_of(slot))
            if dry_run:
                out.append((row["path"], bytes_))
            elif pool_move(store, row["path"], IDLE, RECLAIMING, owner=_me()):
                _discard(store, repo, slot, RECLAIMING)
                out.append((row["path"], bytes_))
    return out


def _repair(store: Store, repo: str) -> None:
    """Slots left ``reclaiming`` by a process that died go (their state is unknown); leases held by
    runs that are gone from the store go too (nothing of a live run is there to lose)."""
    from bosun.store.worktrees import pool_rows

    for row in pool_rows(store, repo):
        if row["state"] == RECLAIMING and not _owner_alive(row):
            _discard(store, repo, Path(row["path"]), RECLAIMING, stale_owner=row.get("owner_pid"))
        elif row["state"] == LEASED and store.get_run(row["run_id"]) is None:
            from bosun.store.worktrees import pool_move

            if pool_move(store, row["path"], LEASED, RECLAIMING, run_id=row["run_id"], owner=_me()):
                _discard(store, repo, Path(row["path"]), RECLAIMING)


def _discard(store: Store, repo: str, slot: Path, expected: str, stale_owner: Any = None) -> None:
    from bosun.isolation.worktree import remove_worktree
    from bosun.store.worktrees import pool_delete, pool_move

    if stale_owner is not None:
        # Take the slot over first, so two repairers never both remove it.
        if not pool_move(store, str(slot), RECLAIMING, RECLAIMING, owner=_me()):
            return
    if Path(repo).is_dir():
        try:
            remove_worktree(Path(repo), slot, None, delete_branch=False)
        except BosunError:
            pass  # git does not know the slot (a half-made one): the directory goes all the same
    import shutil

    shutil.rmtree(slot, ignore_errors=True)
    shutil.rmtree(env_dir_of(slot), ignore_errors=True)
    pool_delete(store, str(slot), expected)


# ---------------------------------------------------------------------------------------------
# leasing and giving back


def lease(store: Store, repo: Path, run_id: str, branch: str, start: str,
          setup_key: str | None) -> dict[str, Any] | None:
    """A pooled worktree (its row: ``path``, the ``setup_key`` its set-up outputs were made with) moved
    to ``start`` on a new ``branch`` for ``run_id``; None when none is idle (or moving it failed: then
    it left the pool and the caller makes a fresh worktree)."""
    from bosun.store.worktrees import pool_lease, pool_move

    row = pool_lease(store, str(repo), run_id, setup_key)
    if row is None:
        return None
    slot = Path(row["path"])
    try:
        # A two-way merge from the idle checkout: only files that differ are written. The worktree is
        # clean (reclaim left it so) and detached, so nothing of anyone's can be overwritten.
        git(["checkout", "--quiet", "--no-recurse-submodules", "-B", branch, start], slot)
    except BosunError:
        if pool_move(store, str(slot), LEASED, RECLAIMING, run_id=run_id, owner=_me()):
            _discard(store, str(repo), slot, RECLAIMING)
        return None
    return row


def leased_row(store: Store, worktree: Path | str) -> dict[str, Any] | None:
    from bosun.store.worktrees import pool_row

    return pool_row(store, str(worktree))


def give_back(store: Store, run: Run, size: int) -> bool:
    """Return the finished run's pooled worktree to the pool (reset to a clean detached checkout) or
    remove it when the pool is full. False when the worktree is not a pooled one held by this run.

    The caller holds the run lock, has checked the run can no longer move, and saved its diff."""
    from bosun.store.worktrees import pool_move

    slot = Path(run.worktree)
    repo = run.repo
    row = leased_row(store, slot)
    if row is None or row["state"] != LEASED or row["run_id"] != run.id:
        return False
    if not pool_move(store, str(slot), LEASED, RECLAIMING, run_id=run.id, owner=_me()):
        return False
    _make_idle(store, repo, slot, size, run.start_commit, setup_key=run.data.setup_key)
    _delete_branch(repo, run.branch)
    return True


def _make_idle(store: Store, repo: str, slot: Path, size: int, start: str | None, **fields: Any) -> None:
    """A slot this process holds as ``reclaiming``, reset to a clean detached checkout of ``start``
    (None: where it stands) and made idle; removed instead when the pool already holds ``size`` idle
    worktrees or the reset fails."""
    from bosun.store.worktrees import pool_move, pool_rows

    idle = sum(1 for r in pool_rows(store, repo) if r["state"] == IDLE)
    try:
        if idle >= size:
            raise BosunError("the pool is full", "the checkout is removed instead of kept idle; a larger "
                             "[pool] size in bosun.toml keeps more")
        _reset(slot, start or _head(slot))
        head = _head(slot)
    except BosunError:
        _discard(store, repo, slot, RECLAIMING)
        return
    pool_move(store, str(slot), RECLAIMING, IDLE, head=head, **fields)


def borrow(store: Store, repo: Path, commit: str) -> Path | None:
    """An idle pooled worktree, held by this process and moved to a detached checkout of ``commit``,
    for work that needs a checkout only for a while and leaves nothing (the baseline's verify
    commands); None unless two are idle. Held as ``reclaiming`` with this process as owner, so a
    process that dies holding it loses it to the next ``warm`` or ``gc``, never to another run.

    The last idle worktree is left for the next run: a run's checkout is on its way to the worker,
    the baseline's only overlaps the worker."""
    from bosun.store.worktrees import pool_move, pool_rows

    idle = [row for row in pool_rows(store, str(repo)) if row["state"] == IDLE]
    for row in idle[1:]:
        if not pool_move(store, row["path"], IDLE, RECLAIMING, owner=_me()):
            continue
        slot = Path(row["path"])
        try:
            git(["checkout", "--quiet", "--no-recurse-submodules", "--detach", commit], slot)
        except BosunError:
            _discard(store, str(repo), slot, RECLAIMING)
            return None
        return slot
    return None


def return_borrowed(store: Store, repo: Path, slot: Path, size: int) -> None:
    """A borrowed worktree back to idle, reset to a clean checkout of where it stands (or removed
    when the pool is full again or the reset fails)."""
    _make_idle(store, str(repo), slot, size, None)


def _reset(slot: Path, start: str) -> None:
    """A clean, detached checkout of the run's start again: every file of the worker's gone."""
    from bosun.isolation.change import _remove_nested_git_entries

    git(["checkout", "--quiet", "--force", "--detach", start], slot)
    git(["read-tree", "--reset", "-u", "HEAD"], slot)
    git(["clean", "-ffdxq"], slot)
    _remove_nested_git_entries(slot)


def _delete_branch(repo: str, branch: str) -> None:
    if branch and Path(repo).is_dir():
        git(["branch", "-D", branch], repo, check=False)


def status(store: Store, repo: Path, settings: Settings | SettingsView) -> dict[str, Any]:
    from bosun.store.worktrees import pool_rows

    rows = pool_rows(store, str(repo))
    return {
        "repo": str(repo),
        "size": settings.pool.size,
        "idle": sum(1 for r in rows if r["state"] == IDLE),
        "leased": sum(1 for r in rows if r["state"] == LEASED),
        "reclaiming": sum(1 for r in rows if r["state"] == RECLAIMING),
        "worktrees": [{"path": r["path"], "state": r["state"], "run_id": r["run_id"], "head": r["head"]}
                      for r in rows],
    }
