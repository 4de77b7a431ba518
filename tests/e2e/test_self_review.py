"""Self-review: the report is validated, not trusted, and an escalation is a reason for a person to decide."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import WORKER, git, task_yaml


def _profile(repo, min_lines: int = 0) -> None:
    text = (repo / "bosun.toml").read_text().replace(
        'default_profile = "fix"', f'default_profile = "fix"\nself_review_min_diff_lines = {min_lines}')
    text += (
        f'\n[profiles.reviewed]\nadapter = "command"\nself_review = true\nenv = ["REVIEW_VARIANT"]\n'
        f'command = ["{sys.executable}", "{WORKER}", "reviewed"]\n'
    )
    (repo / "bosun.toml").write_text(text)


def _delegate(cli, repo, tmp_path, monkeypatch, variant, *extra):
    monkeypatch.setenv("REVIEW_VARIANT", variant)
    _profile(repo)
    task = task_yaml(tmp_path / "t.json", acceptance=["add() adds"])
    return cli("delegate", str(task), "--repo", str(repo), "--profile", "reviewed", "--json", *extra)


@pytest.mark.parametrize(
    ("variant", "verdict", "needle"),
    [
        ("ok", "passed", None),
        ("bad_hash", "escalated", "reviewed diff"),
        ("p1", "escalated", "P1 finding"),
        ("fake_line", "escalated", "made-up evidence"),
        ("uncertain", "escalated", "criterion uncertain"),
        ("prose", "unparseable", "did not return a JSON report"),
    ],
)
def test_self_review_report_is_checked(cli, repo, tmp_path, monkeypatch, variant, verdict, needle):
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, variant)
    review = res["review"]
    assert list(res)[:4] == ["id", "state", "verdict", "review"]  # the verdicts lead the result
    assert review["verdict"] == verdict, review
    gate = {g["code"]: g for g in res["gates"]}["SELF_REVIEW_ESCALATED"]
    assert gate["ok"], gate  # never a refusal: the worker graded itself
    if needle is None:
        assert code == 0 and res["state"] == "verified", res
        assert res["verdict"]["outcome"] == "landable"
        assert review["summary"] == "add() now adds; tests pass."
        assert review["escalate"] is False
        return
    assert code == 7 and res["state"] == "verified", res
    assert res["verdict"]["outcome"] == "needs_review"
    (reason,) = [r for r in res["verdict"]["reasons"] if r["code"] == "SELF_REVIEW_ESCALATED"]
    assert needle in reason["sentence"]
    assert review["escalate"] is True
    assert any(needle in r for r in review["reasons"]), review["reasons"]
    assert "src/calc.py:999 is out of range" in json.dumps(review) if variant == "fake_line" else True
    # approve without a person (no terminal, no --yes) waits, with the review's reasons...
    code, waiting = cli("approve", res["id"], "--json")
    assert code == 7 and waiting["error"]["code"] == "NEEDS_REVIEW", waiting
    assert needle in waiting["error"]["message"]
    assert "--yes" in waiting["error"]["hint"]
    # ...and a script's --yes lands it, recorded as the script's acknowledgment.
    code, out = cli("approve", res["id"], "--yes", "--json")
    assert code == 0 and out["state"] == "approved", out
    assert out["verdict"]["acknowledged"]["by"] == "script"
    assert "SELF_REVIEW_ESCALATED" in out["verdict"]["acknowledged"]["codes"]


def test_auto_approve_never_merges_an_escalated_run(cli, repo, tmp_path, monkeypatch):
    head = git(repo, "rev-parse", "HEAD")
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "p1", "--auto-approve")
    assert code == 7 and res["state"] == "verified", res
    assert res["merged_commit"] is None
    assert git(repo, "rev-parse", "HEAD") == head
    assert "return a - b  # bug" in (repo / "src" / "calc.py").read_text()


def test_a_parents_review_with_open_findings_refuses(cli, repo, tmp_path, monkeypatch):
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "p1")
    run_id = res["id"]
    blocking = tmp_path / "blocking.json"
    blocking.write_text(json.dumps({"verdict": "approve", "findings": [{"severity": "P1", "title": "still open"}]}))
    code, out = cli("approve", run_id, "--review", str(blocking), "--yes", "--json")
    assert code == 3 and out["error"]["code"] == "APPROVE_REFUSED", out
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({"verdict": "approve", "findings": [
        {"severity": "P1", "title": "overflow not handled", "status": "dismissed"}]}))
    code, out = cli("approve", run_id, "--review", str(clean), "--yes", "--json")
    assert code == 0 and out["state"] == "approved", out
    assert out["error"] is None


def test_show_leads_with_the_verdict_and_the_review(cli, repo, tmp_path, monkeypatch):
    code, res = _delegate(cli, repo, tmp_path, monkeypatch, "p1")
    code, text = cli("show", res["id"])
    lines = text.splitlines()
    assert code == 0  # show read the run; the verb that judged it exited 7
    assert lines[1] == "verdict: needs review (SELF_REVIEW_ESCALATED)", text
    assert lines[2].startswith("  - SELF_REVIEW_ESCALATED: the worker's self-review escalated"), text
    assert "self-review: ESCALATED - add() now adds; tests pass." in lines
    assert "P1 finding: \"overflow not handled\"" in text


def test_self_review_skipped_for_small_diffs_is_not_a_pass(cli, repo, task_file, monkeypatch):
    monkeypatch.setenv("REVIEW_VARIANT", "ok")
    _profile(repo, min_lines=50)
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "reviewed", "--json")
    assert code == 0 and res["state"] == "verified", res
    assert res["review"]["verdict"] == "skipped" and res["review"]["escalate"] is False
    assert "SELF_REVIEW_ESCALATED" not in {g["code"] for g in res["gates"]}  # no green row for a review never run
    code, text = cli("show", res["id"])
    assert "self-review: skipped (nothing was reviewed; not a pass)" in text
