"""The plan verify as people write it first: a test-first plan (every task's tests committed up front,
the plan's `verify` running the whole suite) succeeds, because between waves bosun checks only that
nothing regressed; a wave that breaks a test that passed before it fails the plan, naming the test
and showing pytest's output on every surface (the CLI's text, --json, plan watch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.e2e.test_plans import by_id, make_plan_repo, run_plan, task, write_plan

pytestmark = pytest.mark.slow

PYTEST = f"{sys.executable} -m pytest -q"

TESTS = {
    "tests/test_util.py": "from util import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    "tests/test_geo.py": "from geo import area\n\n\ndef test_area():\n    assert area(1) == 3\n",
    "tests/test_circle.py": "from circle import rim\n\n\ndef test_rim():\n    assert rim(1) == 6\n",
}


def repo_with_tests_first(tmp_path: Path) -> Path:
    repo = make_plan_repo(tmp_path / "repo")
    (repo / "util.py").write_text("def double(x):\n    return 2 * x\n")
    for rel, text in TESTS.items():
        (repo / rel).parent.mkdir(exist_ok=True)
        (repo / rel).write_text(text)
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the tests, first")
    return repo


def plan_of(tmp_path: Path, geo_prompt: str) -> Path:
    return write_plan(tmp_path / "plan.json", [
        task("geo", geo_prompt, ["geo.py", "util.py"], verify=[f"{PYTEST} tests/test_geo.py"]),
        task("circle", "@write circle.py def rim(r): return 6 * r", ["circle.py"], ["geo"],
             verify=[f"{PYTEST} tests/test_circle.py"]),
    ], verify=[f"{PYTEST} tests"])


def test_a_test_first_plan_succeeds_checking_between_waves_that_nothing_regressed(cli, tmp_path):
    repo = repo_with_tests_first(tmp_path)
    code, res = run_plan(cli, repo, plan_of(tmp_path, "@write geo.py def area(r): return 3 * r * r"))
    assert code == 0 and res["state"] == "succeeded", res.get("error")
    assert (repo / "circle.py").is_file() and (repo / "geo.py").is_file()
    code, events = cli("plan", "watch", res["id"], "--json")
    lines = [json.loads(ln) for ln in events.splitlines()] if isinstance(events, str) else [events]
    said = [e["detail"] for e in lines if e["kind"] == "verify"]
    assert any(s.startswith("before wave 1: 1 test pass") for s in said), said
    assert any(s.startswith("nothing regressed after wave 1: 2 tests pass") for s in said), said
    assert any(s.startswith("plan verify passed") for s in said), said
    assert Path(res["plan_dir"], "verify-wave-0.json").is_file()


def test_a_wave_that_breaks_a_passing_test_fails_the_plan_showing_the_output(cli, tmp_path, capsys):
    repo = repo_with_tests_first(tmp_path)
    broken = "@write geo.py def area(r): return 3 * r * r\n@write util.py def double(x): return x + 1"
    code, res = run_plan(cli, repo, plan_of(tmp_path, broken))
    assert code == 1 and res["state"] == "failed", res
    err = res["error"]
    assert err["code"] == "PLAN_VERIFY_REGRESSED" and "wave 1" in err["message"], err
    assert err["tests"] == ["tests/test_util.py::test_double"], err
    assert "assert 3 == 4" in err["output"], err  # pytest's own words, not only a file name
    assert by_id(res)["circle"]["state"] == "pending"  # wave 2 never started on a broken base
    code, text = cli("plan", "status", res["id"])
    assert "PLAN_VERIFY_REGRESSED" in text and "assert 3 == 4" in text, text
    code, watched = cli("plan", "watch", res["id"])
    assert "assert 3 == 4" in watched, watched


def test_the_plan_verify_must_pass_after_the_last_wave(cli, tmp_path):
    repo = repo_with_tests_first(tmp_path)
    doc = json.loads(plan_of(tmp_path, "@write geo.py def area(r): return 3 * r * r").read_text())
    doc["tasks"][1]["prompt"] = "@write circle.py def rim(r): return 5 * r"  # its own verify is weaker
    doc["tasks"][1]["verify"] = [f"{sys.executable} -c 'import circle'"]
    plan = tmp_path / "plan2.json"
    plan.write_text(json.dumps(doc))
    code, res = run_plan(cli, repo, plan)
    assert code == 1 and res["state"] == "failed", res
    err = res["error"]
    assert err["code"] == "PLAN_VERIFY_FAILED" and "last wave" in err["message"], err
    assert "assert 5 == 6" in err["output"], err
    assert not (repo / "circle.py").exists()  # nothing landed
