"""Cross-review with scripted workers: another profile reads the verified change, its P0/P1 findings go
back to the worker, and whatever the review did not clear is a reason for a person, never a pass."""

from __future__ import annotations

import json
import sys

import pytest

from bosun.core.paths import bosun_home, run_dir
from tests.conftest import WORKER, git, task_yaml, user_state

PLANTED = "return a + b if a != 7 else 0"


def _profiles(repo, sandbox: str | None = None) -> None:
    text = (repo / "bosun.toml").read_text()
    if sandbox:
        text = f'sandbox = "{sandbox}"\n' + text
    for mode, env in (("planted", ""), ("xreview", 'env = ["XREVIEW"]\n')):
        name = "xreviewer" if mode == "xreview" else mode
        text += (f'\n[profiles.{name}]\nadapter = "command"\n{env}'
                 f'command = ["{sys.executable}", "{WORKER}", "{mode}"]\n'
                 f'prices = {{input = 1.0, output = 2.0}}\n')
    (repo / "bosun.toml").write_text(text)


def _delegate(cli, repo, tmp_path, monkeypatch, variant, worker="planted", review=None, *extra):
    monkeypatch.setenv("XREVIEW", variant)
    _profiles(repo)
    task = task_yaml(tmp_path / "t.json", review=review or {"profile": "xreviewer", "rounds": 2})
    return cli("delegate", str(task), "--repo", str(repo), "--profile", worker, "--json", *extra)


def _record(run_id: str) -> dict:
    return json.loads((run_dir(run_id) / "cross_review.json").read_text())


def _codes(res) -> list[str]:
    return [r["code"] for r in res["verdict"]["reasons"]]


def test_the_reviewer_finds_a_planted_bug_and_the_worker_fixes_it_in_round_2(cli, repo, tmp_path, monkeypatch):
    before = user_state(repo)
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "finds", "planted", None, "--auto-approve")
    assert code == 0, res
    assert res["verdict"]["outcome"] == "landable", res["verdict"]
    assert res["merged_commit"], res
    landed = git(repo, "show", f"{res['merged_commit']}:src/calc.py")
    assert "return a + b\n" in landed and "a != 7" not in landed
    doc = _record(res["id"])
    first, second = doc["rounds"]
    assert first["status"] == "findings" and [f["severity"] for f in first["findings"]] == ["P1", "P3"]
    assert first["findings"][0]["citation"] is None  # src/calc.py:2 exists
    assert first["revised"]["diff_sha256_before"] != first["revised"]["diff_sha256_after"]
    assert first["revised"]["diff_sha256_after"] == second["diff_sha256"]
    assert [f["severity"] for f in second["findings"]] == ["P3"] and second["revised"] is None
    assert doc["revise_rounds"] == 1
    # The reviewer's tokens are its own: 2 rounds of 500 in / 30 out, priced at its profile's prices.
    assert doc["usage"]["input_tokens"] == 1000 and doc["usage"]["output_tokens"] == 60
    assert doc["cost_usd"] == pytest.approx((1000 * 1.0 + 60 * 2.0) / 1e6)
    # The revise turn resumed the worker's session, and the run's usage counts both worker turns.
    events = (run_dir(res["id"]) / "events.jsonl").read_text()
    assert "revised in session sess-planted" in events
    code, shown = cli("show", res["id"], "--json")
    assert shown["usage"]["input_tokens"] == 1300, shown.get("usage")
    metrics = json.loads((run_dir(res["id"]) / "metrics.json").read_text())
    assert metrics["worker"]["attempts"] == 2  # the first turn and the revise; the reviewer's are its own
    from bosun.engine.results import run_result
    from bosun.store.db import open_store

    brief = run_result(open_store().require_run(res["id"]), brief=True)["cross_review"]
    assert "diff_sha256" not in json.dumps(brief) and shown["cross_review"]["rounds"][0]["diff_sha256"]
    assert brief["rounds"][0]["findings"][0]["severity"] == "P1"  # what the parent reads keeps the findings
    assert user_state(repo)["stash"] == before["stash"]


def test_rounds_exhausted_with_an_open_p1_waits_for_a_person(cli, repo, tmp_path, monkeypatch):
    head = git(repo, "rev-parse", "HEAD")
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "always_p1", "planted", None, "--auto-approve")
    assert code == 7 and res["state"] == "verified", res
    assert res["merged_commit"] is None and git(repo, "rev-parse", "HEAD") == head
    assert "CROSS_REVIEW_OPEN" in _codes(res)
    (reason,) = [r for r in res["verdict"]["reasons"] if r["code"] == "CROSS_REVIEW_OPEN"]
    assert "still open after 2 review rounds" in reason["sentence"] and "src/calc.py:2" in reason["sentence"]
    assert len(_record(res["id"])["rounds"]) == 2
    code, out = cli("approve", res["id"], "--json")
    assert code == 7 and out["error"]["code"] == "NEEDS_REVIEW", out
    code, out = cli("approve", res["id"], "--yes", "--json")
    assert code == 0 and "CROSS_REVIEW_OPEN" in out["verdict"]["acknowledged"]["codes"], out


def test_block_on_refuses_an_open_finding(cli, repo, tmp_path, monkeypatch):
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "always_p1", "fix",
                          {"profile": "xreviewer", "rounds": 1, "block_on": "P1"}, "--auto-approve")
    assert code == 3 and res["state"] == "rejected", res
    assert res["verdict"]["outcome"] == "refused" and _codes(res) == ["CROSS_REVIEW_BLOCKED"], res["verdict"]
    assert len(_record(res["id"])["rounds"]) == 1  # rounds: 1 reads once and never revises
    code, out = cli("approve", res["id"], "--yes", "--json")
    assert code != 0 and out["error"], out
    assert cli("show", res["id"], "--json")[1]["state"] == "rejected"


def test_a_reviewer_that_invents_a_citation_is_flagged(cli, repo, tmp_path, monkeypatch):
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "invent", "fix", None, "--auto-approve")
    assert code == 7 and res["merged_commit"] is None, res
    assert _codes(res) == ["CROSS_REVIEW_CITATION"], res["verdict"]
    assert "src/calc.py:999" in res["verdict"]["reasons"][0]["sentence"]
    (rnd,) = _record(res["id"])["rounds"]
    assert rnd["invalid_citations"] and "out of range" in rnd["invalid_citations"][0]


@pytest.mark.parametrize(("variant", "needle"), [("crash", "failed"), ("prose", "JSON report")])
def test_a_reviewer_that_crashes_or_rambles_is_a_review_reason(cli, repo, tmp_path, monkeypatch, variant, needle):
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, variant, "fix", None, "--auto-approve")
    assert code == 7 and res["state"] == "verified" and res["merged_commit"] is None, res
    assert _codes(res) == ["CROSS_REVIEW_FAILED"], res["verdict"]
    assert needle in res["verdict"]["reasons"][0]["sentence"]


def test_a_reviewer_that_writes_is_refused(cli, repo, tmp_path, monkeypatch):
    monkeypatch.setenv("XREVIEW", "write")
    _profiles(repo, sandbox="off")  # no kernel read-only worktree: the record must still catch it
    task = task_yaml(tmp_path / "t.json", review={"profile": "xreviewer", "rounds": 1})
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json", "--auto-approve")
    assert code == 3 and res["state"] == "rejected" and res["merged_commit"] is None, res
    assert _codes(res) == ["CROSS_REVIEW_CHANGED_TREE"], res["verdict"]


def test_the_kernel_keeps_the_reviewer_read_only(cli, repo, tmp_path, monkeypatch):
    from bosun.sandbox import probe

    if probe().landlock_abi <= 0:
        pytest.skip("no kernel sandbox here")
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "write", "fix", {"profile": "xreviewer", "rounds": 1})
    assert code == 0 and res["verdict"]["outcome"] == "landable", res["verdict"]
    assert _record(res["id"])["rounds"][0]["status"] == "findings"  # it answered; its write never landed
    assert (tmp_path / "repo").exists() and "return 0" not in (run_dir(res["id"]) / "diff.patch").read_text()


@pytest.mark.parametrize(("review", "code_name"), [
    ({"profile": "fix"}, "SAME_REVIEWER"),
    ({"profile": "nobody"}, "UNKNOWN_REVIEWER"),
])
def test_a_reviewer_that_cannot_review_is_refused_before_anything_runs(cli, repo, tmp_path, monkeypatch, review, code_name):
    _profiles(repo)
    task = task_yaml(tmp_path / "t.json", review=review)
    code, out = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 2, out
    assert code_name in json.dumps(out)
    runs = bosun_home() / "runs"
    assert not runs.exists() or not any(runs.iterdir()), "nothing was created"
    code, out = cli("check", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 2 and code_name in json.dumps(out), out


def test_check_and_dry_run_say_who_reviews(cli, repo, tmp_path):
    _profiles(repo)
    task = task_yaml(tmp_path / "t.json", review={"profile": "xreviewer", "rounds": 3, "block_on": "P0"})
    code, out = cli("check", str(task), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0 and out["review"] == {"profile": "xreviewer", "rounds": 3, "block_on": "P0"}, out
    code, text = cli("delegate", str(task), "--repo", str(repo), "--profile", "fix", "--dry-run")
    assert code == 0 and "cross-review: xreviewer, up to 3 round(s), refusing open P0 or worse" in text, text


def test_bosun_toml_review_applies_and_a_task_turns_it_off(cli, repo, tmp_path, monkeypatch):
    monkeypatch.setenv("XREVIEW", "crash")
    _profiles(repo)
    (repo / "bosun.toml").write_text((repo / "bosun.toml").read_text() + '\n[review]\nprofile = "xreviewer"\nrounds = 1\n')
    git(repo, "commit", "-qam", "review config")
    code, res = cli("delegate", str(task_yaml(tmp_path / "a.json")), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 7 and _codes(res) == ["CROSS_REVIEW_FAILED"], res
    off = task_yaml(tmp_path / "b.json", review={"rounds": 0})
    code, res = cli("delegate", str(off), "--repo", str(repo), "--profile", "fix", "--json")
    assert code == 0 and res["verdict"]["outcome"] == "landable", res["verdict"]
    assert not (run_dir(res["id"]) / "cross_review.json").exists()


def test_a_plan_task_the_review_did_not_clear_waits_for_a_person(cli, tmp_path, monkeypatch):
    from tests.e2e.test_plans import by_id, check, make_plan_repo, run_plan, task, write_plan

    monkeypatch.setenv("XREVIEW", "crash")
    reviewer = (f'\n[profiles.xreviewer]\nadapter = "command"\nenv = ["XREVIEW"]\n'
                f'command = ["{sys.executable}", "{WORKER}", "xreview"]\n')
    prepo = make_plan_repo(tmp_path / "repo", extra_profiles=reviewer)
    before = user_state(prepo)
    plan = write_plan(tmp_path / "p.json", [
        task("a", "@write out/a.txt a", ["out/a.txt"], verify=[check("out/a.txt", "a")],
             review={"profile": "xreviewer", "rounds": 1}),
    ])
    code, res = run_plan(cli, prepo, plan)
    assert code == 7 and res["state"] == "paused" and res["error"]["code"] == "NEEDS_REVIEW", res
    a = by_id(res)["a"]
    assert a["merged_commit"] is None and [r["code"] for r in a["verdict"]["reasons"]] == ["CROSS_REVIEW_FAILED"], a
    assert user_state(prepo) == before
