"""Landing on a branch that is checked out in another worktree of the user's (`git worktree add`):
integrate, revert and apply move that worktree with the branch, the way they move the primary
checkout, and leave its uncommitted work in other files as it was; an overlap there refuses, naming
the worktree, with nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git

pytestmark = pytest.mark.slow

FIXED = "return a + b"


def test_integrate_revert_and_apply_move_the_branch_checked_out_in_another_worktree(cli, repo, task_file, tmp_path):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0 and res["verdict"]["outcome"] == "landable", res
    git(repo, "switch", "-qc", "side")  # the primary checkout is on another branch now
    other = tmp_path / "wt-main"
    git(repo, "worktree", "add", "-q", str(other), "main")
    (other / "README.md").write_text("the user's notes\n")
    (other / "pyproject.toml").write_text((other / "pyproject.toml").read_text() + "# local edit\n")
    mine = {p: (other / p).read_bytes() for p in ("README.md", "pyproject.toml")}
    assert cli("approve", res["id"], "--yes", "--json")[0] == 0

    code, out = cli("integrate", res["id"], "--json")
    assert code == 0 and out["merged_commit"], out
    assert git(repo, "rev-parse", "main").strip() == out["merged_commit"]
    assert FIXED in (other / "src" / "calc.py").read_text()
    # Only the user's own work shows there: no staged undo of the landed change.
    assert sorted(git(other, "status", "--porcelain").splitlines()) == [" M pyproject.toml", "?? README.md"]
    assert {p: (other / p).read_bytes() for p in mine} == mine
    assert git(repo, "status", "--porcelain") == "" and FIXED not in (repo / "src" / "calc.py").read_text()

    code, out = cli("revert", res["id"], "--json")
    assert code == 0, out
    assert git(repo, "rev-parse", "main").strip() == out["revert"]["commit"]
    assert FIXED not in (other / "src" / "calc.py").read_text()
    assert sorted(git(other, "status", "--porcelain").splitlines()) == [" M pyproject.toml", "?? README.md"]

    # apply onto main (checked out over there) refuses an overlap with the user's edit there.
    code, res2 = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, res2
    (other / "src" / "calc.py").write_text((other / "src" / "calc.py").read_text() + "# mine\n")
    head = git(repo, "rev-parse", "main").strip()
    code, out = cli("apply", res2["id"], "--to", "main", "--json")
    assert code == 6 and out["error"]["code"] == "OVERLAPS_UNCOMMITTED", out
    assert str(other) in out["error"]["message"] and "src/calc.py" in out["error"]["message"]
    assert git(repo, "rev-parse", "main").strip() == head and "# mine" in (other / "src" / "calc.py").read_text()
    git(other, "checkout", "--", "src/calc.py")
    code, out = cli("apply", res2["id"], "--to", "main", "--json")
    assert code == 0, out
    assert FIXED in (other / "src" / "calc.py").read_text()
    assert sorted(git(other, "status", "--porcelain").splitlines()) == [" M pyproject.toml", "?? README.md"]
    assert Path(other / "README.md").read_bytes() == mine["README.md"]


def test_a_plan_lands_on_its_branch_checked_out_in_another_worktree(cli, tmp_path):
    from tests.e2e.test_plans import check, make_plan_repo, run_plan, task, write_plan

    repo = make_plan_repo(tmp_path / "repo")
    (repo / "shared.txt").write_text("base\nuser line\n")  # pauses the landing: the plan rewrites it
    plan = write_plan(tmp_path / "p.json", [
        task("s", "@write shared.txt task", ["shared.txt"], verify=[check("shared.txt", "task")]),
    ])
    code, res = run_plan(cli, repo, plan)
    assert code == 6 and res["error"]["code"] == "OVERLAPS_UNCOMMITTED", res
    git(repo, "commit", "-qam", "user work")
    git(repo, "switch", "-qc", "side")
    other = tmp_path / "wt-main"
    git(repo, "worktree", "add", "-q", str(other), "main")
    (other / "notes.txt").write_text("the user's notes\n")
    code, res = cli("plan", "continue", res["id"], "--json")
    assert code == 0 and res["state"] == "succeeded", res
    assert (other / "shared.txt").read_text() == "task\n"
    assert git(other, "status", "--porcelain").splitlines() == ["?? notes.txt"]
    assert (repo / "shared.txt").read_text() == "base\nuser line\n" and git(repo, "status", "--porcelain") == ""
