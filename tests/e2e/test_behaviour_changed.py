"""Behaviour removed is not a weakened test: a test deleted or rewritten with the behaviour it checked
is classified by running its original version on the change. It fails there (and passed before):
the behaviour changed, a reason for review under `tests: rewrite` (BEHAVIOUR_CHANGED), never a
refusal. It still passes: nothing required removing it, TEST_WEAKENED. Real `command` workers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import git, task_yaml, user_state
from tests.workers.proof_worker import profiles

FMT = """FORMATS = {
    'json': lambda d: 'json:' + str(d),
    'xml': lambda d: '<' + str(d) + '>',
}
PROG = 'oldtool'


def render(fmt, data):
    return FORMATS[fmt](data)


def label(x, legacy=False):
    if legacy:
        return 'L' + str(x)
    return 'N' + str(x)


def order(items):
    return sorted(items, reverse=True)


def usage():
    return f'usage: {PROG} [options]'


def double(x):
    return 2 * x
"""
TESTS = """from fmt import double, label, order, render, usage


def test_render_json():
    assert render('json', 1) == 'json:1'


def test_render_xml():
    assert render('xml', 1) == '<1>'


def test_label():
    assert label(1) == 'N1'


def test_label_legacy():
    assert label(1, legacy=True) == 'L1'


def test_order():
    assert order([2, 1, 3]) == [3, 2, 1]


def test_usage_names_the_tool():
    assert 'usage: oldtool' in usage()


def test_double_one():
    assert double(1) == 2


def test_double_two():
    assert double(2) == 4
"""
MODES = ("remove_branch", "remove_entry", "rename_tool", "new_order", "fold_tests", "drop_passing_test")


@pytest.fixture
def fmt_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "fmt"
    (repo / "tests").mkdir(parents=True)
    (repo / "fmt.py").write_text(FMT)
    (repo / "tests" / "test_fmt.py").write_text(TESTS)
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
    (repo / "bosun.toml").write_text(profiles(*MODES))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


def delegate(cli, repo: Path, tmp_path: Path, mode: str, tests: str = "rewrite") -> dict:
    task = task_yaml(tmp_path / "t.json", title="Remove what is deprecated", prompt="Remove it with its tests.",
                     verify=[f"{sys.executable} -m pytest -q tests"], locked=[], tests=tests,
                     repair=0)  # the verdict of one change: these scripted workers know one move
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", mode, "--json")
    assert isinstance(res, dict), res
    res["exit_code"] = code
    return res


def gate(res: dict, code: str) -> dict:
    return next(g for g in res["gates"] if g["code"] == code)


@pytest.mark.parametrize(("mode", "test"), [
    ("remove_branch", "test_label_legacy"),
    ("remove_entry", "test_render_xml"),
    ("rename_tool", "test_usage_names_the_tool"),
    ("new_order", "test_order"),
])
def test_a_test_deleted_with_the_behaviour_it_checked_is_for_review(cli, fmt_repo, tmp_path, mode, test):
    before = user_state(fmt_repo)
    res = delegate(cli, fmt_repo, tmp_path, mode)
    assert res["exit_code"] == 7 and res["verdict"]["outcome"] == "needs_review", res["verdict"]
    reasons = {r["code"]: r["sentence"] for r in res["verdict"]["reasons"]}
    assert "BEHAVIOUR_CHANGED" in reasons and "TEST_WEAKENED" not in reasons, reasons
    assert test in reasons["BEHAVIOUR_CHANGED"]
    weakened = gate(res, "TEST_WEAKENED")
    assert weakened["ok"] and "the behaviour it checked changed" in weakened["detail"], weakened
    assert user_state(fmt_repo) == before


def test_the_same_change_under_tests_extend_is_refused_as_rewritten_tests(cli, fmt_repo, tmp_path):
    # Changing behaviour the tests check is a tests: rewrite task; under extend the originals must pass.
    res = delegate(cli, fmt_repo, tmp_path, "remove_branch", tests="extend")
    assert res["exit_code"] == 3 and [r["code"] for r in res["verdict"]["reasons"]] == ["TESTS_REWRITTEN"], \
        res["verdict"]
    assert gate(res, "TEST_WEAKENED")["ok"]


def test_tests_folded_into_a_parametrized_one_are_not_weakened(cli, fmt_repo, tmp_path):
    res = delegate(cli, fmt_repo, tmp_path, "fold_tests")
    weakened = gate(res, "TEST_WEAKENED")
    assert weakened["ok"] and "test_double_two folded into the parametrized test_double" in weakened["detail"]
    assert res["verdict"]["outcome"] != "refused", res["verdict"]


def test_a_deleted_test_that_still_passes_on_the_change_is_weakening(cli, fmt_repo, tmp_path):
    res = delegate(cli, fmt_repo, tmp_path, "drop_passing_test")
    assert res["exit_code"] == 3, res["verdict"]
    weakened = gate(res, "TEST_WEAKENED")
    assert not weakened["ok"] and "test_double_two (was line 32) deleted" in weakened["detail"]


def test_a_tox_environment_no_verify_command_selects_is_for_review(cli, repo, tmp_path):
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text() + profiles("add_tox_env"))
    git(repo, "commit", "-qam", "profile")
    task = task_yaml(tmp_path / "t.json")
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "add_tox_env", "--json")
    assert code == 7 and [r["code"] for r in res["verdict"]["reasons"]] == ["TEST_ENV_ADDED"], res["verdict"]
    assert "pyproject.toml [tool.tox.env.docs]" in res["verdict"]["reasons"][0]["sentence"]
