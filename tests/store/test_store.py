from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from bosun.core.errors import InvalidTransition, NotFound
from bosun.store.db import Store
from bosun.store.run import FORMAT_VERSION, Run


def _run(run_id: str, state: str = "prepared", **data) -> Run:
    return Run.from_row({
        "id": run_id, "state": state, "title": "t", "repo": "/r", "source_branch": "main", "base": "a" * 40,
        "start_commit": "a" * 40, "branch": f"bosun/{run_id}", "worktree": "/w", "profile": "p", "data": data,
    })


def test_wal_and_migrations_recorded(tmp_path):
    store = Store(tmp_path / "b.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    from bosun.store.migrations import MIGRATIONS

    names = [r[0] for r in store.db.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == [name for name, _ in MIGRATIONS]
    assert names[:2] == ["001_runs", "002_run_search"]
    Store(tmp_path / "b.db")  # reopening applies nothing twice
    assert store.db.execute("SELECT COUNT(*) FROM migrations").fetchone()[0] == len(MIGRATIONS)


def test_transitions_are_recorded_and_illegal_ones_refused(tmp_path):
    store = Store(tmp_path / "b.db")
    store.insert_run(_run("run-1"), prompt="fix the bug")
    store.transition("run-1", "prepared", "working", "go")
    with pytest.raises(InvalidTransition):
        store.transition("run-1", "working", "integrated")
    with pytest.raises(InvalidTransition):  # stale expectation: another process moved it
        store.transition("run-1", "prepared", "working")
    rows = store.transitions("run-1")
    assert [(r["from_state"], r["to_state"]) for r in rows] == [(None, "prepared"), ("prepared", "working")]
    assert rows[1]["reason"] == "go" and rows[1]["pid"] > 0


def test_a_note_keeps_the_state_and_stays_out_of_the_runs_timing(tmp_path):
    store = Store(tmp_path / "b.db")
    store.insert_run(_run("run-1", state="cleaned"))
    store.note("run-1", "reverted on main by 1a2b3c4d5e6f")
    assert store.require_run("run-1").state == "cleaned"
    rows = store.transitions("run-1")
    assert [(r["from_state"], r["to_state"], r["reason"]) for r in rows][-1] == \
        ("cleaned", "cleaned", "reverted on main by 1a2b3c4d5e6f")
    assert [r["to_state"] for r in store.transitions("run-1", notes=False)] == ["cleaned"]
    with pytest.raises(NotFound):
        store.note("run-2", "nothing")


def test_concurrent_transitions_only_one_wins(tmp_path):
    path = tmp_path / "b.db"
    Store(path).insert_run(_run("run-2"))
    wins, errors = [], []

    def attempt():
        s = Store(path)
        try:
            s.transition("run-2", "prepared", "working")
            wins.append(1)
        except InvalidTransition:
            errors.append(1)

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(errors) == 7


def test_search_cooldowns_and_stats(tmp_path):
    store = Store(tmp_path / "b.db")
    store.insert_run(_run("run-3"), prompt="paginate drops the last item")
    assert [r.id for r in store.list_runs(search="paginate")] == ["run-3"]
    assert store.list_runs(search="nothing") == []
    store.set_cooldown("cheap", 10**12, "429")
    assert "cheap" in store.cooldowns()
    a = store.start_attempt("run-3", "cheap", "command")
    store.finish_attempt(a, "ok", None, None, {})
    assert store.profile_stats("cheap")["success_rate"] == 1.0
    with pytest.raises(NotFound):
        store.require_run("nope")


def test_merge_data(tmp_path):
    store = Store(tmp_path / "b.db")
    store.insert_run(_run("run-4"))
    store.merge_data("run-4", gates_ok=True)
    store.merge_data("run-4", error=None)
    data = store.get_run("run-4").data
    assert data.to_dict() == {"format_version": FORMAT_VERSION, "gates_ok": True} and data.error is None
    assert isinstance(store.db, sqlite3.Connection)


def test_a_run_data_key_is_declared_before_it_is_written(tmp_path):
    store = Store(tmp_path / "b.db")
    store.insert_run(_run("run-5"))
    with pytest.raises(ValueError, match="declare them in store/data_fields.py"):
        store.merge_data("run-5", verifed_tree="abc")
    with pytest.raises(AttributeError):  # the typed record has no field for it at all
        _run("run-6").data.nonsense = 1  # type: ignore[attr-defined]
    assert store.get_run("run-5").data.to_dict() == {"format_version": FORMAT_VERSION}


def test_a_record_written_before_format_versions_is_read_in_todays_shape(tmp_path):
    """Version 1 records had no format_version, and could hold keys never declared: they read as
    version 2, typed, the stray key dropped; the next write stores the version."""
    store = Store(tmp_path / "b.db")
    store.insert_run(_run("run-7"))
    old = {"snapshot": True, "verified_tree": "f" * 40, "usage": {"input_tokens": 3}, "landing_note": "stray"}
    store.db.execute("UPDATE runs SET data = ? WHERE id = ?", (json.dumps(old), "run-7"))
    run = store.require_run("run-7")
    assert run.data.format_version == FORMAT_VERSION and run.data.snapshot is True
    assert run.data.verified_tree == "f" * 40 and run.data.usage == {"input_tokens": 3}
    assert "landing_note" not in run.to_dict()["data"]
    store.write(run, gates_ok=True)
    stored = json.loads(store.db.execute("SELECT data FROM runs WHERE id = 'run-7'").fetchone()[0])
    assert stored["format_version"] == FORMAT_VERSION and stored["gates_ok"] is True and run.data.gates_ok is True


def test_a_held_run_follows_what_the_store_writes(tmp_path):
    store = Store(tmp_path / "b.db")
    run = _run("run-8")
    store.insert_run(run)
    store.move(run, "working", "go")
    store.set_columns(run, profile="other", session_id="s-1")
    store.write(run, worker_pid=42)
    fresh = store.require_run("run-8")
    assert (run.state, run.profile, run.session_id, run.data.worker_pid) == ("working", "other", "s-1", 42)
    assert fresh.to_dict() == {**run.to_dict(), "updated_at": fresh.updated_at}
    with pytest.raises(InvalidTransition):  # the object says prepared no more; the row agrees
        store.transition("run-8", "prepared", "working")


def test_remote_runs_are_counted_apart_from_local_ones(tmp_path):
    from bosun.core.config import Settings
    from bosun.engine.phases import active_cap

    store = Store(tmp_path / "b.db")
    store.insert_run(_run("local-1"))
    store.insert_run(_run("local-2", "working"))
    store.insert_run(_run("remote-1", "working", remote=True))
    store.insert_run(_run("remote-2", "verified", remote=True))  # not active
    assert store.count_active() == 3
    assert store.count_active(remote=False) == 2
    assert store.count_active(remote=True) == 1
    settings = Settings(max_concurrent_runs=3)
    # A remote run's cap is the one the caller knows (a plan: its pool's capacity), else the local one;
    # local runs keep max_concurrent_runs whatever the pool.
    assert active_cap(settings, "remote", 15) == (True, 15)
    assert active_cap(settings, "remote") == (True, 3)
    assert active_cap(settings, "command", 15) == (False, 3)
