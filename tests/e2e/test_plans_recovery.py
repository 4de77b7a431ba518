"""Plans across processes: SIGKILL of `bosun plan run` mid-wave then `resume`; `cancel`; `watch`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, run_bosun, user_state
from tests.e2e.test_plans import (
    bosun_branches,
    by_id,
    check,
    make_plan_repo,
    task,
    worktree_count,
    write_plan,
)


def _spawn(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen([sys.executable, "-m", "bosun", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def _wait_for(pred, timeout: float = 30, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _plan_id() -> str | None:
    from bosun.store.db import open_store
    from bosun.store.plans import PlanStore

    plans = PlanStore(open_store()).list_plans()
    return plans[0]["id"] if plans else None


def _procs_under(path: Path) -> list[int]:
    """Processes whose working directory is under ``path`` (workers run in their worktrees)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(path)):
            found.append(int(entry.name))
    return found


def test_sigkill_mid_wave_then_resume_finishes_without_redoing_work(tmp_path, isolated_home):
    repo = make_plan_repo(tmp_path / "repo")
    plan = write_plan(tmp_path / "p.json", [
        task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")]),
        # b and c finish their change, say so, then hang: bosun is killed while they run.
        task("b", "@derive out/b.txt out/a.txt\n@marker\n@sleep 60", ["out/b.txt"], ["a"], verify=[check("out/b.txt")]),
        task("c", "@derive out/c.txt out/a.txt\n@marker\n@sleep 60", ["out/c.txt"], ["a"], verify=[check("out/c.txt")]),
        task("d", "@require out/b.txt\n@derive out/d.txt out/b.txt out/c.txt", ["out/d.txt"], ["b", "c"],
             verify=[check("out/d.txt")]),
    ], verify=[check("out/a.txt")])
    (repo / "wip.txt").write_text("uncommitted\n")
    before = user_state(repo)
    proc = _spawn("plan", "run", str(plan), "--repo", str(repo), "--json")
    try:
        runs = isolated_home / "runs"
        _wait_for(lambda: len(list(runs.glob("*/home/*/written"))) >= 2 if runs.exists() else False, 40, "b and c to write")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # bosun dies; its workers (own process groups) live on
        proc.wait()
    plan_id = _plan_id()
    assert plan_id
    out = run_bosun("plan", "status", plan_id, "--json")
    res = json.loads(out.stdout)
    assert res["state"] == "running" and res["driver_alive"] is False
    t = by_id(res)
    assert t["a"]["state"] == "merged" and t["b"]["run_state"] == "working" and t["c"]["run_state"] == "working"
    killed_runs = {k: t[k]["run_id"] for k in "abc"}
    assert user_state(repo) == before

    out = run_bosun("plan", "resume", plan_id, "--json")
    res = json.loads(out.stdout)
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert res["state"] == "succeeded"
    t = by_id(res)
    # Nothing was redone: the merged task kept its run; the killed runs were recovered, not re-run.
    for k in "abc":
        assert t[k]["runs"] == [killed_runs[k]] and t[k]["attempts"] == 1, t[k]
    from bosun.store.db import open_store

    history = [r["to_state"] for r in open_store().transitions(killed_runs["b"])]
    assert history[:6] == ["prepared", "working", "interrupted", "worked", "verified", "approved"], history
    assert (repo / "out/d.txt").read_text() == "d after b after a\nd after c after a\n"
    assert (repo / "wip.txt").read_text() == "uncommitted\n"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [f"out/{x}.txt" for x in "abcd"]
    assert bosun_branches(repo) == [] and worktree_count(repo) == 1
    assert _procs_under(isolated_home / "worktrees") == []  # the orphaned workers were killed


def test_cancel_stops_workers_keeps_merged_work_then_abort_cleans_up(tmp_path, isolated_home):
    repo = make_plan_repo(tmp_path / "repo")
    plan = write_plan(tmp_path / "p.json", [
        task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")]),
        task("slow", "@write out/slow.txt s\n@marker\n@sleep 60", ["out/slow.txt"], ["a"], verify=[check("out/slow.txt")]),
    ])
    before = user_state(repo)
    proc = _spawn("plan", "run", str(plan), "--repo", str(repo), "--json")
    try:
        runs = isolated_home / "runs"
        _wait_for(lambda: list(runs.glob("*/home/*/written")) if runs.exists() else False, 40, "the slow worker")
        plan_id = _plan_id()
        assert plan_id
        out = run_bosun("plan", "cancel", plan_id, "--json")
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        assert res["state"] == "cancelled"
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1
    res = json.loads(run_bosun("plan", "status", plan_id, "--json").stdout)
    t = by_id(res)
    assert res["state"] == "cancelled"
    assert t["a"]["state"] == "merged" and t["slow"]["state"] == "cancelled"
    assert t["slow"]["run_state"] == "cleaned"
    assert git(repo, "show", f"bosun/plan/{plan_id}:out/a.txt") == "a\n"  # merged work kept
    assert user_state(repo) == before
    assert _procs_under(isolated_home / "worktrees") == []

    out = run_bosun("plan", "abort", plan_id, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["state"] == "aborted"
    assert bosun_branches(repo) == [] and worktree_count(repo) == 1


def test_watch_follows_a_running_plan_until_it_ends(tmp_path, isolated_home):
    repo = make_plan_repo(tmp_path / "repo")
    plan = write_plan(tmp_path / "p.json", [
        task("a", "@sleep 0.5\n@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")]),
        task("b", "@write out/b.txt b", ["out/b.txt"], ["a"], verify=[check("out/b.txt")]),
    ])
    proc = _spawn("plan", "run", str(plan), "--repo", str(repo), "--quiet")
    try:
        plan_id = _wait_for(_plan_id, 20, "the plan to be created")
        watch = run_bosun("plan", "watch", plan_id, "--json", timeout=60)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert watch.returncode == 0, watch.stderr
    events = [json.loads(line) for line in watch.stdout.splitlines()]
    assert all(e["plan_id"] == plan_id for e in events)
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    merged = [e["task"] for e in events if e["kind"] == "task" and e["state"] == "merged"]
    assert merged == ["a", "b"]
    assert events[-1]["kind"] == "plan" and events[-1]["state"] == "succeeded"
    text = run_bosun("plan", "watch", plan_id)  # an ended plan: the history, then exit
    assert "task b merged" in text.stdout and "plan succeeded" in text.stdout


# -- crash windows, simulated in-process ------------------------------------------------------------


class Crash(BaseException):
    """bosun dying at a precise point (not an exception any handler of bosun's catches)."""


def _two_tasks(tmp_path: Path) -> Path:
    return write_plan(tmp_path / "p.json", [
        task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt")]),
        task("b", "@derive out/b.txt out/a.txt", ["out/b.txt"], ["a"], verify=[check("out/b.txt")]),
    ])


def test_crash_after_the_integration_branch_moved_is_not_merged_twice(cli, tmp_path):
    from bosun.plans import integration as plan_git

    repo = make_plan_repo(tmp_path / "repo")
    real = plan_git.move_branch

    def move_then_die(repo_, branch, new, old):
        real(repo_, branch, new, old)
        raise Crash()

    with pytest.MonkeyPatch.context() as mp, pytest.raises(Crash):
        mp.setattr(plan_git, "move_branch", move_then_die)
        cli("plan", "run", str(_two_tasks(tmp_path)), "--repo", str(repo), "--json")
    plan_id = _plan_id()
    code, res = cli("plan", "status", plan_id, "--json")
    a = by_id(res)["a"]
    assert res["state"] == "running" and a["state"] == "ready"
    head_after_crash = res["integration_head"]

    code, res = cli("plan", "resume", plan_id, "--json")
    assert code == 0, res
    t = by_id(res)
    assert t["a"]["merged_commit"] == head_after_crash  # recognised, not merged again
    assert t["a"]["runs"] == [a["run_id"]] and t["b"]["state"] == "merged"
    assert (repo / "out/b.txt").read_text() == "b after a\n"


def test_crash_after_landing_on_the_source_branch_finishes_on_resume(cli, tmp_path):
    from bosun.plans import integration as plan_git

    repo = make_plan_repo(tmp_path / "repo")
    initial = git(repo, "rev-parse", "HEAD").strip()
    real = plan_git.land

    def land_then_die(*args):
        real(*args)
        raise Crash()

    with pytest.MonkeyPatch.context() as mp, pytest.raises(Crash):
        mp.setattr(plan_git, "land", land_then_die)
        cli("plan", "run", str(_two_tasks(tmp_path)), "--repo", str(repo), "--json")
    landed = git(repo, "rev-parse", "HEAD").strip()
    code, res = cli("plan", "resume", _plan_id(), "--json")
    assert code == 0, res
    assert res["state"] == "succeeded" and res["merged_commit"] == landed
    assert git(repo, "rev-parse", "HEAD~1").strip() == initial  # landed once
    assert bosun_branches(repo) == [] and worktree_count(repo) == 1


def test_orphan_run_from_a_crash_in_prepare_is_discarded(cli, tmp_path):
    from bosun.engine import lifecycle
    from bosun.store.db import open_store

    repo = make_plan_repo(tmp_path / "repo")
    real = lifecycle.prepare
    orphans: list[str] = []

    def prepare_then_die(*args, **kw):
        run = real(*args, **kw)
        orphans.append(run.id)
        raise Crash()  # the run exists, the plan never learns its id

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lifecycle, "prepare", prepare_then_die)
        code, res = cli("plan", "run", str(_two_tasks(tmp_path)), "--repo", str(repo), "--json")
    assert code == 1 and res["state"] == "failed", res  # the task's thread died: the plan stops
    assert by_id(res)["a"]["run_id"] is None
    code, res = cli("plan", "continue", res["id"], "--json")
    assert code == 0, res
    assert open_store().require_run(orphans[0]).state == "cleaned"
    assert orphans[0] not in by_id(res)["a"]["runs"]


def test_cancel_a_paused_plan_drops_its_unmerged_runs(cli, tmp_path):
    repo = make_plan_repo(tmp_path / "repo")
    scope = ["out/**", "shared.txt"]
    plan = write_plan(tmp_path / "p.json", [
        task("l", "@write shared.txt l", ["out/l.txt"], scope=scope, verify=[check("shared.txt", "l")]),
        task("r", "@write shared.txt r", ["out/r.txt"], scope=scope, verify=[check("shared.txt", "r")]),
    ])
    code, res = cli("plan", "run", str(plan), "--repo", str(repo), "--json")
    assert code == 6 and res["state"] == "paused"
    conflicted = by_id(res)["r"]["run_id"]
    code, res = cli("plan", "cancel", res["id"], "--json")
    assert code == 0 and res["state"] == "cancelled"
    assert by_id(res)["r"]["run_state"] == "cleaned" and by_id(res)["r"]["state"] == "cancelled"
    assert by_id(res)["l"]["state"] == "merged"
    from bosun.store.db import open_store

    assert open_store().require_run(conflicted).state == "cleaned"
    assert f"bosun/plan/{res['id']}" in bosun_branches(repo)  # what was merged is kept
