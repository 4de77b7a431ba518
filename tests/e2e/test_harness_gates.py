"""Workers that go after the harness around the tests, through the CLI with real processes and git.

Each hostile change below made its task's verify commands pass (or leaked a key) without fixing the
bug; each must end `rejected` with its own gate code, exit 3, and leave the user's repository as it
was. An honest change of the same shape still lands.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import git, task_yaml, user_state

WORKER = Path(__file__).resolve().parent.parent / "workers" / "harness_worker.py"
MODES = ("shadow_pytest", "makefile_echo", "binary_as_text", "split_aws_key", "sitecustomize", "honest_module")
PYTEST = f"{sys.executable} -m pytest -q tests"

pytestmark = pytest.mark.slow


@pytest.fixture
def harness_repo(repo: Path) -> Path:
    """The sample repository with a Makefile that runs the tests and a profile per hostile mode."""
    (repo / "Makefile").write_text(f"test:\n\t{PYTEST}\n")
    with (repo / "bosun.toml").open("a") as fh:
        for mode in MODES:
            fh.write(f'\n[profiles.{mode}]\nadapter = "command"\n')
            fh.write(f"command = [{sys.executable!r}, {str(WORKER)!r}, {mode!r}]\n".replace("'", '"'))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "harness fixtures")
    return repo


def gate(result: dict, code: str) -> dict:
    return next(g for g in result["gates"] if g["code"] == code)


@pytest.mark.parametrize(
    ("mode", "verify", "codes"),
    [
        ("shadow_pytest", [PYTEST], ["MODULE_SHADOWED", "VERIFY_ENTRY_CHANGED"]),
        ("makefile_echo", ["make test"], ["VERIFY_ENTRY_CHANGED"]),
        ("binary_as_text", [PYTEST], ["BINARY_CHANGE", "GIT_RULES_CHANGED"]),
        ("split_aws_key", [PYTEST], ["SECRET_DETECTED"]),
        ("sitecustomize", [{"run": PYTEST, "env": {"PYTHONPATH": "src"}}], ["PYTHON_STARTUP_CHANGED"]),
    ],
)
def test_harness_attacks_are_rejected(cli, harness_repo, tmp_path, mode, verify, codes):
    task = task_yaml(tmp_path / "t.json", verify=verify)
    before = user_state(harness_repo)
    exit_code, res = cli("delegate", str(task), "--repo", str(harness_repo), "--profile", mode, "--auto-approve", "--json")
    assert exit_code == 3, res
    assert res["state"] == "rejected"
    for code in codes:
        assert gate(res, code)["ok"] is False, res["gates"]
    assert user_state(harness_repo) == before
    exit_code, res = cli("approve", res["id"], "--json")
    assert exit_code == 3 and res["error"]["code"] == "APPROVE_REFUSED"
    assert user_state(harness_repo) == before


def test_the_cheats_did_make_verification_pass(cli, harness_repo, tmp_path):
    # Proof that the gates, not the tests, stop these: the verify commands themselves exited 0. The
    # pytest.py shadow ran under the runner guard, which saw the tree's pytest.py loaded in place of the
    # environment's: that command does not count as passed, so the change is never proven either.
    import json

    from bosun.core import paths

    for mode, verify, tampered in (("shadow_pytest", [PYTEST], True), ("makefile_echo", ["make test"], False)):
        task = task_yaml(tmp_path / f"{mode}.json", verify=verify)
        _, res = cli("delegate", str(task), "--repo", str(harness_repo), "--profile", mode, "--json")
        ran = json.loads((paths.run_dir(res["id"]) / "verification.json").read_text())["commands"][0]
        assert res["state"] == "rejected" and ran["exit_code"] == 0, (mode, res["verification"])
        assert bool(ran.get("runner_tampered")) is tampered, (mode, ran.get("guard"))
        assert res["verification"]["passed"] is not tampered


def test_an_honest_fix_with_a_new_module_lands(cli, harness_repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", verify=["make test", PYTEST])
    exit_code, res = cli(
        "delegate", str(task), "--repo", str(harness_repo), "--profile", "honest_module", "--auto-approve", "--json"
    )
    assert exit_code == 0, res
    assert all(g["ok"] for g in res["gates"]), res["gates"]
    assert (harness_repo / "src" / "arith.py").exists()
