"""`bosun revert` and `bosun apply` end to end: real git, the real CLI, scripted `command` workers.

A landed run is undone by exactly one revert commit (or prepared as a new run for review), refused with
the later commits named when they touch the same lines; a run's change lands on another branch only
after its verify commands pass there. The user's index, stash and uncommitted work stay as they were.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import git, task_yaml, user_state
from tests.e2e.mcp_support import call, with_session
from tests.e2e.test_cli_docs import RUN_RESULT, agrees, documented

pytestmark = pytest.mark.slow

FIXED = "return a + b"
BUG = "return a - b  # bug"


def land(cli, repo: Path, task: Path) -> dict:
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--auto-approve", "--json")
    assert code == 0 and res["state"] == "cleaned" and res["merged_commit"], res
    return res


def commit_file(repo: Path, rel: str, text: str, subject: str) -> str:
    (repo / rel).write_text(text)
    git(repo, "add", rel)
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "--short", "HEAD").strip()


def user_work(repo: Path) -> None:
    """A stash entry, a staged file and an unstaged edit and an untracked file, none the run touched."""
    (repo / "README.md").write_text("stashed notes\n")
    git(repo, "add", "README.md")
    git(repo, "stash", "-q")
    (repo / "src" / "extra.py").write_text("X = 1\n")
    git(repo, "add", "src/extra.py")
    (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text() + "# local edit\n")
    (repo / "NOTES.md").write_text("untracked notes\n")


def kept(repo: Path, changed: tuple[str, ...] = ()) -> dict:
    """What must survive a landing untouched: stash, the staged changes, the uncommitted files' bytes,
    and the index entries other than those of the files the landing changes."""
    st = user_state(repo)
    entries = [e for e in git(repo, "ls-files", "-s").splitlines() if e.split("\t")[1] not in changed]
    return {"stash": st["stash"], "paths": st["paths"], "staged": git(repo, "diff", "--cached", "--binary"),
            "entries": entries, "stash_tree": git(repo, "rev-parse", "stash@{0}^{tree}")}


def test_revert_makes_one_commit_and_keeps_the_users_work(cli, repo, task_file):
    res = land(cli, repo, task_file)
    landing = res["merged_commit"]
    user_work(repo)
    before, head = kept(repo, ("src/calc.py",)), git(repo, "rev-parse", "HEAD").strip()
    code, out = cli("revert", res["id"], "--json")
    assert code == 0, out
    agrees("revert", out, (RUN_RESULT[0] | documented("revert")[0], RUN_RESULT[1]))
    rev = out["revert"]
    assert out["reverted"]["commit"] == rev["commit"] and rev["landing"] == landing and rev["branch"] == "main"
    assert git(repo, "rev-list", f"{head}..main").split() == [rev["commit"]]  # exactly one new commit
    assert git(repo, "rev-parse", "HEAD").strip() == rev["commit"]
    assert git(repo, "rev-parse", f"{rev['commit']}:src/calc.py") == git(repo, "rev-parse", f"{landing}^:src/calc.py")
    assert git(repo, "diff", "--name-only", f"{landing}^", rev["commit"]).split() == []
    assert f"This reverts commit {landing}" in git(repo, "log", "-1", "--format=%B", rev["commit"])
    assert kept(repo, ("src/calc.py",)) == before
    assert BUG in (repo / "src" / "calc.py").read_text()
    code, text = cli("show", res["id"])
    assert f"reverted  on main by commit {rev['commit'][:12]}" in text, text
    code, again = cli("revert", res["id"], "--json")
    assert code == 1 and again["error"]["code"] == "ALREADY_REVERTED" and again["id"] == res["id"], again
    code, shown = cli("show", res["id"], "--events", "--json")
    assert any(e["type"] == "reverted" and e["commit"] == rev["commit"] for e in shown["events"])


def test_revert_refuses_when_later_commits_touch_the_same_lines(cli, repo, task_file):
    res = land(cli, repo, task_file)
    calc = (repo / "src" / "calc.py").read_text()
    short = commit_file(repo, "src/calc.py", calc.replace(FIXED, "return b + a"), "swap the operands")
    (repo / "NOTES.md").write_text("mine\n")
    before = user_state(repo)
    code, out = cli("revert", res["id"], "--json")
    assert code == 6 and out["error"]["code"] == "REVERT_CONFLICT", out
    assert f"{short} swap the operands" in out["error"]["message"] and "--onto-worktree" in out["error"]["hint"]
    assert user_state(repo) == before
    assert "reverted" not in out


def test_revert_on_a_dirty_tree_refuses_an_overlap_and_keeps_everything_else(cli, repo, task_file):
    res = land(cli, repo, task_file)
    (repo / "src" / "calc.py").write_text((repo / "src" / "calc.py").read_text() + "# mine\n")
    (repo / "src" / "extra.py").write_text("X = 1\n")
    git(repo, "add", "src/extra.py")
    index = (repo / ".git" / "index").read_bytes()
    before = user_state(repo)
    code, out = cli("revert", res["id"], "--json")
    assert code == 6 and out["error"]["code"] == "OVERLAPS_UNCOMMITTED" and "src/calc.py" in out["error"]["message"]
    assert user_state(repo) == before and (repo / ".git" / "index").read_bytes() == index
    # Without the overlap the revert lands, and the user's other files are as they were, byte for byte.
    git(repo, "checkout", "--", "src/calc.py")
    (repo / "NOTES.md").write_text("untracked notes\n")
    staged, entries = git(repo, "diff", "--cached", "--binary"), git(repo, "ls-files", "-s", "src/extra.py")
    pinned = {p: (repo / p).read_bytes() for p in ("src/extra.py", "NOTES.md")}
    code, out = cli("revert", res["id"], "--json")
    assert code == 0, out
    assert {p: (repo / p).read_bytes() for p in pinned} == pinned
    assert git(repo, "diff", "--cached", "--binary") == staged and git(repo, "ls-files", "-s", "src/extra.py") == entries
    assert git(repo, "status", "--porcelain").splitlines() == ["A  src/extra.py", "?? NOTES.md"]


def test_revert_when_the_branch_is_not_checked_out_moves_only_its_ref(cli, repo, task_file):
    res = land(cli, repo, task_file)
    git(repo, "switch", "-q", "-c", "other")
    (repo / "src" / "calc.py").write_text("# the user's own version\n")
    index, before = (repo / ".git" / "index").read_bytes(), user_state(repo)
    code, out = cli("revert", res["id"], "--json")
    assert code == 0, out
    after = user_state(repo)
    assert after["branches"]["refs/heads/main"] == out["revert"]["commit"]
    assert {k: v for k, v in after.items() if k != "branches"} == {k: v for k, v in before.items() if k != "branches"}
    assert (repo / ".git" / "index").read_bytes() == index


def test_revert_onto_worktree_prepares_a_verified_run_for_review(cli, repo, tmp_path):
    # A verify command that passes with and without the fix, so the revert can be verified green.
    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} -m pytest -q tests -k test_sub"])
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 7, res  # not proven: waits for a person
    cli("approve", res["id"], "--yes", "--json")
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0 and res["merged_commit"], res
    head = git(repo, "rev-parse", "HEAD").strip()
    code, out = cli("revert", res["id"], "--onto-worktree", "--json")
    new = out["revert"]["run_result"]
    assert code == 7 and new["state"] == "verified" and new["verification"]["passed"], out
    assert out["reverted"]["run"] == new["id"] and git(repo, "rev-parse", "HEAD").strip() == head
    assert BUG in (Path(new["worktree"]) / "src" / "calc.py").read_text()
    code, shown = cli("show", new["id"], "--json")
    assert shown["revert_of"]["run"] == res["id"] and shown["files_changed"] == 1
    assert cli("approve", new["id"], "--yes", "--json")[0] == 0
    code, landed = cli("integrate", new["id"], "--json")
    assert code == 0 and BUG in (repo / "src" / "calc.py").read_text(), landed
    code, text = cli("show", res["id"])
    assert f"reverted  by run {new['id']}, merged as {landed['merged_commit'][:12]}" in text, text
    code, again = cli("revert", res["id"], "--json")
    assert again["error"]["code"] == "ALREADY_REVERTED", again


def test_revert_and_apply_refuse_clearly_before_anything_changes(cli, repo, task_file):
    before = user_state(repo)
    code, out = cli("revert", "20990101-000000-aaaaaa", "--json")
    assert code == 2 and out["error"]["code"] == "UNKNOWN_RUN" and out["error"]["hint"], out
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0 and res["state"] == "verified"
    code, out = cli("revert", res["id"], "--json")
    assert code == 2 and out["error"]["code"] == "NOT_LANDED" and "discard" in out["error"]["hint"], out
    code, out = cli("apply", res["id"], "--to", "nope", "--json")
    assert code == 2 and out["error"]["code"] == "UNKNOWN_BRANCH" and "main" in out["error"]["hint"], out
    code, out = cli("apply", res["id"], "--to", "main", "--json")
    assert code == 2 and out["error"]["code"] == "SAME_BRANCH" and "integrate" in out["error"]["hint"], out
    code, bad = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "noop", "--json")
    assert bad["state"] == "rejected"
    git(repo, "branch", "release")
    code, out = cli("apply", bad["id"], "--to", "release", "--json")
    assert code == 2 and out["error"]["code"] == "NOT_VERIFIED" and out["error"]["hint"], out
    assert {k: v for k, v in user_state(repo).items() if k != "branches"} == \
        {k: v for k, v in before.items() if k != "branches"}


def test_apply_lands_on_another_branch_after_reverification(cli, repo, task_file):
    git(repo, "branch", "release")
    res = land(cli, repo, task_file)
    user_work(repo)
    index, before = (repo / ".git" / "index").read_bytes(), user_state(repo)
    code, out = cli("apply", res["id"], "--to", "release", "--json")
    assert code == 0, out
    agrees("apply", out, (RUN_RESULT[0] | documented("apply")[0], RUN_RESULT[1]))
    done = out["apply"]
    assert done["branch"] == "release" and done["reverified"] and done["verification"]["passed"]
    assert git(repo, "rev-parse", "release").strip() == done["commit"]
    assert git(repo, "show", f"{done['commit']}:src/calc.py").count(FIXED) == 1
    assert out["applied"][0]["commit"] == done["commit"]
    after = user_state(repo)  # release is not checked out: only its ref moved
    assert {k: v for k, v in after.items() if k != "branches"} == {k: v for k, v in before.items() if k != "branches"}
    assert (repo / ".git" / "index").read_bytes() == index
    code, text = cli("show", res["id"])
    assert f"applied   to release as commit {done['commit'][:12]} (re-verified)" in text, text


def test_apply_refuses_when_verification_fails_on_the_other_branch(cli, repo, task_file):
    git(repo, "switch", "-q", "-c", "release")
    tests = (repo / "tests" / "test_calc.py").read_text()
    commit_file(repo, "tests/test_calc.py", tests.replace("sub(5, 3) == 2", "sub(5, 3) == 3"), "break test_sub")
    git(repo, "switch", "-q", "main")
    release = git(repo, "rev-parse", "release").strip()
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0 and res["state"] == "verified", res  # verified, not landed: its worktree re-verifies
    code, out = cli("apply", res["id"], "--to", "release", "--json")
    assert code == 3 and out["error"]["code"] == "REVERIFY_FAILED", out
    assert git(repo, "rev-parse", "release").strip() == release
    assert "applied" not in out and out["state"] == "verified"
    assert (Path(res["run_dir"]) / "apply-release.json").is_file()
    assert FIXED in (Path(res["worktree"]) / "src" / "calc.py").read_text()  # put back to the verified tree


def test_apply_onto_a_checked_out_branch_refuses_an_overlap(cli, repo, task_file):
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    git(repo, "switch", "-q", "-c", "release")
    (repo / "src" / "calc.py").write_text((repo / "src" / "calc.py").read_text() + "# mine\n")
    before = user_state(repo)
    code, out = cli("apply", res["id"], "--to", "release", "--json")
    assert code == 6 and out["error"]["code"] == "OVERLAPS_UNCOMMITTED" and "src/calc.py" in out["error"]["message"]
    assert user_state(repo) == before
    git(repo, "checkout", "--", "src/calc.py")
    code, out = cli("apply", res["id"], "--to", "release", "--json")
    assert code == 0, out
    assert git(repo, "rev-parse", "HEAD").strip() == out["apply"]["commit"] and FIXED in (repo / "src/calc.py").read_text()
    assert git(repo, "status", "--porcelain") == ""


def test_the_mcp_tools_revert_and_apply(cli, repo, task_file):
    git(repo, "branch", "release")
    res = land(cli, repo, task_file)

    async def body(s):
        err, bad = await call(s, "apply", {"run_id": res["id"], "branch": "nope"})
        assert err and bad["error"]["code"] == "UNKNOWN_BRANCH" and bad["error"]["hint"], bad
        err, applied = await call(s, "apply", {"run_id": res["id"], "branch": "release"})
        assert not err and applied["apply"]["verification"]["passed"], applied
        err, reverted = await call(s, "revert", {"run_id": res["id"]})
        assert not err and reverted["revert"]["branch"] == "main", reverted
        err, again = await call(s, "revert", {"run_id": res["id"]})
        assert err and again["error"]["code"] == "ALREADY_REVERTED", again
        return applied, reverted

    applied, reverted = with_session(repo, body)
    assert git(repo, "rev-parse", "release").strip() == applied["apply"]["commit"]
    assert git(repo, "rev-parse", "main").strip() == reverted["revert"]["commit"] == reverted["reverted"]["commit"]
    assert BUG in (repo / "src" / "calc.py").read_text()
    code, shown = cli("show", res["id"], "--json")
    assert shown["applied"][0]["branch"] == "release" and shown["reverted"]["commit"] == reverted["revert"]["commit"]


def test_revert_onto_worktree_of_a_run_that_added_a_test(cli, repo, tmp_path):
    """The revert removes the test the run added, as it must. TEST_WEAKENED names it; a person waives it
    at approval (a revert is read by a person anyway), and the revert lands."""
    task = task_yaml(tmp_path / "t.json", locked=[], review={"profile": "noop", "rounds": 2},
                     verify=[f"{sys.executable} -m pytest -q tests -k test_sub"])
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix_and_test", "--json")
    assert res["state"] == "verified", res
    cli("approve", res["id"], "--yes", "--json")
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0 and res["merged_commit"], res
    assert "test_add_zero" in (repo / "tests" / "test_calc.py").read_text()
    code, out = cli("revert", res["id"], "--onto-worktree", "--json")
    new = out["revert"]["run_result"]
    assert "test_add_zero" not in (Path(new["worktree"]) / "tests" / "test_calc.py").read_text()
    assert [r["code"] for r in new["verdict"]["reasons"]] == ["TEST_WEAKENED"], new["verdict"]
    assert "test_add_zero" in new["verdict"]["reasons"][0]["sentence"]
    assert "TEST_WEAKENED" in out["revert"]["hint"], out["revert"]
    assert not (Path(new["worktree"]).parent.parent / "runs" / new["id"] / "cross_review.json").exists()
    code, approved = cli("approve", new["id"], "--waive", "TEST_WEAKENED", "--reason",
                         "the revert removes the test the reverted run added", "--yes", "--json")
    assert code == 0 and approved["state"] == "approved", approved
    code, landed = cli("integrate", new["id"], "--json")
    assert code == 0 and BUG in (repo / "src" / "calc.py").read_text(), landed
    assert "test_add_zero" not in (repo / "tests" / "test_calc.py").read_text()


def test_revert_onto_worktree_of_a_branch_that_is_not_checked_out(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} -m pytest -q tests -k test_sub"])
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    cli("approve", res["id"], "--yes", "--json")
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0 and res["merged_commit"], res
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "NOTES.md").write_text("my uncommitted notes\n")
    before = user_state(repo)
    code, out = cli("revert", res["id"], "--onto-worktree", "--json")
    new = out["revert"]["run_result"]
    assert code == 7 and new["state"] == "verified", out
    assert BUG in (Path(new["worktree"]) / "src" / "calc.py").read_text()
    assert not (Path(new["worktree"]) / "NOTES.md").exists()  # another branch's run carries none of feature's work
    assert cli("approve", new["id"], "--yes", "--json")[0] == 0
    code, landed = cli("integrate", new["id"], "--json")
    assert code == 0, landed
    assert BUG in git(repo, "show", "main:src/calc.py") and git(repo, "rev-parse", "main^") .strip() == res["merged_commit"]
    after = user_state(repo)
    assert after["paths"] == before["paths"] and after["stash"] == before["stash"] and after["head"] == before["head"]
    assert FIXED in (repo / "src" / "calc.py").read_text()  # the checked-out feature branch kept the fix
