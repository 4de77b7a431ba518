"""The concurrency cap counts only runs a live process holds: a crashed run frees its slot at once,
without waiting for `recover`. A delegate that waits for a slot says on stderr what it waits for (its
stdout stays one JSON object), and gives up after `--wait-limit`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from bosun.core.errors import Busy
from bosun.core.paths import ensure_home
from bosun.engine import locks
from bosun.proc import process_start_time
from tests.engine.load_support import finish, make_load_repo, start_bosun, task_file, wait_until


def _dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def test_a_run_whose_lock_names_a_dead_process_holds_no_slot():
    ensure_home()
    locks.lock_path("run-dead").write_text(json.dumps({"pid": _dead_pid(), "start": 1}))
    locks.lock_path("run-live").write_text(json.dumps({"pid": os.getpid(), "start": process_start_time(os.getpid())}))
    runs = [("run-dead", "working"), ("run-live", "working"), ("run-waiting", "prepared"),
            ("run-unheld", "working"), ("run-worked", "worked"), ("run-stopped", "interrupted")]
    # prepared and worked runs nobody holds wait for their next verb: they keep their slot; a working
    # run is only ever worked under a live lock, so one without is as dead as a stale lock says, and
    # an interrupted one's process died.
    assert locks.slot_holders(runs) == ["run-live", "run-waiting", "run-worked"]


def test_a_wait_says_what_it_waits_for_and_gives_up_at_its_limit():
    ensure_home()
    said: list[str] = []
    token = locks.SAY_WAITING.set(said.append)
    try:
        with pytest.raises(Busy) as exc, locks.concurrency_slot(lambda: ["a", "b"], 2, True, poll_s=0.01,
                                                                      max_wait_s=0.2):
            pass
    finally:
        locks.SAY_WAITING.reset(token)
    assert exc.value.code == "WAIT_LIMIT" and exc.value.exit_code == 5
    assert "runs a, b hold all 2" in exc.value.message and "--wait-limit" in exc.value.hint
    assert said == ["waiting for a run slot, for at most 0.2 s: runs a, b hold all 2 (max_concurrent_runs)"]


def _held_runs(tmp_path, repo, count: int) -> list[subprocess.Popen[str]]:
    procs = [start_bosun("delegate", str(task_file(tmp_path, i, sleep_s=60)), "--repo", str(repo), "--json")
             for i in range(count)]
    wait_until(lambda: len(list((tmp_path / "bosun-home" / "runs").glob("*/home/*"))) >= count, timeout=60)
    return procs


def _recover_all(tmp_path) -> None:
    """The crashed runs' workers are stopped by `recover`."""
    for run_dir in (tmp_path / "bosun-home" / "runs").iterdir():
        finish(start_bosun("recover", run_dir.name, "--json"))


def test_crashed_runs_free_their_slots_for_waiting_delegates(tmp_path):
    repo = make_load_repo(tmp_path / "repo", 3, cap=2)
    crashed = _held_runs(tmp_path, repo, 2)
    for proc in crashed:
        os.killpg(proc.pid, signal.SIGKILL)  # bosun dies; its lock stays behind, naming a dead process
        proc.wait()
    try:
        waiting = start_bosun("delegate", str(task_file(tmp_path, 2)), "--repo", str(repo), "--wait", "--json")
        code, doc, err = finish(waiting, timeout=60)
        assert code == 0 and doc["state"] == "verified", (doc, err)
        assert "waiting for a run slot" not in err
    finally:
        _recover_all(tmp_path)


def test_a_waiting_delegate_names_what_it_waits_for_and_stops_at_its_limit(tmp_path):
    repo = make_load_repo(tmp_path / "repo", 2, cap=1)
    [holder] = _held_runs(tmp_path, repo, 1)
    try:
        held = next((tmp_path / "bosun-home" / "runs").iterdir()).name
        waiting = start_bosun("delegate", str(task_file(tmp_path, 1)), "--repo", str(repo), "--wait-limit", "1s",
                              "--json")
        code, doc, err = finish(waiting, timeout=60)
        assert code == 5, (doc, err)
        assert doc["error"]["code"] == "WAIT_LIMIT" and held in doc["error"]["message"], doc
        assert f"bosun: waiting for a run slot, for at most 1 s: run {held} holds all 1" in err
        assert "waiting" not in json.dumps(doc["error"]["hint"])
    finally:
        os.killpg(holder.pid, signal.SIGTERM)
        holder.wait()
        _recover_all(tmp_path)


def test_a_wait_limit_that_cannot_be_read_creates_nothing(tmp_path):
    repo = make_load_repo(tmp_path / "repo", 1)
    code, doc, err = finish(start_bosun("delegate", str(task_file(tmp_path, 0)), "--repo", str(repo),
                                        "--wait-limit", "soon", "--json"))
    assert code == 2 and doc["error"]["message"] == "cannot read the wait limit 'soon'", doc
    assert not (tmp_path / "bosun-home" / "runs").exists()
