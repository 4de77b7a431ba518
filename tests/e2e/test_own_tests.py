"""The worker's own tests prove its fix: bosun runs the change's tests on the start tree's code too,
concurrently with the change's own verification, and says which tests fail there and pass with the
change. Real `command` workers, real git, real pytest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bosun.core import paths
from tests.conftest import WORKER, git, task_yaml, user_state
from tests.workers.proof_worker import profiles

ONLY_SUB = "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
TASK = "add() subtracts; make it add, and add a regression test that fails without the fix."


def untested_bug(repo: Path, *modes: str, review: bool = False) -> Path:
    """The sample repository with no test of add(): the task's tests pass before the fix."""
    (repo / "tests" / "test_calc.py").write_text(ONLY_SUB)
    text = (repo / "bosun.toml").read_text() + profiles(*modes)
    if review:
        text += (f'\n[profiles.xreviewer]\nadapter = "command"\nenv = ["XREVIEW"]\n'
                 f"command = {json.dumps([sys.executable, str(WORKER), 'xreview'])}\n")
    (repo / "bosun.toml").write_text(text)
    git(repo, "commit", "-qam", "only sub is tested")
    return repo


def delegate(cli, repo: Path, tmp_path: Path, mode: str, **over: object) -> dict:
    task = task_yaml(tmp_path / "t.json", prompt=TASK, locked=[], **over)
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", mode, "--json")
    assert isinstance(res, dict), res
    res["exit_code"] = code
    return res


def codes(res: dict) -> list[str]:
    return [r["code"] for r in res["verdict"]["reasons"]]


def test_a_fix_with_its_regression_test_is_proven_by_its_own_test(cli, repo, tmp_path):
    untested_bug(repo, "fix_with_regression_test")
    before = user_state(repo)
    res = delegate(cli, repo, tmp_path, "fix_with_regression_test")
    v = res["verification"]
    assert v["proven"] is True and v["proven_by"] == "own_tests", v
    assert v["fail_to_pass"] == ["tests/test_calc.py::test_add_regression"]
    (own,) = v["own_tests"]
    assert own["id"] == "tests/test_calc.py::test_add_regression" and own["kind"] == "behaviour"
    assert own["untrusted"] is True and "assert add(2, 3) == 5" in own["source"]
    assert res["exit_code"] == 7 and codes(res) == ["OWN_TESTS_PROOF"], res["verdict"]
    assert "tests/test_calc.py::test_add_regression;" in res["verdict"]["reasons"][0]["sentence"]
    doc = json.loads((paths.run_dir(res["id"]) / "verification.json").read_text())
    assert doc["own"]["paths"] == ["tests/test_calc.py"]
    assert doc["heldout"]["passed"] is True  # the original tests still pass with the change
    assert user_state(repo) == before
    # What a parent reads: the tests' source instead of the diff, and that this reason is its own to settle.
    from bosun.mcp.answer import compact_result
    from bosun.store.db import open_store

    answer = compact_result(open_store().require_run(res["id"]))
    assert answer["proven_by"] == "own_tests" and answer["own_tests"][0]["untrusted"] is True
    assert "acknowledge=['OWN_TESTS_PROOF'] on your own reading" in answer["summary"]


def test_a_cross_review_that_clears_the_own_tests_makes_the_change_landable(cli, repo, tmp_path, monkeypatch):
    untested_bug(repo, "fix_with_new_test_file", review=True)
    monkeypatch.setenv("XREVIEW", "finds")  # only a P3 for a fixed add()
    res = delegate(cli, repo, tmp_path, "fix_with_new_test_file", review={"profile": "xreviewer", "rounds": 1})
    assert res["verification"]["proven_by"] == "own_tests", res["verification"]
    assert res["verdict"]["outcome"] == "landable", res["verdict"]
    prompt = (paths.run_dir(res["id"]) / "cross_review.json").read_text()
    assert "rounds" in prompt


def test_a_cross_review_with_an_open_finding_leaves_the_own_tests_proof_to_a_person(cli, repo, tmp_path, monkeypatch):
    untested_bug(repo, "fix_with_new_test_file", review=True)
    monkeypatch.setenv("XREVIEW", "always_p1")
    res = delegate(cli, repo, tmp_path, "fix_with_new_test_file", review={"profile": "xreviewer", "rounds": 1})
    assert res["exit_code"] == 7 and set(codes(res)) == {"OWN_TESTS_PROOF", "CROSS_REVIEW_OPEN"}, res["verdict"]


def test_a_new_test_that_passed_before_proves_nothing(cli, repo, tmp_path):
    untested_bug(repo, "fix_with_passing_test")
    res = delegate(cli, repo, tmp_path, "fix_with_passing_test")
    assert res["verification"]["proven"] is False and codes(res) == ["NOT_PROVEN"], res["verification"]


@pytest.mark.parametrize("mode", ["marker_attribute", "marker_hasattr", "new_function_only"])
def test_a_test_that_fails_only_on_a_name_the_change_adds_proves_nothing(cli, repo, tmp_path, monkeypatch, mode):
    untested_bug(repo, mode, review=True)
    monkeypatch.setenv("XREVIEW", "finds")  # a review that clears everything cannot clear this
    res = delegate(cli, repo, tmp_path, mode, review={"profile": "xreviewer", "rounds": 1})
    v = res["verification"]
    assert v["proven"] is False and v["own_tests"][0]["kind"] == "new_name", v
    assert res["exit_code"] == 7 and codes(res) == ["OWN_TESTS_TRIVIAL"], res["verdict"]
    assert "prove nothing about the task" in res["verdict"]["reasons"][0]["sentence"]


def test_own_tests_do_not_prove_a_change_that_breaks_the_original_tests(cli, repo, tmp_path):
    untested_bug(repo, "fix_and_break_original")
    res = delegate(cli, repo, tmp_path, "fix_and_break_original")
    assert res["exit_code"] == 3 and "TESTS_REWRITTEN" in codes(res), res["verdict"]
    assert res["verification"]["proven_by"] is None


def test_the_workers_tests_never_run_in_a_pooled_checkout(cli, repo, tmp_path):
    # The own-tests run executes the worker's tests; one that repoints its checkout's .git at the
    # user's git dir must not get a pooled worktree reset through it (that moves the user's HEAD).
    untested_bug(repo, "repoint_git")
    with (repo / "bosun.toml").open("a") as fh:
        fh.write("\n[pool]\nsize = 5\n")
    git(repo, "commit", "-qam", "pool")
    code, warm = cli("pool", "warm", "--repo", str(repo), "--json")
    assert code == 0, warm
    before = user_state(repo)
    res = delegate(cli, repo, tmp_path, "repoint_git")
    assert res["verification"]["proven_by"] == "own_tests", res["verification"]
    assert user_state(repo) == before
    listed = git(repo, "worktree", "list", "--porcelain")
    assert "own-tests" not in listed  # its temporary checkout was removed from the repository's side
    code, pool = cli("pool", "status", "--repo", str(repo), "--json")
    for slot in pool["worktrees"]:
        if slot["state"] == "idle":
            assert git(Path(slot["path"]), "rev-parse", "--absolute-git-dir").strip() != str(repo / ".git")
