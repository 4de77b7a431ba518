"""A bosun stopped by SIGTERM names the verb that finishes what it cut short: during verification the
run is `worked`, and `bosun recover` verifies it."""

from __future__ import annotations

import os
import signal
import sys

from tests.engine.load_support import finish, make_load_repo, start_bosun, task_file, wait_until

SLOW = f"{sys.executable} -c \"import time; time.sleep(30)\""  # verification is under way when the signal comes


def test_sigterm_during_verification_names_recover(tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 1, extra_toml='baseline = "off"')
    task = task_file(tmp_path, 0, extra_verify=(SLOW,))
    proc = start_bosun("delegate", str(task), "--repo", str(repo), "--json")
    # verification's HOME exists only while the verify commands run on the change
    wait_until(lambda: any(isolated_home.glob("runs/*/verify-home-*")), timeout=60, step=0.02)
    run_id = next((isolated_home / "runs").iterdir()).name
    os.killpg(proc.pid, signal.SIGTERM)

    code, _, err = finish(proc)

    assert code == 143, err
    assert f"run {run_id} is worked: `bosun recover {run_id}` finishes it" in err
