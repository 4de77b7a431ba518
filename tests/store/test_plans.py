"""The plan tables: migration, compare-and-swap plan states, task updates and the event stream."""

from __future__ import annotations

import pytest

from bosun.core.errors import InvalidTransition, NotFound
from bosun.store.db import Store
from bosun.store.plans import PlanStore


def _plan(plan_id: str = "p-1") -> dict:
    return {
        "id": plan_id, "state": "running", "title": "t", "repo": "/r", "source_branch": "main",
        "source_head": "a" * 40, "checkpoint": "b" * 40, "integration_branch": f"bosun/plan/{plan_id}",
        "document": {"title": "t", "tasks": []}, "data": {"snapshot": True},
    }


def _tasks() -> list[dict]:
    return [{"task_id": "a", "position": 0, "wave": 1, "definition": "h1"},
            {"task_id": "b", "position": 1, "wave": 2, "definition": "h2"}]


def test_migration_creates_plan_tables(tmp_path):
    store = Store(tmp_path / "b.db")
    names = {r[0] for r in store.db.execute("SELECT name FROM migrations")}
    assert "003_plans" in names
    tables = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"plans", "plan_tasks", "plan_events"} <= tables


def test_insert_get_and_states(tmp_path):
    ps = PlanStore(Store(tmp_path / "b.db"))
    ps.insert_plan(_plan(), _tasks())
    row = ps.require_plan("p-1")
    assert row["document"] == {"title": "t", "tasks": []} and row["data"] == {"snapshot": True}
    assert row["no_merge"] is False and row["current_wave"] == 0
    assert [t["task_id"] for t in ps.tasks("p-1")] == ["a", "b"]
    assert ps.set_state("p-1", "running", "paused", "conflict") == "running"
    with pytest.raises(InvalidTransition):  # stale expectation
        ps.set_state("p-1", "running", "failed")
    with pytest.raises(InvalidTransition):  # not in the table
        ps.set_state("p-1", "paused", "succeeded")
    ps.set_state("p-1", ("failed", "paused"), "running", "continued")
    with pytest.raises(NotFound):
        ps.require_plan("p-2")
    assert [p["id"] for p in ps.list_plans("running")] == ["p-1"]


def test_task_updates_merge_data_and_record_events(tmp_path):
    ps = PlanStore(Store(tmp_path / "b.db"))
    ps.insert_plan(_plan(), _tasks())
    ps.update_task("p-1", "a", state="running", run_id="r1", attempts=1, data={"runs": ["r1"]}, event="attempt 1")
    ps.update_task("p-1", "a", data={"profiles": ["good"]})  # no state change, no event
    t = ps.task("p-1", "a")
    assert t["data"] == {"runs": ["r1"], "profiles": ["good"]} and t["attempts"] == 1
    events = ps.events_since("p-1")
    assert [(e["kind"], e["task_id"], e["state"]) for e in events] == [("plan", None, "running"), ("task", "a", "running")]
    assert events[1]["data"]["run_id"] == "r1" and events[1]["detail"] == "attempt 1"
    assert ps.events_since("p-1", events[-1]["id"]) == []
    with pytest.raises(NotFound):
        ps.task("p-1", "zz")


def test_apply_fixed_keeps_and_replaces_rows_in_one_go(tmp_path):
    ps = PlanStore(Store(tmp_path / "b.db"))
    ps.insert_plan(_plan(), _tasks())
    ps.update_task("p-1", "a", state="merged", merged_commit="c" * 40)
    ps.apply_fixed("p-1", {"a": (1, 0)}, [{"task_id": "c", "position": 1, "wave": 2, "definition": "h3"}],
                   {"title": "fixed", "tasks": []}, [["a"], ["c"]])
    rows = {t["task_id"]: t for t in ps.tasks("p-1")}
    assert sorted(rows) == ["a", "c"]
    assert rows["a"]["state"] == "merged" and rows["c"]["state"] == "pending"
    row = ps.require_plan("p-1")
    assert row["document"]["title"] == "fixed" and row["data"]["waves"] == [["a"], ["c"]]
