"""Long steps say how far they are, for a person only: a line per pool worktree made, a line per plan
wave started, and a live line with the elapsed time of a verify command over 2 s, on a terminal.

None of it is in --json (stdout stays one object, stderr quiet), and the verify line never reaches a
pipe or a file. The terminal is a real pseudo-terminal: bosun's stderr is its slave end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, make_repo, run_bosun, task_yaml
from tests.e2e.test_plans import check, make_plan_repo, task, write_plan


def test_pool_warm_says_each_worktree_it_makes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bosun.cli.main import main

    repo = make_repo(tmp_path / "repo")
    with (repo / "bosun.toml").open("a") as fh:
        fh.write("\n[pool]\nsize = 2\n")
    git(repo, "commit", "-qam", "pool")

    capsys.readouterr()
    assert main(["pool", "warm", "--repo", str(repo)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("bosun: pool: worktree")]
    assert [ln.split(" ready:")[0] for ln in lines] == ["bosun: pool: worktree 1 of 2", "bosun: pool: worktree 2 of 2"]

    assert main(["pool", "drain", "--repo", str(repo), "--json"]) == 0
    capsys.readouterr()
    assert main(["pool", "warm", "--repo", str(repo), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["idle"] == 2
    assert "pool: worktree" not in err


def test_plan_run_says_when_each_wave_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bosun.cli.main import main

    repo = make_plan_repo(tmp_path / "repo")
    tasks = [task("a", "@write a/x.txt one", owns=["a/**"], verify=[check("a/x.txt")]),
             task("b", "@write b/x.txt two", owns=["b/**"], verify=[check("b/x.txt")]),
             task("c", "@require a/x.txt\n@write c/x.txt three", owns=["c/**"], depends=["a"],
                  verify=[check("c/x.txt")])]
    plan = write_plan(tmp_path / "plan.json", tasks)
    capsys.readouterr()
    assert main(["plan", "run", str(plan), "--repo", str(repo)]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^\d\d:\d\d:\d\d  wave 1 of 2: tasks a, b from [0-9a-f]{12}$", err, re.M), err
    assert re.search(r"^\d\d:\d\d:\d\d  wave 2 of 2: tasks c from [0-9a-f]{12}$", err, re.M), err

    again = make_plan_repo(tmp_path / "again")
    assert main(["plan", "run", str(plan), "--repo", str(again), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["state"] == "succeeded"
    assert "wave" not in err


# -- the verify command's live line ---------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_WARM": "0"}


def _delegate_on_a_terminal(repo: Path, task: Path, *extra: str) -> tuple[int, str, str]:
    """``bosun delegate`` with stderr on a pseudo-terminal (stdout a pipe); (exit, stdout, terminal)."""
    master, slave = os.openpty()
    seen = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: every slave end is closed
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([sys.executable, "-m", "bosun", "delegate", str(task), "--repo", str(repo), *extra],
                              env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                              timeout=120)
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return proc.returncode, proc.stdout.decode(), seen.decode(errors="replace")


@pytest.fixture
def slow_verify(tmp_path: Path, repo: Path) -> Path:
    return task_yaml(tmp_path / "task.json", verify=["sleep 3"], proof="not-required")


def test_a_verify_command_over_two_seconds_shows_its_elapsed_time_on_a_terminal(repo: Path, slow_verify: Path):
    code, _, terminal = _delegate_on_a_terminal(repo, slow_verify)
    assert code == 0, terminal
    assert re.search(r"\r  verifying: sleep 3  2 s\x1b\[K", terminal), terminal
    assert "\r\x1b[K" in terminal  # cleared once the command ended: the verdict starts on a clean line


def test_no_live_line_in_json_or_when_stderr_is_not_a_terminal(repo: Path, slow_verify: Path):
    code, out, terminal = _delegate_on_a_terminal(repo, slow_verify, "--json")
    assert code == 0, terminal
    assert json.loads(out)["state"]
    assert "verifying:" not in terminal

    piped = run_bosun("delegate", str(slow_verify), "--repo", str(repo), env={"BOSUN_WARM": "0"})
    assert piped.returncode == 0, piped.stderr
    assert "verifying:" not in piped.stderr and "\r" not in piped.stderr
