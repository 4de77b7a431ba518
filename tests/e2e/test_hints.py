"""Hints that say what to do, each in the case a new user met it: integrate of a refused run, approve of a
run whose verification failed, the tests a failed change renamed, a subject the change keeps, and a
`--repo` that does not exist."""

from __future__ import annotations

import json

import pytest

from tests.conftest import task_yaml
from tests.e2e.test_verdict_reasons import delegate

pytestmark = pytest.mark.slow

TESTS = "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
ONLY_SUB_TEST = "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"


def test_a_refused_run_is_not_told_to_approve_and_a_failed_verification_is_never_waived(cli, repo, tmp_path):
    code, res = cli("delegate", str(task_yaml(tmp_path / "t.json")), "--repo", str(repo), "--profile", "noop", "--json")
    assert code == 3 and res["state"] == "rejected", res
    code, out = cli("integrate", res["id"], "--json")
    assert code != 0 and "approve" not in out["error"]["hint"], out["error"]
    assert "refused" in out["error"]["hint"] and "--resume" in out["error"]["hint"], out["error"]
    code, out = cli("approve", res["id"], "--json")
    assert out["error"]["code"] == "APPROVE_REFUSED" and "--waive" not in out["error"]["hint"], out["error"]
    code, out = cli("approve", res["id"], "--waive", "VERIFY_FAILED", "--reason", "trust me", "--json")
    assert code == 2 and "cannot be waived" in out["error"]["message"], out["error"]
    code, shown = cli("show", res["id"], "--json")
    assert shown["state"] == "rejected", shown


def test_a_failed_change_that_renamed_the_tests_is_not_said_to_leave_them_alone(cli, files_repo, tmp_path, monkeypatch):
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"tests/test_calc.py": None, "tests/test_renamed.py": TESTS})
    assert code == 3, res
    gate = next(g for g in res["gates"] if g["code"] == "TESTS_REWRITTEN")
    assert "no existing test was changed" not in gate["detail"] and "not checked" in gate["detail"], gate


def test_a_deleted_subject_is_one_reason_and_a_kept_one_is_none(cli, files_repo, tmp_path, monkeypatch):
    no_add = "def sub(a, b):\n    return a - b\n"
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch,
                         {"src/calc.py": no_add, "tests/test_calc.py": ONLY_SUB_TEST})
    codes = [r["code"] for r in res["verdict"]["reasons"]]
    assert codes.count("SUBJECT_REMOVED") == 1, res["verdict"]
    cli("discard", res["id"])
    kept = "import operator\n\nadd = operator.add\n\n\ndef sub(a, b):\n    return a - b\n"  # add() still exists
    code, res = delegate(cli, files_repo, tmp_path, monkeypatch, {"src/calc.py": kept, "tests/test_calc.py": ONLY_SUB_TEST})
    said = json.dumps(res["verdict"]) + json.dumps(res["gates"])
    assert "which the change deletes" not in said and "SUBJECT_REMOVED" not in said, said


def test_workers_of_a_repository_that_is_not_there_is_an_error(cli, tmp_path):
    code, out = cli("workers", "--repo", str(tmp_path / "nonexistent"), "--json")
    assert code == 2 and out["error"]["hint"], out
