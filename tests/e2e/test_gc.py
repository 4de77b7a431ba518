"""`bosun gc` on a store holding live, finished and orphaned runs: real git, real runs (command worker)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import git, task_yaml


def _delegate(cli, repo: Path, task: Path, *extra: str) -> dict:
    code, res = cli("delegate", str(task), "--repo", str(repo), "--json", *extra)
    assert isinstance(res, dict), res
    return res


def _age(path: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def _branches(repo: Path) -> set[str]:
    return set(git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split())


@pytest.mark.slow
def test_gc_removes_exactly_what_is_finished_or_orphaned(cli, repo, tmp_path, isolated_home):
    from bosun.engine import locks
    from bosun.proc import process_start_time
    from bosun.store.db import open_store

    # Integrated runs keep their worktree here, so gc has finished runs' worktrees to remove.
    (repo / "bosun.toml").write_text("cleanup_after_integrate = false\n" + (repo / "bosun.toml").read_text())
    git(repo, "commit", "-qam", "keep worktrees after integrate")
    task = task_yaml(tmp_path / "task.json")
    reported = _delegate(cli, repo, task, "--profile", "fix", "--auto-approve")
    assert reported["state"] == "reported"
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # the bug again, so the next runs have work to do
    verified = _delegate(cli, repo, task, "--profile", "fix")  # live: can still be approved
    assert verified["state"] == "verified"
    code, prepared = cli("prepare", str(task), "--repo", str(repo), "--json")  # live: prepared
    assert code == 0, prepared
    code, cancelled = cli("prepare", str(task), "--repo", str(repo), "--json")
    assert code == 0
    (Path(cancelled["worktree"]) / "src" / "calc.py").write_text("# half-done work\n")
    code, cancelled = cli("cancel", cancelled["id"], "--json")
    assert cancelled["state"] == "cancelled"
    held = _delegate(cli, repo, task, "--profile", "fix", "--auto-approve")
    assert held["state"] == "reported"
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    # A live process advancing the finished run `held` (report being rewritten, say).
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        locks.lock_path(held["id"]).write_text(json.dumps({"pid": sleeper.pid,
                                                           "start": process_start_time(sleeper.pid)}))
        # An orphaned worktree (its run is gone from the store) and an orphaned run directory.
        orphan = isolated_home / "worktrees" / "20260101-000000-0a0b0c"
        git(repo, "worktree", "add", "-q", "--detach", str(orphan), "HEAD")
        old_dir = isolated_home / "runs" / "20260101-000000-dddddd"
        old_dir.mkdir(parents=True)
        (old_dir / "driver.log").write_text("x" * 10000)
        _age(old_dir, 60)
        new_dir = isolated_home / "runs" / "20260101-000000-eeeeee"  # maybe being created right now
        new_dir.mkdir()
        # Not bosun's: the user's own worktree and branches.
        user_wt = tmp_path / "user-wt"
        git(repo, "worktree", "add", "-q", "-b", "feature", str(user_wt), "HEAD")
        git(repo, "branch", "bosun/plan/not-a-run")
        before_branches = _branches(repo)

        code, dry = cli("gc", "--json", "--dry-run")
        assert code == 0, dry
        assert dry["dry_run"] is True
        assert Path(reported["worktree"]).exists() and orphan.exists() and old_dir.exists()
        assert _branches(repo) == before_branches

        code, res = cli("gc", "--json")
        assert code == 0, res
        assert {(r["kind"], r["path"]) for r in res["removed"]} == {(r["kind"], r["path"]) for r in dry["removed"]}
        removed = {(r["kind"], r["run_id"]) for r in res["removed"]}
        assert ("worktree", reported["id"]) in removed and ("worktree", cancelled["id"]) in removed
        assert ("branch", reported["id"]) in removed and ("branch", cancelled["id"]) in removed
        assert ("orphan_worktree", orphan.name) in removed
        assert ("orphan_run_dir", old_dir.name) in removed
        touched = {r["run_id"] for r in res["removed"]}
        assert not touched & {verified["id"], prepared["id"], held["id"], new_dir.name}
        assert {"run_id": held["id"], "reason": "a live process holds the run"} in res["skipped"]
        assert res["bytes_freed"] >= 10000 and res["bytes_freed"] == sum(r["bytes"] for r in res["removed"])

        assert not Path(reported["worktree"]).exists() and not Path(cancelled["worktree"]).exists()
        assert not orphan.exists() and not old_dir.exists()
        assert new_dir.exists()
        for live in (verified, prepared, held):
            assert Path(live["worktree"]).is_dir()
            assert f"bosun/{live['id']}" in _branches(repo)
        assert user_wt.is_dir() and {"feature", "bosun/plan/not-a-run"} <= _branches(repo)
        assert str(orphan) not in git(repo, "worktree", "list")
        # The cancelled run's half-done work was saved before its worktree went.
        final = isolated_home / "runs" / cancelled["id"] / "final.patch"
        assert "half-done work" in final.read_text()
        store = open_store()
        assert store.require_run(reported["id"]).state == "cleaned"
        assert store.require_run(verified["id"]).state == "verified"
        assert store.require_run(held["id"]).state == "reported"
    finally:
        sleeper.kill()
        sleeper.wait()

    # Records: cleaned runs older than --older-than and not among the --keep newest.
    rdir = isolated_home / "runs" / reported["id"]
    assert rdir.is_dir()
    code, res = cli("gc", "--json", "--older-than", "0s", "--keep", "0")
    assert code == 0, res
    kinds = {(r["kind"], r["run_id"]) for r in res["removed"]}
    assert ("run_dir", reported["id"]) in kinds and ("run_dir", cancelled["id"]) in kinds
    # The held run's lock owner is dead now: its worktree goes (it is finished); live runs stay.
    assert ("worktree", held["id"]) in kinds
    assert not rdir.exists()
    assert (isolated_home / "runs" / verified["id"]).is_dir() and Path(verified["worktree"]).is_dir()
    assert (isolated_home / "runs" / prepared["id"]).is_dir()

    code, again = cli("gc", "--json")
    assert code == 0 and [r for r in again["removed"] if r["kind"] != "baseline"] == []


def test_gc_text_output_and_bad_age(cli):
    code, out = cli("gc", "--dry-run")
    assert code == 0 and "would free" in out
    code, res = cli("gc", "--older-than", "soon", "--json")
    assert code == 2 and "30d" in res["error"]["hint"]
