"""A SIGKILLed bosun is recovered; bad input gets one line, exit 2, and changes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, run_bosun, task_yaml, user_state


def _bosun_home_listing(home: Path) -> list[str]:
    if not home.exists():
        return []
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if "locks" not in p.parts)


def test_sigkill_during_work_then_recover_completes(repo, task_file, isolated_home):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "bosun", "delegate", str(task_file), "--repo", str(repo), "--profile", "slow_fix", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    runs = isolated_home / "runs"
    deadline = time.monotonic() + 60
    marker = None
    while time.monotonic() < deadline and marker is None:
        for d in runs.glob("*/home/*/fixed") if runs.exists() else []:
            marker = d
        time.sleep(0.1)
    assert marker is not None, "the worker never reached its fix"
    os.kill(proc.pid, signal.SIGKILL)  # bosun dies; its worker (own process group) is orphaned
    proc.wait()
    run_id = marker.parents[2].name
    out = run_bosun("show", run_id, "--json")
    assert json.loads(out.stdout)["state"] == "working"
    out = run_bosun("recover", run_id, "--json")
    assert out.returncode == 0, (out.stdout, out.stderr)
    res = json.loads(out.stdout)
    assert res["state"] == "verified"
    assert res["verification"]["passed"] is True
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "slow_fix" not in ps  # recover killed the orphaned worker group


def test_recover_without_a_diff_goes_back_to_prepared(cli, repo, task_file):
    from bosun.core.contract import load_contract
    from bosun.engine.context import RunContext
    from bosun.engine.lifecycle import prepare
    from bosun.store.db import open_store

    ctx = RunContext(open_store())
    run = prepare(ctx, load_contract(task_file), repo, "fix")
    ctx.store.transition(run.id, "prepared", "working", "simulated crash")
    code, res = cli("recover", run.id, "--json")
    assert code == 0 and res["state"] == "prepared"
    code, res = cli("work", run.id, "--json")
    assert res["state"] == "worked"


def test_two_processes_never_advance_one_run(cli, repo, task_file):
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "slow_fix", "--json")
    run_id = res["id"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    first = subprocess.Popen([sys.executable, "-m", "bosun", "work", run_id, "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out = run_bosun("show", run_id, "--json")
            if json.loads(out.stdout)["state"] == "working":
                break
            time.sleep(0.1)
        second = run_bosun("work", run_id, "--json")
        assert second.returncode in (1, 5), second.stdout
        assert json.loads(second.stdout)["error"]["code"] in ("BUSY", "INVALID_STATE")
        cancel = run_bosun("cancel", run_id, "--json")
        assert json.loads(cancel.stdout)["state"] == "cancelled"
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


def test_concurrency_cap(cli, repo, task_file, monkeypatch):
    monkeypatch.setenv("BOSUN_MAX_CONCURRENT_RUNS", "1")
    code, _ = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    assert code == 0
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    assert code == 5
    assert "max_concurrent_runs" in res["error"]["message"]


@pytest.mark.parametrize(
    ("setup", "args", "needle"),
    [
        ("malformed", ["delegate", "{task}"], "malformed"),
        ("unknown_field", ["delegate", "{task}"], "unknown field"),
        ("empty_prompt", ["delegate", "{task}"], "prompt is empty"),
        ("dotdot", ["delegate", "{task}"], "'..' not allowed"),
        ("absolute", ["delegate", "{task}"], "absolute path"),
        ("ok", ["show", "../../etc"], "malformed run id"),
        ("ok", ["show", "a/b"], "malformed run id"),
        ("ok", ["show", "20990101-000000-abcdef"], "no run with id"),
        ("not_git", ["delegate", "{task}"], "not a git repository"),
        ("detached", ["delegate", "{task}"], "detached"),
        ("bad_base", ["delegate", "{task}"], "does not exist"),
        ("ok", ["delegate", "{task}", "--profile", "nosuch"], "unknown profile"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(tmp_path, repo, isolated_home, setup, args, needle):
    task = task_yaml(tmp_path / "task.json")
    workdir = repo
    if setup == "malformed":
        task.write_text("title: x\nprompt: [oops\n")
    elif setup == "unknown_field":
        task_yaml(task, colour="red")
    elif setup == "empty_prompt":
        task_yaml(task, prompt="  ")
    elif setup == "dotdot":
        task_yaml(task, scope=["../x"])
    elif setup == "absolute":
        task_yaml(task, locked=["/etc/x"])
    elif setup == "not_git":
        workdir = tmp_path / "plain"
        workdir.mkdir()
    elif setup == "detached":
        git(repo, "checkout", "-q", "--detach")
    elif setup == "bad_base":
        task_yaml(task, base="no-such-branch")
    before_state = user_state(repo)
    before_home = _bosun_home_listing(isolated_home)
    argv = [a.replace("{task}", str(task)) for a in args]
    out = run_bosun(*argv, "--repo", str(workdir)) if argv[0] == "delegate" else run_bosun(*argv)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert needle in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.count("\n") <= 2  # the error line and its hint
    assert user_state(repo) == before_state
    after = [p for p in _bosun_home_listing(isolated_home) if not p.endswith((".db", ".db-wal", ".db-shm"))]
    assert after == [p for p in before_home if not p.endswith((".db", ".db-wal", ".db-shm"))] or after == ["runs", "worktrees"]
