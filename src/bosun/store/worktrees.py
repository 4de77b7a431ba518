"""Queries for worktree housekeeping: every run, a plan's state, port leases and the warm pool.

Port blocks and pool worktrees change hands only inside ``BEGIN IMMEDIATE`` transactions, so two
bosun processes never lease the same block or the same worktree (compare-and-set on the row).
"""

from __future__ import annotations

import json
import time

from bosun.store.db import Store
from bosun.store.run import Run

# Runs whose port block and pool worktree can be taken back: nothing of theirs runs any more.
RELEASED_STATES = ("integrated", "reported", "cancelled", "cleaned")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any



def all_runs(store: Store) -> list[Run]:
    return [Run.from_row(dict(r)) for r in store.db.execute("SELECT * FROM runs ORDER BY created_at")]


def plan_state(store: Store, plan_id: str) -> str | None:
    row = store.db.execute("SELECT state FROM plans WHERE id = ?", (plan_id,)).fetchone()
    return row[0] if row else None


# -- ports --------------------------------------------------------------------------------------


def lease_ports(store: Store, run_id: str, size: int, lo: int, hi: int, usable: Any) -> int | None:
    """The first port of a block of ``size`` ports in ``[lo, hi]`` leased to ``run_id``, or None when
    every block is taken. Blocks of runs that ended (or vanished) are taken back first. ``usable(first)``
    says whether the host has the block free (nothing else listening)."""
    marks = ", ".join("?" for _ in RELEASED_STATES)
    with store.tx() as db:
        db.execute(
            f"DELETE FROM port_leases WHERE run_id NOT IN (SELECT id FROM runs WHERE state NOT IN ({marks}))",
            RELEASED_STATES,
        )
        row = db.execute("SELECT first_port FROM port_leases WHERE run_id = ?", (run_id,)).fetchone()
        if row:
            return int(row[0])
        taken = [(int(r[0]), int(r[1])) for r in db.execute("SELECT first_port, size FROM port_leases")]
        first = lo
        while first + size - 1 <= hi:
            clash = next((f + s for f, s in taken if f < first + size and first < f + s), None)
            if clash is not None:
                first = clash
                continue
            if usable(first):
                db.execute("INSERT INTO port_leases(first_port, size, run_id, leased_at) VALUES (?,?,?,?)",
                           (first, size, run_id, time.time()))
                return first
            first += size
    return None


def release_ports(store: Store, run_id: str) -> None:
    with store.tx() as db:
        db.execute("DELETE FROM port_leases WHERE run_id = ?", (run_id,))


def port_leases(store: Store) -> list[dict[str, Any]]:
    return [dict(r) for r in store.db.execute("SELECT * FROM port_leases ORDER BY first_port")]


# -- pool ---------------------------------------------------------------------------------------

IDLE, LEASED, RECLAIMING = "idle", "leased", "reclaiming"


def pool_rows(store: Store, repo: str | None = None) -> list[dict[str, Any]]:
    if repo is None:
        rows = store.db.execute("SELECT * FROM pool_worktrees ORDER BY repo, path")
    else:
        rows = store.db.execute("SELECT * FROM pool_worktrees WHERE repo = ? ORDER BY path", (repo,))
    return [dict(r) for r in rows]


def pool_row(store: Store, path: str) -> dict[str, Any] | None:
    row = store.db.execute("SELECT * FROM pool_worktrees WHERE path = ?", (path,)).fetchone()
    return dict(row) if row else None


def pool_insert(store: Store, path: str, repo: str, state: str, owner: dict[str, Any]) -> bool:
    """A new slot (being created: ``reclaiming`` by ``owner``); False when the path is taken."""
    with store.tx() as db:
        if db.execute("SELECT 1 FROM pool_worktrees WHERE path = ?", (path,)).fetchone():
            return False
        db.execute(
            "INSERT INTO pool_worktrees(path, repo, state, owner_pid, owner_start, updated_at) VALUES (?,?,?,?,?,?)",
            (path, repo, state, owner["pid"], json.dumps(owner.get("start")), time.time()),
        )
    return True


def pool_lease(store: Store, repo: str, run_id: str, prefer_setup: str | None) -> dict[str, Any] | None:
    """Compare-and-set one idle worktree of ``repo`` to leased by ``run_id`` (one with the same set-up
    first). None when no worktree is idle."""
    with store.tx() as db:
        rows = db.execute("SELECT * FROM pool_worktrees WHERE repo = ? AND state = ? ORDER BY updated_at",
                          (repo, IDLE)).fetchall()
        if not rows:
            return None
        pick = next((r for r in rows if prefer_setup and r["setup_key"] == prefer_setup), rows[0])
        cur = db.execute(
            "UPDATE pool_worktrees SET state = ?, run_id = ?, owner_pid = NULL, owner_start = NULL, updated_at = ? "
            "WHERE path = ? AND state = ?", (LEASED, run_id, time.time(), pick["path"], IDLE))
        if cur.rowcount != 1:
            return None
        return dict(db.execute("SELECT * FROM pool_worktrees WHERE path = ?", (pick["path"],)).fetchone())


def pool_move(store: Store, path: str, expected: str, to: str, *, run_id: str | None = None,
              owner: dict[str, Any] | None = None, **fields: Any) -> bool:
    """Compare-and-set a slot's state; False when it is not in ``expected`` (or not held by ``run_id``)."""
    sets = {"state": to, "updated_at": time.time(),
            "owner_pid": owner["pid"] if owner else None,
            "owner_start": json.dumps(owner.get("start")) if owner else None, **fields}
    if to != LEASED:
        sets["run_id"] = None
    assigns = ", ".join(f"{k} = ?" for k in sets)
    where = "path = ? AND state = ?"
    args: list[Any] = [*sets.values(), path, expected]
    if run_id is not None:
        where += " AND run_id = ?"
        args.append(run_id)
    with store.tx() as db:
        cur = db.execute(f"UPDATE pool_worktrees SET {assigns} WHERE {where}", args)
        return cur.rowcount == 1


def pool_delete(store: Store, path: str, expected: str) -> bool:
    with store.tx() as db:
        cur = db.execute("DELETE FROM pool_worktrees WHERE path = ? AND state = ?", (path, expected))
        return cur.rowcount == 1
