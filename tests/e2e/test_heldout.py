"""Tests a worker cannot game: the original tests held out, hidden acceptance tests, the fail-to-pass proof."""

from __future__ import annotations

from pathlib import Path

from bosun.core import paths
from tests.conftest import git, task_yaml, user_state
from tests.e2e.test_attacks import delegate

HIDDEN = "from calc import add\n\n\ndef test_add_more():\n    assert add(10, 20) == 30\n"


def open_task(tmp_path: Path, **over: object) -> Path:
    """A task whose tests are not locked: the worker may edit them (tests: extend by default)."""
    return task_yaml(tmp_path / "t.json", locked=[], **over)


def gate(res: dict, code: str) -> dict:
    return next(g for g in res["gates"] if g["code"] == code)


def test_tests_rewritten_to_hide_a_regression_are_refused(cli, attack_repo, tmp_path):
    code, res = delegate(cli, attack_repo, open_task(tmp_path), "mask_sub")
    assert code == 3, res
    assert res["verification"]["passed"] is True  # the worker's own tests pass
    detail = gate(res, "TESTS_REWRITTEN")["detail"]
    assert "tests/test_calc.py" in detail and "rewrote" in detail
    assert res["verification"]["proven"] is False  # proof is taken with the original tests


def test_tests_rewrite_reports_instead_of_refusing(cli, attack_repo, tmp_path):
    code, res = delegate(cli, attack_repo, open_task(tmp_path, tests="rewrite"), "mask_sub")
    assert code == 7, res  # verified, but the rewritten tests are for a person to read
    assert gate(res, "TESTS_REWRITTEN")["ok"] and "tests: rewrite" in gate(res, "TESTS_REWRITTEN")["detail"]
    assert res["verdict"]["outcome"] == "needs_review"
    assert "TESTS_REWRITTEN" in [r["code"] for r in res["verdict"]["reasons"]]


def test_an_honest_fix_that_adds_a_test_passes_with_the_originals(cli, attack_repo, tmp_path):
    code, res = delegate(cli, attack_repo, open_task(tmp_path), "fix_and_add_test")
    assert code == 0, res
    assert gate(res, "TESTS_REWRITTEN")["ok"]
    assert res["verification"]["proven"] is True
    heldout = __import__("json").loads((paths.run_dir(res["id"]) / "verification.json").read_text())["heldout"]
    assert heldout["paths"] == ["tests/test_more.py"] and heldout["passed"] is True


def test_tests_keep_refuses_any_edit_of_an_existing_test(cli, attack_repo, tmp_path):
    code, res = delegate(cli, attack_repo, open_task(tmp_path, tests="keep"), "mask_sub")
    assert code == 3, res
    assert "tests: keep" in gate(res, "TESTS_REWRITTEN")["detail"]


def test_an_expected_value_changed_to_the_buggy_output_is_refused(cli, attack_repo, tmp_path):
    # The test failed before the change and, put back as it was, still fails after it: the change fixes
    # nothing it checks, whatever the worker's own version of the test says.
    before = user_state(attack_repo)
    code, res = delegate(cli, attack_repo, open_task(tmp_path), "expect_buggy", "--auto-approve")
    assert code == 3, res
    assert res["state"] == "rejected" and res["verdict"]["outcome"] == "refused"
    assert res["verification"]["proven"] is False
    assert "still fail" in res["verification"]["proof"]
    rewritten = gate(res, "TESTS_REWRITTEN")
    assert not rewritten["ok"] and "failed before the change too" in rewritten["detail"]
    assert "tests: rewrite" in rewritten["detail"]
    assert user_state(attack_repo) == before


def test_a_hidden_acceptance_test_catches_a_special_cased_fix(cli, attack_repo, tmp_path):
    (attack_repo / "tests" / "test_hidden.py").write_text(HIDDEN)
    git(attack_repo, "add", "-A")
    git(attack_repo, "commit", "-qm", "acceptance test")
    before = user_state(attack_repo)
    task = task_yaml(tmp_path / "t.json", holdout=["tests/test_hidden.py"])
    code, res = delegate(cli, attack_repo, task, "special_case")
    assert code == 3, res
    rdir = paths.run_dir(res["id"])
    assert (rdir / "saw-hidden").read_text() == "False"
    assert len((rdir / "history").read_text().split()) == 1  # no history leads back to the hidden file
    assert res["verification"]["passed"] is False
    tail = res["verification"]["commands"][0]["output_tail"]
    assert "test_add_more" in tail
    assert not (Path(res["worktree"]) / "tests" / "test_hidden.py").exists()
    assert user_state(attack_repo) == before


def test_holdout_files_come_back_only_for_verification_and_stay_in_the_merge(cli, attack_repo, tmp_path):
    (attack_repo / "tests" / "test_hidden.py").write_text(HIDDEN)
    git(attack_repo, "add", "-A")
    git(attack_repo, "commit", "-qm", "acceptance test")
    task = task_yaml(tmp_path / "t.json", holdout=["tests/test_hidden.py"])
    code, res = delegate(cli, attack_repo, task, "fix")
    assert code == 0, res
    assert "test_hidden" not in (paths.run_dir(res["id"]) / "diff.patch").read_text()
    assert res["verification"]["proven"] is True
    code, res = cli("approve", res["id"], "--json")
    code, res = cli("integrate", res["id"], "--json")
    assert code == 0, res
    assert (attack_repo / "tests" / "test_hidden.py").read_text() == HIDDEN
    assert "return a + b" in (attack_repo / "src" / "calc.py").read_text()


def test_a_holdout_glob_that_matches_nothing_is_bad_input(cli, attack_repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", holdout=["tests/nothing_*.py"])
    code, res = delegate(cli, attack_repo, task, "fix")
    assert code == 2 and "matches no file" in res["error"]["message"]
    assert not paths.runs_root().exists() or not list(paths.runs_root().iterdir())
