"""Housekeeping and output a new user meets: gc collects refused and failed runs once nobody touched
them for a while (and says so before), discard takes several runs, approve/integrate/discard confirm
in a line, history snippets are one line, doctor says nothing is wrong with an adapter no profile
uses, and a plan event without a state reads without an empty one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import git, task_yaml

pytestmark = pytest.mark.slow


def test_gc_collects_refused_runs_after_stale_and_says_when_before(cli, repo, task_file):
    code, bad = cli("delegate", str(task_file), "--repo", str(repo), "--profile", "edit_locked", "--json")
    assert code == 3 and bad["state"] == "rejected", bad
    assert Path(bad["worktree"]).exists() and f"bosun/{bad['id']}" in git(repo, "branch", "--list", "bosun/*")
    code, out = cli("gc", "--dry-run", "--json")
    kept = [s for s in out["skipped"] if s["run_id"] == bad["id"]]
    assert kept and "rejected" in kept[0]["reason"] and f"bosun discard {bad['id']}" in kept[0]["reason"], out
    code, out = cli("gc", "--stale", "0", "--dry-run", "--json")
    kinds = {r["kind"] for r in out["removed"] if r["run_id"] == bad["id"]}
    assert kinds == {"worktree", "branch"}, out
    assert Path(bad["worktree"]).exists()  # a dry run removes nothing
    code, out = cli("gc", "--stale", "0", "--json")
    assert code == 0 and not Path(bad["worktree"]).exists(), out
    assert f"bosun/{bad['id']}" not in git(repo, "branch", "--list", "bosun/*")
    code, shown = cli("show", bad["id"], "--json")
    assert shown["state"] == "cleaned" and (Path(shown["run_dir"]) / "final.patch").is_file(), shown


def test_discard_several_runs_and_short_confirmations(cli, repo, task_file):
    code, one = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    code, two = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    code, out = cli("discard", one["id"], two["id"], "--json")
    assert code == 0 and out["count"] == 2 and {r["id"] for r in out["runs"]} == {one["id"], two["id"]}, out
    assert all(r["state"] == "cleaned" for r in out["runs"]) and out["failed"] == []
    code, res = cli("delegate", str(task_file), "--repo", str(repo), "--json")
    code, said = cli("approve", res["id"])
    assert code == 0 and said.splitlines() == [f"approved {res['id']} (landable)",
                                               f"next: bosun integrate {res['id']} lands it on main"], said
    code, said = cli("integrate", res["id"])
    assert code == 0 and len(said.splitlines()) == 2 and said.startswith(f"landed {res['id']} on main as commit "), said
    assert "gates:" not in said
    code, third = cli("prepare", str(task_file), "--repo", str(repo), "--json")
    code, said = cli("discard", third["id"])
    assert code == 0 and said.splitlines()[0].startswith(f"discarded {third['id']}") and "gates" not in said, said


def test_history_snippets_are_one_line(cli, repo, tmp_path):
    task = task_yaml(tmp_path / "t.json", prompt="add() subtracts.\nThe zebrafish\nsays: make it add.")
    cli("prepare", str(task), "--repo", str(repo), "--json")
    code, text = cli("history", "zebrafish")
    snippet = [ln for ln in text.splitlines() if "zebrafish" in ln.lower()]
    assert snippet and "says" in snippet[0], text


def test_doctor_says_an_adapter_no_profile_uses_is_not_used(cli, repo):
    code, text = cli("doctor", "--repo", str(repo))
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("remote"))
    assert "not used" in line and "not set up" not in line, line


def test_a_plan_event_without_a_state_reads_without_an_empty_one():
    from bosun.plans.events import describe

    said = describe({"kind": "plan", "state": None, "detail": "fixed plan applied: a", "at": time.time(),
                     "plan_id": "p", "id": 1})
    assert said.endswith("  plan: fixed plan applied: a"), said
