"""Workers that make the tests pass by making them test less, through the CLI as real processes.

The task leaves the tests unlocked, so nothing but the test gates stands between the cheat and a
verified run: each cheat passes bosun's own verification (that is the point of it) and must still
be rejected; the honest worker that fixes the bug and adds a test must land.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import task_yaml, user_state

pytestmark = pytest.mark.slow


@pytest.fixture
def open_task(tmp_path: Path) -> Path:
    return task_yaml(tmp_path / "open-task.json", locked=[])


def delegate(cli, repo: Path, task: Path, mode: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--json", "--profile", mode, "--auto-approve")


def gate(result: dict, code: str) -> dict:
    return next(g for g in result["gates"] if g["code"] == code)


@pytest.mark.parametrize(
    ("mode", "code", "says"),
    [
        ("tautology", "TEST_WEAKENED", "tests/test_calc.py:5 test_add: \"assert True\" cannot fail"),
        ("early_return", "TEST_WEAKENED", "tests/test_calc.py:5 test_add returns before its first assertion"),
        ("shadow_test", "TEST_WEAKENED", "redefines test_add of line 4: only the later one runs"),
        ("harness_patch", "TEST_HARNESS_CHANGED", "tests/__init__.py:3 patches code under test: calc.add"),
    ],
)
def test_a_suite_gamed_into_passing_is_rejected(cli, repo, open_task, mode, code, says):
    before = user_state(repo)
    exit_code, res = delegate(cli, repo, open_task, mode)
    assert exit_code == 3, res
    assert res["verification"]["passed"] is True  # the cheat worked on the tests...
    assert res["state"] == "rejected"  # ...and not on the gates
    failed = {g["code"] for g in res["gates"] if not g["ok"]}
    # The held-out originals fail on the unfixed code as well: the cheat is refused twice over.
    assert failed == {code, "TESTS_REWRITTEN"}, res["gates"]
    assert says in gate(res, code)["detail"]
    assert user_state(repo) == before


def test_an_honest_fix_with_a_new_test_lands(cli, repo, open_task):
    exit_code, res = delegate(cli, repo, open_task, "fix_and_test")
    assert exit_code == 0, res
    assert res["state"] == "cleaned"
    assert gate(res, "TEST_WEAKENED")["detail"] == "1 test file changed, none weakened"
    assert gate(res, "TEST_HARNESS_CHANGED")["detail"] == "no test harness files changed"
    assert "def test_add_zero" in (repo / "tests" / "test_calc.py").read_text()
