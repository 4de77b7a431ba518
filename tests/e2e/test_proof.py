"""The fail-to-pass proof: bosun runs the verify commands on the start tree too, and says what that proves."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bosun.core import paths
from tests.conftest import git, task_yaml
from tests.workers.proof_worker import profiles


def delegate(cli, repo: Path, task: Path, profile: str, *extra: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--profile", profile, "--json", *extra)


def test_a_real_fix_is_proven(cli, repo, task_file, capsys):
    code, res = delegate(cli, repo, task_file, "fix")
    assert code == 0, res
    v = res["verification"]
    assert v["proven"] is True
    assert v["baseline"]["passed"] is False and v["baseline"]["commands"][0]["exit_code"] != 0
    assert v["proof"] == "the tests failed before this change and pass after it"
    code, out = cli("show", res["id"])
    assert "proof: the tests failed before this change and pass after it" in out
    report = (paths.run_dir(res["id"]) / "report.md").read_text()
    assert "the tests failed before this change" in report


def test_tests_that_already_passed_prove_nothing(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} -m pytest -q tests/test_calc.py::test_sub"])
    code, res = delegate(cli, repo, task, "fix")
    assert code == 7, res  # verified, but unproven: it waits for a person
    assert res["verification"]["proven"] is False
    assert res["verification"]["proof"] == "the tests already passed before this change: they do not prove it"
    assert res["verdict"]["outcome"] == "needs_review"
    assert [r["code"] for r in res["verdict"]["reasons"]] == ["NOT_PROVEN"]
    assert "already passed before this change" in res["verdict"]["reasons"][0]["sentence"]


def test_proof_not_required_lands_a_change_whose_tests_passed_before(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} -m pytest -q tests/test_calc.py::test_sub"],
                     proof="not-required")
    code, res = delegate(cli, repo, task, "fix")
    assert code == 0, res
    assert res["verdict"] == {"outcome": "landable", "reasons": [], "acknowledged": None}


def test_the_baseline_is_cached_per_start_tree_and_commands(cli, repo, task_file):
    code, first = delegate(cli, repo, task_file, "fix")
    code, second = delegate(cli, repo, task_file, "fix")
    assert first["verification"]["baseline"]["cached"] is False
    assert second["verification"]["baseline"]["cached"] is True
    assert second["verification"]["proven"] is True


def test_baseline_off(cli, repo, task_file):
    toml = repo / "bosun.toml"
    toml.write_text('baseline = "off"\n' + toml.read_text())
    code, res = delegate(cli, repo, task_file, "fix")
    assert code == 7, res  # nothing proves the change: a person decides
    assert res["verification"]["proven"] is None
    assert "no baseline" in res["verification"]["proof"]
    assert res["verdict"]["reasons"][0]["code"] == "NOT_PROVEN"
    assert not (paths.run_dir(res["id"]) / "baseline.json").exists() or json.loads(
        (paths.run_dir(res["id"]) / "baseline.json").read_text())["verification"] is None


# The verify command, run on the start tree (baseline) and on the change (verification): the baseline
# waits for the verification to have run, so it only passes when the two overlap.
OVERLAP_CHECK = """import pathlib, sys, time
marks = pathlib.Path(sys.argv[1])
if "a - b  # bug" in pathlib.Path("src/calc.py").read_text():  # the start tree: the baseline
    deadline = time.monotonic() + 30
    while not (marks / "verified").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    (marks / "baseline").write_text("saw the verification" if (marks / "verified").exists() else "alone")
    sys.exit(1)  # the bug is there: the proof's "before"
(marks / "verified").write_text("yes")
"""


def test_verification_overlaps_a_baseline_the_worker_outran(cli, repo, tmp_path):
    # A fast worker ends while the tests still run on the start tree: verification of the change does
    # not wait for them, and the proof still has both sides.
    toml = repo / "bosun.toml"
    toml.write_text('sandbox = "off"\n' + toml.read_text())  # the check's marks live outside the worktree
    marks = tmp_path / "marks"
    marks.mkdir()
    check = tmp_path / "check.py"
    check.write_text(OVERLAP_CHECK)
    task = task_yaml(tmp_path / "t.json", verify=[f"{sys.executable} {check} {marks}"])
    code, res = delegate(cli, repo, task, "fix")
    assert code == 0, res
    assert (marks / "baseline").read_text() == "saw the verification"
    assert res["verification"]["proven"] is True, res["verification"]
    assert json.loads((paths.run_dir(res["id"]) / "baseline.json").read_text())["verification"]["passed"] is False


def test_bosun_work_alone_records_its_baseline(cli, repo, task_file):
    # Outside a delegation (`bosun work`, then `bosun verify` in another process) work waits for it.
    code, res = cli("prepare", str(task_file), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0, res
    code, res = cli("work", res["id"], "--json")
    assert res["state"] == "worked", res
    doc = json.loads((paths.run_dir(res["id"]) / "baseline.json").read_text())
    assert doc["verification"]["passed"] is False


# -- per-test outcomes are the proof -------------------------------------------------------------------

def proof_profiles(repo: Path, *modes: str) -> None:
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text() + profiles(*modes))


def test_a_failing_test_skipped_after_the_change_is_not_fixed(cli, repo, task_file):
    proof_profiles(repo, "skip_at_call")
    code, res = delegate(cli, repo, task_file, "skip_at_call")
    v = res["verification"]
    assert v["passed"] is True and v["proven"] is False, v  # the command exits 0: the test was skipped
    assert v["proof"] == ('the tests failed before this change, but these did not pass after it: '
                          'tests/test_calc.py::test_add (skipped)')
    assert res["verdict"]["outcome"] != "landable"


def test_an_exit_code_that_contradicts_the_report_is_a_failure(cli, repo, task_file):
    proof_profiles(repo, "exit_zero_after_report")
    code, res = delegate(cli, repo, task_file, "exit_zero_after_report")
    assert code == 3 and res["verdict"]["outcome"] == "refused", res["verdict"]
    (cmd,) = res["verification"]["commands"]
    assert cmd["exit_code"] == 0 and res["verification"]["passed"] is False
    doc = json.loads((paths.run_dir(res["id"]) / "verification.json").read_text())
    assert doc["commands"][0]["report_disagrees"] == "exited 0, but its report lists 1 failing test(s)"


def test_a_test_command_that_reports_no_test_proves_nothing(cli, repo, task_file):
    proof_profiles(repo, "exit_zero_at_import")
    code, res = delegate(cli, repo, task_file, "exit_zero_at_import")
    v = res["verification"]
    assert v["passed"] is True and v["proven"] is False, v
    assert "gave no per-test report, so bosun cannot tell which tests ran" in v["proof"]
    assert res["verdict"]["outcome"] != "landable"


def test_a_plain_command_is_proven_by_its_exit_code_and_says_so(cli, repo, tmp_path):
    check = "import sys; sys.path.insert(0, 'src'); from calc import add; assert add(2, 3) == 5"
    task = task_yaml(tmp_path / "t.json", verify=[{"run": [sys.executable, "-c", check]}])
    code, res = delegate(cli, repo, task, "fix")
    assert code == 0 and res["verdict"]["outcome"] == "landable", res["verdict"]
    assert res["verification"]["proven_by"] == "task_tests"
    assert "(by exit code:" in res["verification"]["proof"] and "reports no per-test outcomes" in res["verification"]["proof"]


UNITTEST = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."]


def unittest_cases(repo: Path) -> None:
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_calc.py").write_text(
        "import unittest\n\nfrom calc import add, sub\n\n\nclass TestCalc(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "unittest")


def test_unittest_names_each_test_when_verbose(cli, repo, tmp_path):
    unittest_cases(repo)
    task = task_yaml(tmp_path / "t.json", verify=[{"run": [*UNITTEST, "-v"], "env": {"PYTHONPATH": "src"}}])
    code, res = delegate(cli, repo, task, "fix")
    assert code == 0, res["verdict"]
    assert res["verification"]["fail_to_pass"] == ["tests/test_calc.py::TestCalc::test_add"], res["verification"]


def test_unittest_counts_alone_do_not_prove_a_test_skipped_rather_than_fixed(cli, repo, tmp_path):
    proof_profiles(repo, "skip_at_call")
    unittest_cases(repo)
    task = task_yaml(tmp_path / "t.json", verify=[{"run": UNITTEST, "env": {"PYTHONPATH": "src"}}])
    code, res = delegate(cli, repo, task, "skip_at_call")
    v = res["verification"]
    assert v["passed"] is True and v["proven"] is False, v
    assert "skipped 1 test(s) where it skipped 0 before" in v["proof"]


def test_a_unittest_command_that_runs_no_test_proves_nothing(cli, repo, tmp_path):
    # unittest collects no plain test functions: the command exits 0 having run nothing, before and after.
    (repo / "tests" / "__init__.py").write_text("")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tests package")
    task = task_yaml(tmp_path / "t.json", verify=[{"run": UNITTEST, "env": {"PYTHONPATH": "src"}}])
    code, res = delegate(cli, repo, task, "fix")
    assert code == 7 and res["verification"]["proven"] is False, res["verification"]
    assert res["verification"]["proof"].endswith("ran no tests"), res["verification"]["proof"]
