"""The run store: one SQLite database in WAL mode at ``$BOSUN_HOME/bosun.db``.

Connections are short-lived and autocommit; every write that must be atomic runs in an explicit
``BEGIN IMMEDIATE`` transaction so concurrent bosun processes serialize on the write lock instead of
failing. State changes go through ``transition`` only: it checks the transition table and the
expected current state in the same transaction, and records a transition row.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bosun.core.errors import BadInput, InvalidTransition, NotFound
from bosun.core.states import ACTIVE_STATES, check_transition
from bosun.store.data_fields import undeclared
from bosun.store.migrations import migrate
from bosun.store.run import COLUMNS, Run, data_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from typing import Any

RUN_COLUMNS = (*COLUMNS, "data")


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA busy_timeout=30000")
        _retry_locked(lambda: self.db.execute("PRAGMA journal_mode=WAL"))
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        _retry_locked(lambda: migrate(self.db))

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- runs ---------------------------------------------------------------------------------
    def insert_run(self, run: Run, prompt: str = "") -> None:
        """Create the run's row (and its first transition); ``run`` gets its times."""
        now = time.time()
        run.created_at = run.created_at or now
        run.updated_at = now
        row = {c: getattr(run, c) for c in COLUMNS}
        row["data"] = data_json(run.data)
        cols = ", ".join(RUN_COLUMNS)
        marks = ", ".join("?" for _ in RUN_COLUMNS)
        with self.tx() as db:
            db.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", [row[c] for c in RUN_COLUMNS])
            db.execute(
                "INSERT INTO transitions(run_id, from_state, to_state, at, pid, reason) VALUES (?,?,?,?,?,?)",
                (row["id"], None, row["state"], now, os.getpid(), "created"),
            )
            db.execute("INSERT INTO run_search(run_id, title, prompt) VALUES (?,?,?)", (row["id"], row["title"], prompt))

    def get_run(self, run_id: str) -> Run | None:
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return Run.from_row(dict(row)) if row else None

    def resolve_run_id(self, given: str) -> str:
        """The run id ``given`` names: itself, or the one run whose id starts with it (a unique prefix,
        as git takes a short sha). A prefix several runs share is refused with them listed; one no run
        has is returned as given (``require_run`` says it is unknown)."""
        if self.db.execute("SELECT 1 FROM runs WHERE id = ?", (given,)).fetchone():
            return given
        # Run ids are lower-case letters, digits and dashes, all below "{": the range is the prefix.
        rows = self.db.execute("SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id DESC LIMIT 6",
                               (given, given + "{")).fetchall()
        if len(rows) == 1:
            return str(rows[0]["id"])
        if rows:
            shown = ", ".join(r["id"] for r in rows[:5]) + (" ..." if len(rows) > 5 else "")
            raise BadInput(f"run id {given!r} is the start of several runs' ids: {shown}",
                           "give more of the id (`bosun list` shows them)", code="AMBIGUOUS_RUN")
        return given

    def require_run(self, run_id: str) -> Run:
        run = self.get_run(run_id)
        if run is None:
            raise NotFound(f"no run with id {run_id!r}", "`bosun list` shows your runs", code="UNKNOWN_RUN")
        return run

    def list_runs(
        self, state: str | None = None, limit: int = 50, search: str | None = None, plan_id: str | None = None
    ) -> list[Run]:
        sql = "SELECT * FROM runs"
        where: list[str] = []
        args: list[Any] = []
        if state:
            where.append("state = ?")
            args.append(state)
        if plan_id:
            where.append("plan_id = ?")
            args.append(plan_id)
        if search:
            where.append("id IN (SELECT run_id FROM run_search WHERE run_search MATCH ?)")
            args.append(search)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC LIMIT ?"
        args.append(limit)
        try:
            return [Run.from_row(dict(r)) for r in self.db.execute(sql, args)]
        except sqlite3.OperationalError as exc:
            if not search:
                raise
            raise BadInput(f"cannot search for {search!r}: {exc}",
                           'use plain words; quote a phrase with "double quotes"') from None

    def update_run(self, run_id: str, **fields: Any) -> None:
        if "data" in fields:
            raise ValueError("use merge_data to change run data")
        if not fields:
            return
        fields["updated_at"] = time.time()
        assigns = ", ".join(f"{k} = ?" for k in fields)
        with self.tx() as db:
            db.execute(f"UPDATE runs SET {assigns} WHERE id = ?", [*fields.values(), run_id])

    def merge_data(self, run_id: str, **items: Any) -> dict[str, Any]:
        """Merge keys into the run's JSON ``data`` column atomically; returns the new data. Every key
        is one of ``store.data_fields.WRITERS``: a field is declared, with its writer, before it is written."""
        unknown = undeclared(items)
        if unknown:
            raise ValueError(f"undeclared run data keys {unknown}: declare them in store/data_fields.py")
        with self.tx() as db:
            row = db.execute("SELECT data FROM runs WHERE id = ?", (run_id,)).fetchone()
            data = json.loads(row["data"]) if row else {}
            data.update(items)
            db.execute("UPDATE runs SET data = ?, updated_at = ? WHERE id = ?", (data_json(data), time.time(), run_id))
        return data

    def write(self, run: Run, **items: Any) -> None:
        """``merge_data`` for a run a verb holds: the record and the object both get ``items``, so the
        verb goes on with what it wrote instead of reading the row back."""
        self.merge_data(run.id, **items)
        for key, value in items.items():
            setattr(run.data, key, value)

    def set_columns(self, run: Run, **fields: Any) -> None:
        """``update_run`` for a run a verb holds, kept in step the same way."""
        self.update_run(run.id, **fields)
        for key, value in fields.items():
            setattr(run, key, value)

    def reload(self, run: Run) -> Run:
        """The held run brought up to date with its row (after steps that wrote fields of their own,
        such as a worktree's set-up or a worker's attempts); the same object, for the verb to go on."""
        fresh = self.require_run(run.id)
        for name in COLUMNS:
            setattr(run, name, getattr(fresh, name))
        run.data = fresh.data
        return run

    def move(self, run: Run, to: str, reason: str = "") -> None:
        """``transition`` from the state the held run is in; the object follows."""
        self.transition(run.id, run.state, to, reason)
        run.state = to

    def transition(self, run_id: str, expected: str, to: str, reason: str = "") -> None:
        """Move a run from ``expected`` to ``to``, refusing illegal or stale transitions."""
        check_transition(expected, to)
        now = time.time()
        with self.tx() as db:
            cur = db.execute(
                "UPDATE runs SET state = ?, updated_at = ? WHERE id = ? AND state = ?", (to, now, run_id, expected)
            )
            if cur.rowcount != 1:
                row = db.execute("SELECT state FROM runs WHERE id = ?", (run_id,)).fetchone()
                actual = row["state"] if row else "missing"
                raise InvalidTransition(
                    f"run {run_id} is {actual!r}, not {expected!r}; another process moved it",
                    "`bosun show` the run and try again",
                )
            db.execute(
                "INSERT INTO transitions(run_id, from_state, to_state, at, pid, reason) VALUES (?,?,?,?,?,?)",
                (run_id, expected, to, now, os.getpid(), reason),
            )

    def note(self, run_id: str, reason: str) -> None:
        """A row in the run's transition history that leaves its state as it is: something that happened
        to the run's change after it landed (``revert``, ``apply``), kept with the run's history."""
        with self.tx() as db:
            row = db.execute("SELECT state FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise NotFound(f"no run with id {run_id!r}", "`bosun list` shows your runs", code="UNKNOWN_RUN")
            db.execute(
                "INSERT INTO transitions(run_id, from_state, to_state, at, pid, reason) VALUES (?,?,?,?,?,?)",
                (run_id, row["state"], row["state"], time.time(), os.getpid(), reason),
            )

    def transitions(self, run_id: str, notes: bool = True) -> list[dict[str, Any]]:
        """The run's history, oldest first; ``notes=False`` leaves out the rows of ``note`` (from and to
        the same state), for the readers that time the run from its moves."""
        sql = "SELECT from_state, to_state, at, pid, reason FROM transitions WHERE run_id = ?"
        if not notes:
            sql += " AND (from_state IS NULL OR from_state != to_state)"
        rows = self.db.execute(sql + " ORDER BY id", (run_id,))
        return [dict(r) for r in rows]

    def moves_after(self, after: int, run_ids: Sequence[str] = (), repo: str | None = None,
                    upto: int | None = None) -> list[dict[str, Any]]:
        """The state changes recorded after the transition id ``after`` (and up to ``upto``), oldest
        first, with the row's ``id``: of ``run_ids``, else of ``repo``'s runs, else of every run. Notes
        are left out. Rows get their ids in commit order (one writer at a time), so a reader that goes
        on from the last id it read skips none and repeats none."""
        sql, args = followed("SELECT id, run_id, from_state, to_state, at, pid, reason FROM transitions"
                             " WHERE (from_state IS NULL OR from_state != to_state)", "run_id", "runs",
                             after, upto, run_ids, repo)
        return [dict(r) for r in self.db.execute(sql, args)]

    def last_transition_id(self, run_id: str | None = None) -> int:
        """The newest transition row's id (0: none), of one run or of all."""
        if run_id is None:
            row = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM transitions").fetchone()
        else:
            row = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM transitions WHERE run_id = ?", (run_id,)).fetchone()
        return int(row[0])

    def count_active(self, remote: bool | None = None) -> int:
        """Runs in an active state; with ``remote``, only the runs whose worker is (or is not) on a
        remote pool (marked ``remote`` in their data by ``prepare``)."""
        return len(self.active_runs(remote))

    def active_runs(self, remote: bool | None = None) -> list[tuple[str, str]]:
        """``(id, state)`` of the runs in an active state (``remote`` as for ``count_active``)."""
        marks = ", ".join("?" for _ in ACTIVE_STATES)
        sql = f"SELECT id, state FROM runs WHERE state IN ({marks})"
        args: list[object] = [*ACTIVE_STATES]
        if remote is not None:
            sql += " AND COALESCE(json_extract(data, '$.remote'), 0) = ?"
            args.append(1 if remote else 0)
        return [(r[0], r[1]) for r in self.db.execute(sql, tuple(args))]

    def landed_commits(self, repo: str) -> set[str]:
        """Every commit bosun moved a branch of ``repo`` to, or is about to: the runs' merges and landing
        commits, and the landing each one recorded before moving the branch."""
        rows = self.db.execute(
            "SELECT merged_commit, json_extract(data, '$.landing_commit'), json_extract(data, '$.landing_pending.merged'),"
            " json_extract(data, '$.landing_pending.landing') FROM runs WHERE repo = ?", (repo,))
        return {sha for row in rows for sha in row if sha}

    # -- attempts -----------------------------------------------------------------------------
    def start_attempt(self, run_id: str, profile: str, adapter: str) -> int:
        with self.tx() as db:
            cur = db.execute(
                "INSERT INTO attempts(run_id, profile, adapter, started_at) VALUES (?,?,?,?)",
                (run_id, profile, adapter, time.time()),
            )
            return int(cur.lastrowid or 0)

    def finish_attempt(
        self, attempt_id: int, status: str, error_class: str | None, error_message: str | None, data: dict[str, Any]
    ) -> None:
        with self.tx() as db:
            db.execute(
                "UPDATE attempts SET ended_at = ?, status = ?, error_class = ?, error_message = ?, data = ? WHERE id = ?",
                (time.time(), status, error_class, error_message, json.dumps(data, default=str), attempt_id),
            )

    def attempts(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM attempts WHERE run_id = ? ORDER BY id", (run_id,))
        out = []
        for r in rows:
            d = dict(r)
            d["data"] = json.loads(d["data"] or "{}")
            out.append(d)
        return out

    def profile_stats(self, profile: str, window: int = 20) -> dict[str, Any]:
        rows = self.db.execute(
            "SELECT status FROM attempts WHERE profile = ? AND status IS NOT NULL ORDER BY id DESC LIMIT ?",
            (profile, window),
        ).fetchall()
        total = len(rows)
        ok = sum(1 for r in rows if r["status"] == "ok")
        return {"attempts": total, "ok": ok, "success_rate": (ok / total) if total else None}

    # -- cooldowns ----------------------------------------------------------------------------
    def set_cooldown(self, profile: str, until: float, reason: str) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO cooldowns(profile, until, reason, set_at) VALUES (?,?,?,?) "
                "ON CONFLICT(profile) DO UPDATE SET until = excluded.until, reason = excluded.reason, set_at = excluded.set_at",
                (profile, until, reason, time.time()),
            )

    def cooldowns(self, now: float | None = None) -> dict[str, dict[str, Any]]:
        now = time.time() if now is None else now
        rows = self.db.execute("SELECT * FROM cooldowns WHERE until > ?", (now,))
        return {r["profile"]: dict(r) for r in rows}

    def clear_cooldown(self, profile: str) -> None:
        with self.tx() as db:
            db.execute("DELETE FROM cooldowns WHERE profile = ?", (profile,))


def followed(select: str, owner: str, owners: str, after: int, upto: int | None, ids: Sequence[str],
             repo: str | None) -> tuple[str, list[Any]]:
    """``select`` (with its WHERE) narrowed to the rows after the id ``after`` and up to ``upto`` whose
    ``owner`` column is one of ``ids``, else whose owner (a row of ``owners``) is of ``repo``; in id
    order. What ``bosun watch`` reads runs and plans with."""
    sql = select + " AND id > ?"
    args: list[Any] = [after]
    if upto is not None:
        sql += " AND id <= ?"
        args.append(upto)
    if ids:
        sql += f" AND {owner} IN ({', '.join('?' for _ in ids)})"
        args.extend(ids)
    elif repo is not None:
        sql += f" AND {owner} IN (SELECT id FROM {owners} WHERE repo = ?)"
        args.append(repo)
    return sql + " ORDER BY id", args


LOCKED_RETRY_S = 30.0


def _retry_locked(step: Callable[[], object]) -> None:
    """Run ``step``, retrying while SQLite says the database is locked. Two processes opening a new
    database at once both switch it to WAL, and that switch answers "locked" at once instead of
    waiting out the busy timeout; so can a migration racing another connection's first write."""
    deadline = time.monotonic() + LOCKED_RETRY_S
    delay = 0.01
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def open_store() -> Store:
    from bosun.core.paths import db_path, ensure_home

    ensure_home()
    return Store(db_path())


__all__ = ["Store", "open_store", "InvalidTransition"]
