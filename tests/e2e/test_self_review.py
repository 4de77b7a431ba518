"""Self-review: the report is validated, not trusted."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import WORKER, task_yaml


def _profile(repo, variant: str) -> None:
    text = (repo / "bosun.toml").read_text().replace('default_profile = "fix"', 'default_profile = "fix"\nself_review_min_diff_lines = 0')
    text += (
        f'\n[profiles.reviewed]\nadapter = "command"\nself_review = true\nenv = ["REVIEW_VARIANT"]\n'
        f'command = ["{sys.executable}", "{WORKER}", "reviewed"]\n'
    )
    (repo / "bosun.toml").write_text(text)


@pytest.mark.parametrize(
    ("variant", "escalate", "needle"),
    [("ok", False, None), ("bad_hash", True, "reviewed diff"), ("p1", True, "P1 finding"), ("fake_line", True, "made-up evidence")],
)
def test_self_review_report_is_checked(cli, repo, tmp_path, monkeypatch, variant, escalate, needle):
    monkeypatch.setenv("REVIEW_VARIANT", variant)
    _profile(repo, variant)
    task = task_yaml(tmp_path / "t.json", acceptance=["add() adds"])
    code, res = cli("delegate", str(task), "--repo", str(repo), "--profile", "reviewed", "--json")
    assert code == 0, res
    assert res["state"] == "verified"
    review = res["review"]
    assert review["escalate"] is escalate, review
    if needle:
        assert any(needle in r for r in review["reasons"]), review["reasons"]
    else:
        assert review["summary"] == "add() now adds; tests pass."


def test_self_review_skipped_for_small_diffs(cli, repo, task_file, monkeypatch):
    _profile(repo, "ok")
    text = (repo / "bosun.toml").read_text().replace("self_review_min_diff_lines = 0", "self_review_min_diff_lines = 50")
    (repo / "bosun.toml").write_text(text)
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "reviewed", "--json")
    assert code == 0 and "review" not in res
