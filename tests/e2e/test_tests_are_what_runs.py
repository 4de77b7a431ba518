"""Which files are tests is what the verify commands ran, read from the runner's own report: a root
``test.py`` and a ``checks.py`` that only the project's pytest settings collect are judged as tests,
so the cheats on them are refused under the default contract. Real `command` workers, real pytest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bosun.core import paths
from tests.conftest import git, user_state
from tests.workers.proof_worker import profiles

CALC = "def add(a, b):\n    return a - b  # bug\n\n\ndef sub(a, b):\n    return a - b\n"
ROOT_TEST = '''import unittest

from calc import add, sub


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)


if __name__ == "__main__":
    unittest.main()
'''
CHECKS = "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n" \
         "    assert sub(5, 3) == 2\n"
ROOT_MODES = ("root_fix", "root_rename", "root_skip", "root_always_true", "root_expect_buggy", "checks_skip")


def project(root: Path, files: dict[str, str]) -> Path:
    repo = root / "proj"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text)
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
    # repair = 0: these tests judge one change; a repair round of a scripted cheat repeats nothing useful.
    (repo / "bosun.toml").write_text('default_profile = "root_fix"\nrepair = 0\n' + profiles(*ROOT_MODES))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


def delegate(cli, repo: Path, tmp_path: Path, mode: str, verify: list[str]) -> dict:
    """The default contract: a title, a prompt and the verify command, nothing locked."""
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"title": "Fix add()", "prompt": "add() subtracts; make it add.", "verify": verify}))
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", mode, "--json")
    assert isinstance(res, dict), res
    res["exit_code"] = code
    return res


def red(res: dict) -> dict[str, str]:
    return {g["code"]: g["detail"] for g in res["gates"] if not g["ok"]}


ROOT_VERIFY = [f"{sys.executable} -m pytest -q test.py"]


def test_an_honest_fix_of_a_root_test_py_project_lands_proven(cli, tmp_path):
    repo = project(tmp_path, {"calc.py": CALC, "test.py": ROOT_TEST})
    res = delegate(cli, repo, tmp_path, "root_fix", ROOT_VERIFY)
    assert res["exit_code"] == 0 and res["verdict"]["outcome"] == "landable", res["verdict"]
    v = res["verification"]
    assert v["proven_by"] == "task_tests" and v["fail_to_pass"] == ["test.py::TestCalc::test_add"], v
    doc = json.loads((paths.run_dir(res["id"]) / "verification.json").read_text())
    assert doc["test_files"] == ["test.py"]


@pytest.mark.parametrize(("mode", "weakened"), [
    ("root_rename", "test.py: TestCalc.test_add (was line 7) deleted"),
    ("root_skip", "TestCalc.test_add adds \"unittest.skip('flaky')\""),
    ("root_always_true", "\"self.assertTrue(True or add(2, 3) == 5)\" cannot fail"),
    ("root_expect_buggy", None),
])
def test_the_cheats_on_a_root_test_py_are_refused(cli, tmp_path, mode, weakened):
    repo = project(tmp_path, {"calc.py": CALC, "test.py": ROOT_TEST})
    before = user_state(repo)
    res = delegate(cli, repo, tmp_path, mode, ROOT_VERIFY)
    assert res["exit_code"] == 3 and res["verdict"]["outcome"] == "refused", res["verdict"]
    refused = red(res)
    # The original test.py, held out, still fails on the unchanged code: the change fixes nothing it checks.
    assert "failed before the change too" in refused["TESTS_REWRITTEN"], refused
    if weakened:
        assert weakened in refused["TEST_WEAKENED"], refused
    else:  # a changed expected value is for review; the held-out original is what refuses it
        assert "TEST_WEAKENED" not in refused
    assert res["verification"]["proven"] is False
    assert user_state(repo) == before


def test_a_test_file_only_the_runners_settings_collect_is_a_test(cli, tmp_path):
    pyproject = '[tool.pytest.ini_options]\npython_files = ["checks.py"]\n'
    repo = project(tmp_path, {"calc.py": CALC, "checks.py": CHECKS, "pyproject.toml": pyproject})
    res = delegate(cli, repo, tmp_path, "checks_skip", [f"{sys.executable} -m pytest -q"])
    assert res["exit_code"] == 3, res["verdict"]
    assert "checks.py:7 test_add adds \"pytest.mark.skip(reason='later')\"" in red(res)["TEST_WEAKENED"]
    # The original checks.py, held out, is what the change's code is run against too.
    assert "with the original tests put back (checks.py)" in red(res)["TESTS_REWRITTEN"]
    doc = json.loads((paths.run_dir(res["id"]) / "verification.json").read_text())
    assert "checks.py" in doc["test_files"]
    assert doc["baseline"]["commands"][0]["tests"]["files"] == ["checks.py"]


def test_tests_keep_covers_a_test_file_only_the_runner_names(cli, tmp_path):
    pyproject = '[tool.pytest.ini_options]\npython_files = ["checks.py"]\n'
    repo = project(tmp_path, {"calc.py": CALC, "checks.py": CHECKS, "pyproject.toml": pyproject})
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"title": "Fix add()", "prompt": "add() subtracts; make it add.", "tests": "keep",
                                "verify": [f"{sys.executable} -m pytest -q"]}))
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "checks_skip", "--json")
    assert code == 3, res["verdict"]
    assert "tests: keep, but the change edits existing test files: checks.py" in red(res)["TESTS_REWRITTEN"]
