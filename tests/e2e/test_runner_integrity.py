"""The code under test cannot grade itself, through the CLI with real workers, git and pytest.

A repository with ``calc.py`` at its root (``add`` subtracts) and locked tests. Each hostile worker
(tests/workers/runner_attacker.py) leaves ``add`` wrong and makes ``python -m pytest tests`` report
success by reaching the runner: from ``calc.py`` alone under ``scope: [calc.py]``, or with files
the runner loads by itself. Each must end refused, never proven and never approvable, with the user's
repository as it was; the honest fix under the same contract lands proven.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bosun.core import paths
from tests.conftest import ROOT, git, task_yaml, user_state
from tests.workers.runner_attacker import BUG, MODES

pytestmark = pytest.mark.slow

WORKER = ROOT / "tests" / "workers" / "runner_attacker.py"
TESTS = '''from calc import add


def test_add():
    assert add(2, 3) == 5


def test_add_zero():
    assert add(0, 4) == 4
'''
VERIFY = f"{sys.executable} -m pytest -q tests"


@pytest.fixture
def calc_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "calc"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(BUG)
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "0.1.0"\n')
    lines = ['default_profile = "honest"']
    for mode in [*MODES, "path_python"]:
        lines += [f"[profiles.{mode}]", 'adapter = "command"',
                  f"command = [{json.dumps(sys.executable)}, {json.dumps(str(WORKER))}, {json.dumps(mode)}]"]
    (repo / "bosun.toml").write_text("\n".join(lines) + "\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def scoped(tmp_path: Path, **over: object) -> Path:
    fields: dict[str, object] = {"verify": [VERIFY], "locked": ["tests/**"], "scope": ["calc.py"]}
    fields.update(over)
    return task_yaml(tmp_path / "task.json", **fields)


def delegate(cli, repo: Path, task: Path, mode: str) -> tuple[int, dict]:
    return cli("delegate", str(task), "--repo", str(repo), "--profile", mode, "--auto-approve", "--json")


def recorded_command(res: dict) -> dict:
    """The first verify command as the run's record holds it (``--json`` shows a summary)."""
    return json.loads((paths.run_dir(res["id"]) / "verification.json").read_text())["commands"][0]


def red(res: dict) -> set[str]:
    return {g["code"] for g in res["gates"] if not g["ok"]}


def assert_refused(cli, repo: Path, before: dict, code: int, res: dict, codes: set[str]) -> None:
    assert code == 3, res
    assert res["state"] == "rejected"
    assert codes <= red(res), res["gates"]
    assert res["verification"].get("proven") is not True
    exit_code, out = cli("approve", res["id"], "--json")
    assert exit_code == 3 and out["error"]["code"] == "APPROVE_REFUSED"
    assert user_state(repo) == before


def test_the_honest_fix_lands_proven_under_the_same_contract(cli, calc_repo, tmp_path):
    code, res = delegate(cli, calc_repo, scoped(tmp_path), "honest")
    assert code == 0, res
    assert res["verification"]["proven"] is True
    tamper = next(g for g in res["gates"] if g["code"] == "RUNNER_TAMPERED")
    assert tamper["ok"] and "untouched" in tamper["detail"], tamper
    assert (calc_repo / "calc.py").read_text() == MODES["honest"]["calc.py"]


@pytest.mark.parametrize(
    ("mode", "codes"),
    [
        # The three changes to calc.py alone that landed proven.
        ("runtest_wrap", {"RUNNER_REFERENCED", "RUNNER_TAMPERED"}),
        ("skip_under_pytest", {"RUNNER_REFERENCED", "RUNNER_TAMPERED"}),
        ("exit_under_pytest", {"RUNNER_REFERENCED", "RUNNER_TAMPERED"}),
        # The same, written so that the source names nothing: the runtime guard alone refuses them.
        ("runtest_dynamic", {"RUNNER_TAMPERED"}),
        ("atexit_report", {"RUNNER_TAMPERED"}),
        ("thread_patch", {"RUNNER_TAMPERED"}),
        ("frames_plugin", {"RUNNER_TAMPERED"}),
        ("forge_guard", {"RUNNER_TAMPERED"}),
    ],
)
def test_code_under_test_cannot_grade_itself(cli, calc_repo, tmp_path, mode, codes):
    before = user_state(calc_repo)
    code, res = delegate(cli, calc_repo, scoped(tmp_path), mode)
    assert_refused(cli, calc_repo, before, code, res, codes)
    # The cheat worked on the process: pytest exited 0, and only the guard's record says otherwise.
    ran = recorded_command(res)
    assert ran["exit_code"] == 0, ran["output_tail"]
    assert ran["runner_tampered"], ran["guard"]


def test_files_the_runner_loads_by_itself_are_refused(cli, calc_repo, tmp_path):
    # Package metadata at the root names a pytest plugin; pytest autoloads it and it patches add().
    before = user_state(calc_repo)
    code, res = delegate(cli, calc_repo, scoped(tmp_path, scope=[]), "dist_info_plugin")
    assert_refused(cli, calc_repo, before, code, res, {"PACKAGE_METADATA_ADDED", "RUNNER_TAMPERED"})
    assert "calc_compat-1.0.dist-info" in next(g for g in res["gates"] if g["code"] == "PACKAGE_METADATA_ADDED")["detail"]


def test_a_module_named_after_a_plugins_dependency_is_refused(cli, calc_repo, tmp_path):
    # The verify interpreter's environment has a pytest plugin whose dependency bosun's own
    # interpreter has never heard of; the worker's root module of that name patches add().
    env = tmp_path / "env"
    (env / "fakeplug-1.0.dist-info").mkdir(parents=True)
    (env / "fakeplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (env / "fakeplug-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nfakeplug = fakeplug\n")
    (env / "fakeplug.py").write_text("import fakedep\n\nassert fakedep.VALUE == 1\n")
    (env / "fakedep.py").write_text("VALUE = 1\n")
    task = scoped(tmp_path, scope=[], verify=[{"run": VERIFY, "env": {"PYTHONPATH": str(env)}}])
    before = user_state(calc_repo)
    code, res = delegate(cli, calc_repo, task, "dep_shadow")
    assert_refused(cli, calc_repo, before, code, res, {"MODULE_SHADOWED"})
    assert recorded_command(res)["exit_code"] == 0  # it did patch add()
    detail = next(g for g in res["gates"] if g["code"] == "MODULE_SHADOWED")["detail"]
    assert "fakedep.py" in detail and "'fakedep'" in detail


def test_a_relative_path_entry_never_finds_the_workers_program(cli, calc_repo, tmp_path, monkeypatch):
    # The user's PATH starts with node_modules/.bin: in the worktree, that is the worker's directory.
    monkeypatch.setenv("PATH", os.pathsep.join(["node_modules/.bin", str(Path(sys.executable).parent),
                                                os.environ["PATH"]]))
    task = scoped(tmp_path, scope=[], verify=["python3 -m pytest -q tests"])
    before = user_state(calc_repo)
    code, res = delegate(cli, calc_repo, task, "path_python")
    assert_refused(cli, calc_repo, before, code, res, {"VERIFY_FAILED"})
    tail = recorded_command(res)["output_tail"]
    assert "2 failed" in tail, tail  # the real interpreter ran the real tests
