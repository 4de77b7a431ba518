"""The diff saved when a run's worktree goes (``final.patch``): taken as verified when the worktree is
still exactly the verified tree, diffed anew otherwise, never taken from a record that does not
match what the store says was verified.

Real bosun processes, real git, the `command` adapter's ``fix`` worker.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_bosun


def _delegate(repo: Path, task_file: Path) -> dict:
    out = run_bosun("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    res = json.loads(out.stdout)
    assert res["state"] == "verified", out.stderr
    return res


def _discard(run_id: str) -> None:
    out = run_bosun("discard", run_id, "--json")
    assert json.loads(out.stdout)["state"] == "cleaned", out.stderr


def test_an_untouched_worktree_saves_the_verified_diff(repo: Path, task_file: Path) -> None:
    res = _delegate(repo, task_file)
    rdir = Path(res["run_dir"])
    verified = (rdir / "diff.patch").read_bytes()
    assert b"return a + b" in verified
    _discard(res["id"])
    assert (rdir / "final.patch").read_bytes() == verified


def test_a_worktree_written_after_verification_is_diffed_anew(repo: Path, task_file: Path) -> None:
    res = _delegate(repo, task_file)
    rdir = Path(res["run_dir"])
    (Path(res["worktree"]) / "later.txt").write_text("written after verification\n")
    _discard(res["id"])
    final = (rdir / "final.patch").read_bytes()
    assert b"later.txt" in final and b"written after verification" in final
    assert b"return a + b" in final  # and the verified change with it


def test_a_diff_record_that_does_not_match_the_store_is_not_taken(repo: Path, task_file: Path) -> None:
    res = _delegate(repo, task_file)
    rdir = Path(res["run_dir"])
    verified = (rdir / "diff.patch").read_bytes()
    (rdir / "diff.patch").write_bytes(verified + b"+forged line\n")
    _discard(res["id"])
    assert (rdir / "final.patch").read_bytes() == verified  # what the worktree holds, diffed again
