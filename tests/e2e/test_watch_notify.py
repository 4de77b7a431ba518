"""`bosun watch` and `[notify]`: parents and scripts learn when runs change state and stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from bosun.apps.watch import watch
from bosun.engine import locks
from bosun.store.db import open_store
from bosun.store.run import Run
from tests.conftest import ROOT, run_bosun

NOTIFIER = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(sys.stdin.read())"


def test_notify_command_gets_the_result_on_stdin(cli, repo: Path, task_file: Path, tmp_path: Path):
    out = tmp_path / "notified.json"
    Path(os.environ["BOSUN_CONFIG"]).write_text(
        f"[notify]\ncommand = [{json.dumps(sys.executable)}, \"-c\", {json.dumps(NOTIFIER)}, {json.dumps(str(out))}]\n"
    )
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--json", "--profile", "fix")
    assert code == 0, res
    got = json.loads(out.read_text())
    assert got["id"] == res["id"] and got["state"] == "verified" and got["verification"]["passed"] is True


def test_a_failing_notifier_does_not_change_the_run(cli, repo: Path, task_file: Path):
    Path(os.environ["BOSUN_CONFIG"]).write_text('[notify]\ncommand = ["/nonexistent/notifier"]\nbell = true\n')
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--json", "--profile", "fix")
    assert code == 0 and res["state"] == "verified", res


def test_watch_a_finished_run_and_an_idle_repo(cli, repo: Path, task_file: Path, capsys):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--json", "--profile", "fix")
    assert code == 0
    from bosun.cli.main import main

    capsys.readouterr()
    assert main(["watch", res["id"], "--json"]) == 0  # its whole history, then it exits: the run rests
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["state"] for e in events] == ["prepared", "working", "worked", "verified"], events
    assert [e["done"] for e in events] == [False, False, False, True]
    code, out = cli("watch", "--until-idle", "--json", "--repo", str(repo))
    assert code == 0 and out == ""  # nothing in flight: no history replayed, exits at once
    code, out = cli("watch", "20990101-000000-abcdef", "--json")
    assert code == 2 and out["error"]["code"] == "UNKNOWN_RUN"


RUN = {"state": "prepared", "title": "t", "source_branch": "main", "base": "0" * 40, "start_commit": "0" * 40,
       "branch": "bosun/x", "worktree": "/nonexistent", "profile": "fix"}


def test_watch_follows_state_changes_until_done(repo: Path):
    store = open_store()
    run = {**RUN, "id": "20261201-120000-abcdef", "repo": str(repo)}
    store.insert_run(Run.from_row(run))
    seen: list[dict] = []
    steps = [("prepared", "working"), ("working", "worked"), ("worked", "verified")]

    def advance() -> None:
        # As a verb does: the run's lock held from its first move to its last.
        with locks.run_lock(run["id"]):
            for src, dst in steps:
                open_store().transition(run["id"], src, dst)
                time.sleep(0.05)

    t = threading.Thread(target=advance)
    t.start()
    watch(store, seen.append, None, [run["id"]], poll_s=0.01)
    t.join()
    assert [e["state"] for e in seen] == ["prepared", "working", "worked", "verified"]
    assert [e["previous"] for e in seen] == [None, "prepared", "working", "worked"]
    assert seen[-1]["done"] is True and not any(e["done"] for e in seen[:-1])
    assert [e["seq"] for e in seen] == sorted(e["seq"] for e in seen)


def test_a_state_the_run_is_held_in_is_not_done_until_it_is_let_go(repo: Path):
    store = open_store()
    run = {**RUN, "id": "20261201-120000-abcdee", "repo": str(repo), "state": "verified"}
    store.insert_run(Run.from_row(run))
    seen: list[dict] = []
    holding = threading.Event()
    let_go = threading.Event()

    def hold() -> None:
        with locks.run_lock(run["id"]):  # a verb that will approve it next, as --auto-approve does
            holding.set()
            let_go.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    holding.wait(30)
    rounds = {"n": 0}

    def stop_later() -> bool:
        rounds["n"] += 1
        if rounds["n"] == 20:
            let_go.set()  # the verb lets go without moving it: now it rests
        return rounds["n"] > 400

    watch(store, seen.append, None, [run["id"]], poll_s=0.01, should_stop=stop_later)
    t.join()
    assert rounds["n"] >= 20  # not done while it was held
    assert [(e["state"], e["done"]) for e in seen] == [("verified", True)], seen


def _watch_process(repo: Path) -> tuple[subprocess.Popen, list[dict]]:
    """`bosun watch --json` as a real process, its events collected as they come; returned once its
    starting point is taken (it has the store open)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "bosun", "watch", "--json", "--repo", str(repo)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    events: list[dict] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    db = Path(os.environ["BOSUN_HOME"]) / "bosun.db"
    deadline = time.monotonic() + 60
    while not _has_open(proc.pid, db) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the store is open: the watcher takes its starting point next
    return proc, events


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def test_a_real_watch_prints_every_recorded_change_once_in_order(repo: Path, task_file: Path):
    open_store()  # the store exists before the watcher opens it
    proc, events = _watch_process(repo)
    try:
        waits = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
        landed = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--auto-approve", "--json")
        ids = [json.loads(landed.stdout)["id"], json.loads(waits.stdout)["id"]]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
                any(e["id"] == i and e["done"] for e in events) for i in ids):
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    store = open_store()
    for run_id in ids:
        mine = [e for e in events if e["id"] == run_id]
        recorded = [t for t in store.transitions(run_id, notes=False)]
        assert [(e["previous"], e["state"]) for e in mine] == [(t["from_state"], t["to_state"]) for t in recorded], mine
        assert [e["done"] for e in mine] == [False] * (len(mine) - 1) + [True], mine
    assert [e["state"] for e in events if e["id"] == ids[0]] == [
        "prepared", "working", "worked", "verified", "approved", "integrated", "reported", "cleaned"]
    assert [e["state"] for e in events if e["id"] == ids[1]] == ["prepared", "working", "worked", "verified"]


def test_a_plan_is_followed_from_its_recorded_state_events(repo: Path):
    from bosun.store.plans import PlanStore

    plans = PlanStore(open_store())
    plan = {"id": "p-20261201-120000-abcdef", "state": "running", "title": "p", "repo": str(repo),
            "source_branch": "main", "source_head": "a" * 40, "checkpoint": "a" * 40,
            "integration_branch": "bosun/plan/p", "document": {}}
    plans.insert_plan(plan, [])
    plans.event(plan["id"], "plan", "resumed", state="running")  # a note, not a change of state
    seen: list[dict] = []

    def finish_once_started() -> bool:
        if seen and len(seen) == 1:
            plans.set_state(plan["id"], "running", "paused", "a task waits for review")
            plans.set_state(plan["id"], "paused", "running", "continued")
            plans.set_state(plan["id"], "running", "succeeded", "all merged")
        return len(seen) > 10

    watch(open_store(), seen.append, repo, until_idle=True, poll_s=0.01, should_stop=finish_once_started)
    assert [(e["previous"], e["state"], e["done"]) for e in seen] == [
        (None, "running", False), ("running", "paused", True), ("paused", "running", False),
        ("running", "succeeded", True)], seen
