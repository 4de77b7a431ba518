"""A bosun killed while its baseline ran leaves that checkout registered in the user's repository:
`recover` removes what it replaces (even when another run's cached baseline answers for it), and `gc`
finds every such checkout whose owner is gone, from the repository's own `git worktree list`."""

from __future__ import annotations

import json
import os
import signal
import sys

from tests.engine.load_support import (
    finish,
    make_load_repo,
    registered_worktrees,
    start_bosun,
    task_file,
    wait_until,
)

SLOW = f"{sys.executable} -c \"import time; time.sleep(1.5)\""  # the baseline is still running when killed


def _under(paths: list[str], root) -> list[str]:
    return [p for p in paths if p.startswith(str(root))]


def _second_killed_in_its_baseline(tmp_path, repo, home):
    """Two delegates of the same task; the second is SIGKILLed while its baseline checkout is in use."""
    task = task_file(tmp_path, 0, extra_verify=(SLOW,))
    first = start_bosun("delegate", str(task), "--repo", str(repo), "--json")
    first_id = wait_until(lambda: next((p.name for p in (home / "runs").glob("*")), None), timeout=30)
    second = start_bosun("delegate", str(task), "--repo", str(repo), "--json")
    second_id = wait_until(lambda: next((p.name for p in (home / "runs").glob("*") if p.name != first_id), None),
                           timeout=30)
    fixed = home / "worktrees" / second_id / "src" / "m0.py"
    wait_until(lambda: fixed.is_file() and fixed.read_text() == "VALUE = 1\n" and _under(
        registered_worktrees(repo, settled=False), home / "runs" / second_id / "baseline"), timeout=30, step=0.02)
    os.killpg(second.pid, signal.SIGKILL)
    second.wait()
    return first, first_id, second_id


def test_recover_removes_the_baseline_checkout_a_cached_baseline_replaced(tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 1)
    first, first_id, second_id = _second_killed_in_its_baseline(tmp_path, repo, isolated_home)
    code, doc, err = finish(first)
    assert code == 0 and doc["state"] == "verified", (doc, err)

    code, doc, err = finish(start_bosun("recover", second_id, "--json"))

    assert code == 0 and doc["state"] == "verified", (doc.get("error"), err)
    assert _under(registered_worktrees(repo), isolated_home / "runs") == []
    assert not list((isolated_home / "runs" / second_id / "baseline").glob("verify-*"))
    code, doc, err = finish(start_bosun("gc", "--json"))
    assert code == 0, (doc, err)
    assert _under(registered_worktrees(repo), isolated_home / "runs") == []


def test_gc_finds_a_checkout_whose_owner_died(tmp_path, isolated_home):
    repo = make_load_repo(tmp_path / "repo", 1)
    first, first_id, second_id = _second_killed_in_its_baseline(tmp_path, repo, isolated_home)
    finish(first)
    left = _under(registered_worktrees(repo), isolated_home / "runs")
    assert len(left) == 1 and second_id in left[0]

    code, doc, err = finish(start_bosun("gc", "--json"))

    assert code == 0, (doc, err)
    assert [(r["kind"], r["run_id"]) for r in doc["removed"] if r["kind"] == "orphan_checkout"] == [
        ("orphan_checkout", second_id)]
    assert sorted(_under(registered_worktrees(repo), isolated_home)) == sorted(
        str(isolated_home / "worktrees" / run_id) for run_id in (first_id, second_id))
    assert not os.path.exists(left[0])
    # recover still finishes the run the checkout belonged to
    code, doc, err = finish(start_bosun("recover", second_id, "--json"))
    assert code == 0 and doc["state"] == "verified", (doc, err)
    assert json.dumps(doc)
