"""bosun's warm process (`bosun warm start`): real processes, a real socket, real git.

A command that runs in the warm process must behave exactly as the same command run the ordinary
way (same output, exit code, environment, directory), stop its worker when its caller is
interrupted or killed, and give way to the ordinary path whenever the warm process is stale.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_bosun

pytestmark = pytest.mark.slow

# A worker that reports which process started it (its parent's command line), then fixes the bug.
LINEAGE = """\
import json, os, sys
sys.stdin.read()
parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
print(json.dumps({"type": "message", "role": "assistant", "text": "parent: " + parent}))
p = "src/calc.py"
text = open(p).read()
open(p, "w").write(text.replace("return a - b  # bug", "return a + b"))
"""


def add_profile(config: Path, name: str, command: list[str]) -> None:
    text = config.read_text() if config.exists() else ""
    config.write_text(text + f"\n[profiles.{name}]\nadapter = \"command\"\ncommand = {json.dumps(command)}\n")


def bosun(*args: str, cwd: Path | None = None, warm: bool = True, **env: str) -> subprocess.CompletedProcess:
    return run_bosun(*args, cwd=cwd, env={"BOSUN_WARM": "1" if warm else "0", **env})


@pytest.fixture
def warm(isolated_home: Path):
    started = run_bosun("warm", "start", "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["running"] and info["started_now"], info
    yield info
    run_bosun("warm", "stop")
    try:
        os.kill(info["pid"], signal.SIGKILL)
    except OSError:
        pass


def parent_of_worker(result: dict) -> str:
    assert result["final_message"].startswith("parent: "), result["final_message"]
    return result["final_message"]


def comparable(result: dict) -> dict:
    """A run result without what differs between any two runs (ids, paths, times, the usage estimate)."""
    varying = {"id", "branch", "worktree", "run_dir", "usage", "cost_usd", "savings", "timing", "final_message"}
    out = {k: v for k, v in result.items() if k not in varying}
    out["gates"] = [{k: g[k] for k in ("code", "ok", "detail")} for g in result["gates"]]
    out["verification"] = result["verification"]["passed"] if result.get("verification") else None
    return out


def test_a_delegation_runs_in_the_warm_process_and_ends_as_the_ordinary_one(warm, repo, task_file, tmp_path):
    add_profile(tmp_path / "no-user-config.toml", "lineage", [sys.executable, "-c", LINEAGE])
    runs = {}
    for mode in (False, True):
        (repo / "notes.txt").write_text(f"uncommitted work {mode}\n")  # a new start each time
        # The worker reads its parent's command line: in namespaces it has no parent to see (its own
        # PID namespace), so this test's sandbox is Landlock alone.
        done = bosun("delegate", str(task_file), "--profile", "lineage", "--json", cwd=repo, warm=mode,
                     BOSUN_SANDBOX_PROBE="landlock")
        assert done.returncode == 0, done.stdout + done.stderr
        runs[mode] = json.loads(done.stdout)
    assert "bosun.cli.warm_server" in parent_of_worker(runs[True])
    assert "bosun.cli.warm_server" not in parent_of_worker(runs[False])
    assert comparable(runs[True]) == comparable(runs[False])
    assert runs[True]["state"] == "verified"


def test_arguments_environment_directory_and_exit_codes_are_the_callers(warm, repo, task_file, tmp_path):
    relative = os.path.relpath(task_file, repo)
    for mode in (False, True):
        # The profile from the caller's environment, the task and the repository from its directory.
        done = bosun("check", relative, "--json", cwd=repo, warm=mode, BOSUN_PROFILE="noop")
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["routing"]["profile"] == "noop"
    outputs = []
    for mode in (False, True):
        bad = bosun("delegate", "missing.yaml", "--json", cwd=repo, warm=mode)
        rejected = bosun("delegate", relative, "--profile", "noop", cwd=repo, warm=mode)
        outputs.append((bad.returncode, bad.stdout, bad.stderr, rejected.returncode))
    assert outputs[0][:3] == outputs[1][:3] and outputs[0][0] == 2
    assert outputs[0][3] == outputs[1][3] == 3


def _hang_pids(home: Path) -> set[int]:
    """The hanging workers of this test: working in a worktree under its own bosun home."""
    out = subprocess.run(["pgrep", "-f", "scripted.py hang"], capture_output=True, text=True).stdout
    mine = set()
    for pid in out.split():
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(home)):
                mine.add(int(pid))
        except OSError:
            pass
    return mine


def _interrupt_a_delegation(home: Path, repo: Path, task_file: Path, sig: int, warm: bool) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_WARM": "1" if warm else "0"}
    caller = subprocess.Popen([sys.executable, "-m", "bosun", "delegate", str(task_file), "--repo", str(repo),
                               "--profile", "hang", "--json"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _hang_pids(home):
        time.sleep(0.1)
    assert _hang_pids(home), "the worker never started"
    caller.send_signal(sig)
    _out, err = caller.communicate(timeout=30)
    if sig != signal.SIGKILL:
        # Unwound as on Ctrl-C, exit 128 + the signal's number as a shell reports it.
        assert caller.returncode == 128 + sig and "interrupted" in err, (caller.returncode, err)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _hang_pids(home):
        time.sleep(0.1)
    assert not _hang_pids(home), "the worker outlived its caller"
    listed = json.loads(run_bosun("list", "--json").stdout)["runs"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and listed[0]["state"] == "working":
        time.sleep(0.2)
        listed = json.loads(run_bosun("list", "--json").stdout)["runs"]
    assert listed[0]["state"] == "interrupted"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_an_interrupted_terminated_or_killed_caller_stops_its_worker(warm, isolated_home, repo, task_file, sig):
    _interrupt_a_delegation(isolated_home, repo, task_file, sig, warm=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_delegation_stops_its_worker_as_on_ctrl_c(isolated_home, repo, task_file, sig):
    # A parent agent's timeout sends SIGTERM: the worker must not run on with nobody watching it.
    _interrupt_a_delegation(isolated_home, repo, task_file, sig, warm=False)


def test_a_changed_bosun_on_disk_is_never_run_warm(isolated_home, repo, task_file, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "bosun", src / "bosun", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = subprocess.run([sys.executable, "-m", "bosun", "warm", "start", "--json"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    try:
        def check() -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "bosun", "check", str(task_file), "--repo", str(repo),
                                   "--json"], env=env, capture_output=True, text=True, timeout=60)

        assert check().returncode == 0
        contract = src / "bosun" / "core" / "contract.py"
        contract.write_text(contract.read_text() + "\n# changed\n")
        assert check().returncode == 0  # run the ordinary way, with the changed code
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        assert not Path(f"/proc/{pid}").exists() or b"warm_server" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        status = subprocess.run([sys.executable, "-m", "bosun", "warm", "status", "--json"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert json.loads(status.stdout)["running"] is False
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def test_start_status_stop(isolated_home):
    assert json.loads(run_bosun("warm", "status", "--json").stdout)["running"] is False
    first = json.loads(run_bosun("warm", "start", "--json").stdout)
    try:
        again = json.loads(run_bosun("warm", "start", "--json").stdout)
        assert again["pid"] == first["pid"] and again["started_now"] is False
        assert json.loads(run_bosun("warm", "status", "--json").stdout)["pid"] == first["pid"]
        stopped = json.loads(run_bosun("warm", "stop", "--json").stdout)
        assert stopped["stopped"] is True and stopped["running"] is False
        assert not Path(first["socket"]).exists()
        assert not (isolated_home / "warm.json").exists()
    finally:
        try:
            os.kill(first["pid"], signal.SIGKILL)
        except OSError:
            pass


def test_a_stopped_warm_process_is_not_waited_for_and_never_runs_the_command_too(warm, repo, task_file):
    os.kill(warm["pid"], signal.SIGSTOP)
    try:
        started = time.monotonic()
        done = bosun("delegate", str(task_file), "--repo", str(repo), "--json")
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - started < 60
    finally:
        os.kill(warm["pid"], signal.SIGCONT)
    # The warm process now takes the connection the caller gave up on: its fork must run nothing.
    time.sleep(3)
    runs = json.loads(run_bosun("list", "--json").stdout)["runs"]
    assert [r["id"] for r in runs] == [json.loads(done.stdout)["id"]]
    again = bosun("check", str(task_file), "--repo", str(repo), "--json")
    assert again.returncode == 0  # and it serves the next command
