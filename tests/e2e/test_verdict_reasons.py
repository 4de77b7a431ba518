"""Each reason a verified change waits for a person, end to end with a real `command` worker.

A run that needs review never lands on its own: `--auto-approve` leaves the user's branch, index and
files byte-identical and exits 7; a script's `approve --yes` or a person at a terminal lands it, and
who said yes is recorded. The honest, proven fix still lands with `--auto-approve`.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, git, task_yaml, user_state

FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def delegate(cli, repo: Path, tmp_path: Path, monkeypatch, edits: dict, *extra: str, **task: object):
    plan = tmp_path / "edits.json"
    plan.write_text(json.dumps(edits))
    monkeypatch.setenv("BOSUN_TEST_FILES", str(plan))
    task.setdefault("locked", [])
    path = task_yaml(tmp_path / "task.json", **task)
    return cli("delegate", str(path), "--repo", str(repo), "--profile", "files", "--json", *extra)


def reasons(res: dict) -> list[str]:
    return [r["code"] for r in res["verdict"]["reasons"]]


TOX = "[tox]\nenvlist = py311\n\n[testenv]\ncommands = pytest\n"
TOX_MORE = TOX + "\n[testenv:lint]\ncommands = ruff check .\n"
VERIFY_SUB = f"{sys.executable} -m pytest -q tests/test_calc.py::test_sub"
TEST_REWRITTEN = ("from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n    assert add(0, 0) == 0\n\n\n"
                  "def test_sub():\n    assert sub(5, 3) == 3\n")
SUB_CHANGED = FIXED.replace("return a - b\n", "return a - b + 1\n")

# One case per review reason: (the worker's edits, the task's fields, the reason the verdict gives).
CASES = {
    "not_proven": ({"src/calc.py": FIXED}, {"verify": [VERIFY_SUB]}, "NOT_PROVEN"),
    "not_verified": ({"src/calc.py": FIXED}, {"verify": []}, "NOT_VERIFIED"),
    "not_verified_proof_not_required": ({"src/calc.py": FIXED}, {"verify": [], "proof": "not-required"}, "NOT_VERIFIED"),
    "tests_rewrite": ({"src/calc.py": SUB_CHANGED, "tests/test_calc.py": TEST_REWRITTEN}, {"tests": "rewrite"},
                      "TESTS_REWRITTEN"),
    "expected_value": ({"src/calc.py": SUB_CHANGED, "tests/test_calc.py": TEST_REWRITTEN}, {"tests": "rewrite"},
                       "EXPECTED_VALUE_CHANGED"),
    "permitted_locked_path": ({"src/calc.py": FIXED, "tox.ini": TOX_MORE}, {"permit": ["tox.ini"]},
                              "LOCKED_PATH_PERMITTED"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_auto_approve_of_a_run_that_needs_review_lands_nothing(cli, files_repo, tmp_path, monkeypatch, case):
    edits, task, reason = CASES[case]
    if "tox.ini" in edits:
        (files_repo / "tox.ini").write_text(TOX)
        git(files_repo, "add", "tox.ini")
        git(files_repo, "commit", "-qm", "tox")
    (files_repo / "notes.txt").write_text("the user's own uncommitted work\n")  # dirty tree, untracked file
    git(files_repo, "add", "notes.txt")  # and a staged one: the index must stay as it is too
    before = user_state(files_repo)
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, edits, "--auto-approve", **task)
    assert code == 7, res
    assert res["state"] == "verified" and res["verdict"]["outcome"] == "needs_review", res
    assert reason in reasons(res), res["verdict"]
    assert res["merged_commit"] is None
    assert user_state(files_repo) == before  # branch, index, stash, files: byte-identical
    assert all(r["sentence"] and "\n" not in r["sentence"] for r in res["verdict"]["reasons"])
    # A script lands it only by saying so, and that is recorded.
    code, waiting = cli("approve", res["id"], "--json")
    assert code == 7 and waiting["error"]["code"] == "NEEDS_REVIEW" and reason in waiting["error"]["message"]
    code, out = cli("approve", res["id"], "--yes", "--json")
    assert code == 0 and out["state"] == "approved", out
    assert out["verdict"]["acknowledged"]["by"] == "script" and reason in out["verdict"]["acknowledged"]["codes"]


def test_the_honest_proven_fix_still_lands_with_auto_approve(cli, files_repo, tmp_path, monkeypatch):
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"src/calc.py": FIXED}, "--auto-approve")
    assert code == 0, res
    assert res["verdict"] == {"outcome": "landable", "reasons": [], "acknowledged": None}
    assert res["state"] == "cleaned" and res["merged_commit"]
    assert "return a + b" in (files_repo / "src" / "calc.py").read_text()


def test_a_new_tox_environment_no_verify_command_selects_is_for_review(cli, files_repo, tmp_path, monkeypatch):
    # Locked test configuration that changes nothing any verify command runs is read, not refused.
    (files_repo / "tox.ini").write_text(TOX)
    git(files_repo, "add", "tox.ini")
    git(files_repo, "commit", "-qm", "tox")
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"src/calc.py": FIXED, "tox.ini": TOX_MORE})
    assert code == 7 and reasons(res) == ["TEST_ENV_ADDED"], res["verdict"]
    assert "tox.ini [testenv:lint]" in res["verdict"]["reasons"][0]["sentence"]
    # Anything else in the locked tox.ini is still the locked file changed.
    edited = TOX_MORE.replace("commands = pytest", "commands = pytest -k 'not add'")
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"src/calc.py": FIXED, "tox.ini": edited})
    assert code == 3 and "LOCKED_PATH_CHANGED" in reasons(res), res["verdict"]


def test_permit_never_covers_a_verify_entry_point_unless_named_exactly(cli, files_repo, tmp_path, monkeypatch):
    (files_repo / "Makefile").write_text("test:\n\tpython -m pytest -q tests\n")
    git(files_repo, "add", "Makefile")
    git(files_repo, "commit", "-qm", "make")
    gutted = {"src/calc.py": FIXED, "Makefile": "test:\n\t@echo ok\n"}
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, gutted, verify=["make test"], permit=["Make*"])
    assert code == 3 and "VERIFY_ENTRY_CHANGED" in reasons(res), res
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, gutted, verify=["make test"], permit=["Makefile"])
    assert code == 7 and "VERIFY_ENTRY_PERMITTED" in reasons(res), res


def test_check_and_dry_run_warn_that_a_task_without_verify_commands_is_never_verified(cli, files_repo, tmp_path):
    path = task_yaml(tmp_path / "task.json", verify=[], proof="not-required")
    code, out = cli("check", str(path), "--repo", str(files_repo), "--json")
    assert code == 0 and [w["code"] for w in out["warnings"]] == ["NOT_VERIFIED"], out
    code, text = cli("delegate", str(path), "--repo", str(files_repo), "--dry-run")
    assert code == 0 and "warning: NOT_VERIFIED" in text, text
    code, out = cli("check", str(task_yaml(tmp_path / "ok.json"), ), "--repo", str(files_repo), "--json")
    assert out["warnings"] == []


RENAMED = FIXED.replace("def add(", "def plus(")
RENAMED_TESTS = "from calc import plus, sub\n\n\ndef test_plus():\n    assert plus(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"


def test_tests_renamed_with_their_subject_are_not_held_against_the_change(cli, files_repo, tmp_path, monkeypatch):
    # add() is renamed plus() (and fixed); its test goes with it. The original test_add cannot run on
    # the change, and the original test_sub still must.
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"src/calc.py": RENAMED, "tests/test_calc.py": RENAMED_TESTS})
    gate = next(g for g in res["gates"] if g["code"] == "TESTS_REWRITTEN")
    assert gate["ok"] and "tests/test_calc.py::test_add" in gate["detail"], gate
    # test_add failed before the change, and the change removed what it tests: a person decides. No
    # test that failed before is reported passed after (test_add is gone): nothing proves the change.
    assert code == 7 and set(reasons(res)) == {"SUBJECT_REMOVED", "NOT_PROVEN"}, res["verdict"]
    assert any("failed before it" in r["sentence"] for r in res["verdict"]["reasons"])
    assert 'tests/test_calc.py::test_add (missing)' in res["verification"]["proof"]


def test_a_subject_hidden_from_the_names_bosun_reads_does_not_hide_a_regression(cli, files_repo, tmp_path, monkeypatch):
    # The worker fixes add() but breaks sub(), and hides it: `def sub` becomes an assignment (so sub
    # looks removed), and test_sub goes. The held-out test_sub is left out, so this must not land
    # on its own.
    code_ = FIXED.replace("def sub(a, b):\n    return a - b\n", "def _sub(a, b):\n    return a - b + 1\n\n\nsub = _sub\n")
    tests = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    before = user_state(files_repo)
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"src/calc.py": code_, "tests/test_calc.py": tests},
                         "--auto-approve")
    # `sub = _sub` still defines sub(), so test_sub is not excused: put back, it fails on the change.
    assert code == 3 and res["verdict"]["outcome"] == "refused", res["verdict"]
    assert "TESTS_REWRITTEN" in reasons(res) and "tests/test_calc.py::test_sub" in str(res["verdict"])
    assert user_state(files_repo) == before


def test_a_renamed_subject_does_not_excuse_the_tests_that_still_fail(cli, files_repo, tmp_path, monkeypatch):
    # sub() keeps its name; the worker rewrites its expected value to the buggy output. Renaming add()
    # excuses only the tests of add().
    cheat = RENAMED_TESTS.replace("sub(5, 3) == 2", "sub(5, 3) == 3")
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch,
                         {"src/calc.py": RENAMED.replace("return a - b\n", "return a - b + 1\n"), "tests/test_calc.py": cheat})
    assert code == 3 and "TESTS_REWRITTEN" in reasons(res), res["verdict"]


def _approve_on_a_terminal(run_id: str, cwd: Path, answer: bytes) -> tuple[int, bytes]:
    """`bosun approve RUN` with a real terminal (a pty) as stdin and stderr, answering ``answer``."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BOSUN_WARM": "0"}
    try:
        proc = subprocess.Popen([sys.executable, "-m", "bosun", "approve", run_id], stdin=follower, stderr=follower,
                                stdout=subprocess.PIPE, env=env, cwd=cwd)
        os.close(follower)
        os.write(leader, answer)  # typed ahead: the terminal keeps it until bosun asks
        said = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            said += chunk
        proc.communicate(timeout=120)
    finally:
        os.close(leader)
    return proc.returncode, said


def test_a_person_at_a_terminal_approves_after_reading_the_reasons(cli, files_repo, tmp_path, monkeypatch):
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"src/calc.py": FIXED}, verify=[VERIFY_SUB])
    assert code == 7, res
    code, said = _approve_on_a_terminal(res["id"], files_repo, b"n\n")
    assert code == 7, said  # a person's "no" is a no
    assert b"NOT_PROVEN" in said and b"[y/N]" in said and b"not approved" in said
    code, out = cli("show", res["id"], "--json")
    assert out["state"] == "verified" and out["verdict"]["acknowledged"] is None
    code, said = _approve_on_a_terminal(res["id"], files_repo, b"y\n")
    assert code == 0, said
    assert b"NOT_PROVEN" in said and b"needs review" in said
    code, out = cli("show", res["id"], "--json")
    assert out["state"] == "approved" and out["verdict"]["acknowledged"]["by"] == "person"


def test_the_proof_names_the_original_tests_when_the_change_edited_them(cli, files_repo, tmp_path, monkeypatch):
    # Verification passed on the change's version of the tests; the proof is about the originals, put back.
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch,
                         {"src/calc.py": SUB_CHANGED, "tests/test_calc.py": TEST_REWRITTEN}, tests="rewrite")
    assert code == 7 and res["verification"]["passed"], res
    proof = res["verification"]["proof"]
    assert proof.startswith("the original tests (put back as they were before the change) failed before this change "
                            "and still fail after it"), proof
    assert "own version of the tests passes" in proof
