"""Plan queries: the plans, plan_tasks and plan_events tables (migration 003_plans).

Like runs, a plan changes state only through ``set_state``, which checks the plan transition table
and the expected current state in one ``BEGIN IMMEDIATE`` transaction and records an event. Every
task state change is recorded as an event too, so ``bosun plan watch`` can follow a plan by polling
``events_since``.
"""

from __future__ import annotations

import json
import os
import time

from bosun.core.errors import InvalidTransition, NotFound
from bosun.store.db import Store, followed

TYPE_CHECKING = False  # not typing's: start-up of `bosun plan list`
if TYPE_CHECKING:
    from typing import Any

PLAN_COLUMNS = (
    "id", "state", "title", "repo", "source_branch", "source_head", "checkpoint", "integration_branch",
    "document", "current_wave", "profile", "no_merge", "merged_commit", "created_at", "updated_at", "data",
)
TASK_COLUMNS = (
    "plan_id", "task_id", "position", "wave", "state", "run_id", "attempts", "definition", "merged_commit",
    "updated_at", "data",
)


def _plan_dict(row: Any) -> dict[str, Any]:
    d = dict(row)
    d["data"] = json.loads(d.get("data") or "{}")
    d["document"] = json.loads(d.get("document") or "{}")
    d["no_merge"] = bool(d.get("no_merge"))
    return d


def _task_dict(row: Any) -> dict[str, Any]:
    d = dict(row)
    d["data"] = json.loads(d.get("data") or "{}")
    return d


def _event_dict(row: Any) -> dict[str, Any]:
    d = dict(row)
    d["data"] = json.loads(d.get("data") or "{}")
    return d


class PlanStore:
    """Plan queries over a :class:`~bosun.store.db.Store` connection (one per thread)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # -- plans --------------------------------------------------------------------------------
    def insert_plan(self, plan: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
        now = time.time()
        row = {c: plan.get(c) for c in PLAN_COLUMNS}
        row["created_at"] = row["created_at"] or now
        row["updated_at"] = now
        row["document"] = json.dumps(plan.get("document") or {})
        row["data"] = json.dumps(plan.get("data") or {}, default=str)
        row["no_merge"] = int(bool(plan.get("no_merge")))
        row["current_wave"] = row["current_wave"] or 0
        with self.store.tx() as db:
            db.execute(
                f"INSERT INTO plans ({', '.join(PLAN_COLUMNS)}) VALUES ({', '.join('?' for _ in PLAN_COLUMNS)})",
                [row[c] for c in PLAN_COLUMNS],
            )
            for t in tasks:
                self._insert_task(db, plan["id"], t, now)
            self._event(db, plan["id"], "plan", None, row["state"], "plan created", {})

    def _insert_task(self, db: Any, plan_id: str, t: dict[str, Any], now: float) -> None:
        db.execute(
            f"INSERT INTO plan_tasks ({', '.join(TASK_COLUMNS)}) VALUES ({', '.join('?' for _ in TASK_COLUMNS)})",
            (plan_id, t["task_id"], t["position"], t["wave"], t.get("state", "pending"), t.get("run_id"),
             t.get("attempts", 0), t["definition"], t.get("merged_commit"), now,
             json.dumps(t.get("data") or {}, default=str)),
        )

    def get_plan(self, plan_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM plans WHERE id = ?", (plan_id,)).fetchone()
        return _plan_dict(row) if row else None

    def require_plan(self, plan_id: str) -> dict[str, Any]:
        plan = self.get_plan(plan_id)
        if plan is None:
            raise NotFound(f"no plan with id {plan_id!r}", "`bosun plan list` shows your plans", code="UNKNOWN_PLAN")
        return plan

    def list_plans(self, state: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        sql = "SELECT * FROM plans"
        args: list[Any] = []
        if state:
            sql += " WHERE state = ?"
            args.append(state)
        sql += " ORDER BY created_at DESC LIMIT ?"
        args.append(limit)
        return [_plan_dict(r) for r in self.db.execute(sql, args)]

    def update_plan(self, plan_id: str, **fields: Any) -> None:
        if "data" in fields or "state" in fields:
            raise ValueError("use merge_plan_data / set_state")
        if "document" in fields:
            fields["document"] = json.dumps(fields["document"])
        if not fields:
            return
        fields["updated_at"] = time.time()
        assigns = ", ".join(f"{k} = ?" for k in fields)
        with self.store.tx() as db:
            db.execute(f"UPDATE plans SET {assigns} WHERE id = ?", [*fields.values(), plan_id])

    def merge_plan_data(self, plan_id: str, **items: Any) -> dict[str, Any]:
        with self.store.tx() as db:
            row = db.execute("SELECT data FROM plans WHERE id = ?", (plan_id,)).fetchone()
            data = json.loads(row["data"]) if row else {}
            data.update(items)
            db.execute("UPDATE plans SET data = ?, updated_at = ? WHERE id = ?",
                       (json.dumps(data, default=str), time.time(), plan_id))
        return data

    def set_state(self, plan_id: str, expected: str | tuple[str, ...], to: str, reason: str = "") -> str:
        """Move the plan from one of ``expected`` to ``to``; returns the state it left."""
        from bosun.core.plan_states import PLAN_TRANSITIONS, check_plan_transition

        allowed = (expected,) if isinstance(expected, str) else tuple(expected)
        now = time.time()
        with self.store.tx() as db:
            row = db.execute("SELECT state FROM plans WHERE id = ?", (plan_id,)).fetchone()
            actual = row["state"] if row else "missing"
            if actual not in allowed:
                raise InvalidTransition(
                    f"plan {plan_id} is {actual!r}, not {' or '.join(repr(s) for s in allowed)}",
                    "`bosun plan status` the plan" if actual not in PLAN_TRANSITIONS.get(actual, ()) else "try again",
                )
            check_plan_transition(actual, to)
            db.execute("UPDATE plans SET state = ?, updated_at = ? WHERE id = ?", (to, now, plan_id))
            self._event(db, plan_id, "plan", None, to, reason, {"from": actual})
        return str(actual)

    # -- tasks --------------------------------------------------------------------------------
    def tasks(self, plan_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM plan_tasks WHERE plan_id = ? ORDER BY position", (plan_id,))
        return [_task_dict(r) for r in rows]

    def task(self, plan_id: str, task_id: str) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT * FROM plan_tasks WHERE plan_id = ? AND task_id = ?", (plan_id, task_id)
        ).fetchone()
        if row is None:
            raise NotFound(f"plan {plan_id} has no task {task_id!r}", "`bosun plan status` lists its tasks")
        return _task_dict(row)

    def update_task(
        self,
        plan_id: str,
        task_id: str,
        *,
        event: str | None = None,
        event_data: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Update columns (and merge ``data`` keys) of one task atomically; a state change, or an
        explicit ``event`` text, is recorded in the event stream."""
        with self.store.tx() as db:
            row = db.execute(
                "SELECT * FROM plan_tasks WHERE plan_id = ? AND task_id = ?", (plan_id, task_id)
            ).fetchone()
            if row is None:
                raise NotFound(f"plan {plan_id} has no task {task_id!r}", f"`bosun plan status {plan_id}` lists its tasks")
            current = _task_dict(row)
            if data:
                merged = dict(current["data"])
                merged.update(data)
                fields["data"] = json.dumps(merged, default=str)
            fields["updated_at"] = time.time()
            assigns = ", ".join(f"{k} = ?" for k in fields)
            db.execute(
                f"UPDATE plan_tasks SET {assigns} WHERE plan_id = ? AND task_id = ?",
                [*fields.values(), plan_id, task_id],
            )
            new_state = fields.get("state", current["state"])
            if event is not None or new_state != current["state"]:
                info = {"run_id": fields.get("run_id", current["run_id"]),
                        "attempts": fields.get("attempts", current["attempts"]), **(event_data or {})}
                self._event(db, plan_id, "task", task_id, new_state, event or "", info)
        return self.task(plan_id, task_id)

    def apply_fixed(
        self,
        plan_id: str,
        keep: dict[str, tuple[int, int]],
        inserts: list[dict[str, Any]],
        document: dict[str, Any],
        waves: list[list[str]],
    ) -> None:
        """A fixed plan, in one transaction: rows in ``keep`` get their new ``(wave, position)``, every
        other row is replaced by ``inserts``, and the plan's document and waves are the new ones."""
        now = time.time()
        with self.store.tx() as db:
            existing = [r["task_id"] for r in db.execute("SELECT task_id FROM plan_tasks WHERE plan_id = ?", (plan_id,))]
            for task_id in existing:
                if task_id in keep:
                    wave, position = keep[task_id]
                    db.execute("UPDATE plan_tasks SET wave = ?, position = ?, updated_at = ? WHERE plan_id = ? AND task_id = ?",
                               (wave, position, now, plan_id, task_id))
                else:
                    db.execute("DELETE FROM plan_tasks WHERE plan_id = ? AND task_id = ?", (plan_id, task_id))
            for t in inserts:
                self._insert_task(db, plan_id, t, now)
            row = db.execute("SELECT data FROM plans WHERE id = ?", (plan_id,)).fetchone()
            data = json.loads(row["data"]) if row else {}
            data["waves"] = waves
            db.execute("UPDATE plans SET document = ?, data = ?, updated_at = ? WHERE id = ?",
                       (json.dumps(document), json.dumps(data, default=str), now, plan_id))
            self._event(db, plan_id, "plan", None, None, "fixed plan applied: " + ", ".join(t["task_id"] for t in inserts)
                        + " replaced or added" if inserts else "fixed plan applied", {"waves": waves})

    # -- events -------------------------------------------------------------------------------
    def _event(self, db: Any, plan_id: str, kind: str, task_id: str | None, state: str | None, detail: str,
               data: dict[str, Any]) -> None:
        db.execute(
            "INSERT INTO plan_events(plan_id, at, pid, kind, task_id, state, detail, data) VALUES (?,?,?,?,?,?,?,?)",
            (plan_id, time.time(), os.getpid(), kind, task_id, state, detail, json.dumps(data, default=str)),
        )

    def event(self, plan_id: str, kind: str, detail: str, task_id: str | None = None, state: str | None = None,
              **data: Any) -> None:
        with self.store.tx() as db:
            self._event(db, plan_id, kind, task_id, state, detail, data)

    def events_since(self, plan_id: str, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT * FROM plan_events WHERE plan_id = ? AND id > ? ORDER BY id LIMIT ?", (plan_id, after, limit)
        )
        return [_event_dict(r) for r in rows]

    def last_event_id(self, plan_id: str | None = None) -> int:
        """The newest event's id (0: none yet), of one plan or of all: the dashboard's stream polls it to
        see a plan move; ``bosun watch`` starts after it."""
        if plan_id is None:
            row = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM plan_events").fetchone()
        else:
            row = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM plan_events WHERE plan_id = ?", (plan_id,)).fetchone()
        return int(row[0])

    def moves_after(self, after: int, repo: str | None = None, plan_ids: tuple[str, ...] = (),
                    upto: int | None = None) -> list[dict[str, Any]]:
        """The plans' own state changes (creation, then each ``set_state`` to another state) recorded
        after the event id ``after``, oldest first: of ``plan_ids``, else of ``repo``'s plans, else of
        every plan."""
        sql, args = followed("SELECT * FROM plan_events e WHERE kind = 'plan' AND state IS NOT NULL"
                             " AND (json_extract(data, '$.from') != state"
                             " OR id = (SELECT MIN(id) FROM plan_events f WHERE f.plan_id = e.plan_id))",
                             "plan_id", "plans", after, upto, plan_ids, repo)
        return [_event_dict(r) for r in self.db.execute(sql, args)]
