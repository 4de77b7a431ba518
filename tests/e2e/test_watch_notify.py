"""`bosun watch` and `[notify]`: parents and scripts learn when runs change state and stop."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from bosun.apps.watch import watch
from bosun.store.db import open_store
from bosun.store.run import Run

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


def test_watch_a_finished_run_and_an_idle_repo(cli, repo: Path, task_file: Path):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--json", "--profile", "fix")
    assert code == 0
    code, out = cli("watch", res["id"], "--json")
    assert code == 0 and out["id"] == res["id"] and out["state"] == "verified" and out["done"] is True
    code, out = cli("watch", "--until-idle", "--json", "--repo", str(repo))
    assert code == 0 and out == ""  # nothing in flight: no history replayed, exits at once
    code, out = cli("watch", "20990101-000000-abcdef", "--json")
    assert code == 2 and out["error"]["code"] == "UNKNOWN_RUN"


def test_watch_follows_state_changes_until_done(repo: Path):
    store = open_store()
    run = {"id": "20261201-120000-abcdef", "state": "prepared", "title": "t", "repo": str(repo), "source_branch": "main",
           "base": "0" * 40, "start_commit": "0" * 40, "branch": "bosun/x", "worktree": "/nonexistent", "profile": "fix"}
    store.insert_run(Run.from_row(run))
    seen: list[dict] = []
    steps = [("prepared", "working"), ("working", "worked"), ("worked", "verified")]

    def advance() -> None:
        for src, dst in steps:
            # Each change waits until the watcher has reported the previous state: no timing assumptions.
            while not seen or seen[-1]["state"] != src:
                time.sleep(0.01)
            open_store().transition(run["id"], src, dst)

    t = threading.Thread(target=advance)
    t.start()
    watch(store, seen.append, None, [run["id"]], poll_s=0.01)
    t.join()
    assert [e["state"] for e in seen] == ["prepared", "working", "worked", "verified"]
    assert [e["previous"] for e in seen] == [None, "prepared", "working", "worked"]
    assert seen[-1]["done"] is True and not any(e["done"] for e in seen[:-1])
